package dev.prefixrouter.scoring.anchors;

import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Least request, as in SGLang's shortest-queue branch and AIBrix's {@code least-request}: {@code
 * argmin load(b)} over the router's own in-flight counts, ties rotated (a fixed index tie-break
 * sends every cold request to the first backend at low concurrency). Ignores prefix matches.
 *
 * <p>Cost is the in-flight count. Name and reason: {@code least-request}. Thread-safe (one atomic
 * counter); O(n log n) per {@code score} for the sort.
 */
public final class LeastRequest implements Scorer {
  private final AtomicLong rotation = new AtomicLong();

  /** A least-request scorer with rotating ties. */
  public LeastRequest() {}

  @Override
  public String name() {
    return "least-request";
  }

  @Override
  public void score(ScoringContext ctx) {
    for (int i = 0; i < ctx.size(); i++) {
      ctx.setCost(i, ctx.inFlight(i));
    }
    ctx.sortByCost((int) rotation.getAndIncrement());
    ctx.setReason("least-request");
  }
}
