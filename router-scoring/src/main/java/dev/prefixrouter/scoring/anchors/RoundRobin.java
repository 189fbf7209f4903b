package dev.prefixrouter.scoring.anchors;

import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Round robin, the load-only baseline of vLLM's production-stack router and of the Gateway API
 * Inference Extension benchmarks ("k8s-svc"): candidate {@code C[rr mod |C|]}, then {@code rr +=
 * 1}. Ignores prefix matches and load.
 *
 * <p>Cost of candidate {@code i} is its distance after the turn's start, so the ranking after rank
 * 0 continues the rotation. Name and reason: {@code round-robin}. Thread-safe (one atomic counter);
 * O(n log n) per {@code score} (one sort by cost).
 */
public final class RoundRobin implements Scorer {
  private final AtomicLong rr = new AtomicLong();

  /** A round robin starting at candidate 0. */
  public RoundRobin() {}

  @Override
  public String name() {
    return "round-robin";
  }

  @Override
  public void score(ScoringContext ctx) {
    int n = ctx.size();
    int start = (int) Math.floorMod(rr.getAndIncrement(), (long) n);
    for (int i = 0; i < n; i++) {
      ctx.setCost(i, Math.floorMod(i - start, n));
    }
    ctx.sortByCost(0);
    ctx.setReason("round-robin");
  }
}
