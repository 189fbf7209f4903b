package dev.prefixrouter.scoring.anchors;

import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The published Python gateway's estimated-TTFT rule ({@code vikask3906/llm-inference}), in ms:
 *
 * <pre>{@code
 * for b in candidates:
 *   if inFlight(b) > maxInflight: skip b (remember the least-loaded skipped one)
 *   est(b) = prefillMsPerToken × max(0, promptTokens - matchedTokens(b))
 *            + serviceMsPerRequest × inFlight(b)
 * none scored → the least-loaded skipped backend (affinity ignored)
 * good = { b : est(b) <= min est + bandMs }
 * tied = { b in good : inFlight(b) = min inFlight over good }
 * pick = tied[rr mod |tied|]; rr += 1
 * }</pre>
 *
 * The gateway also skips unhealthy peers and KV usage above 0.90; health is the engine's filter
 * here, and the gateway never updates its KV input, so that test is inert and left out. Two
 * constant sets are published: the gateway's shipped defaults ({@link #shipped()}: 0.05 ms/token,
 * 200 ms/request, 64 in flight, band 5 ms) and the constants its benchmarks were calibrated with
 * ({@link #calibrated()}: 0.05, 1, 24, 2).
 *
 * <p>Costs are the estimates in ms ({@code +∞} for a skipped backend; in-flight counts when every
 * backend is skipped), but this scorer gives no {@code estimatedTtftNanos}, so SLO admission admits
 * whatever it ranks first. Name and reason: the name given. Thread-safe (one atomic counter); O(n
 * log n) per {@code score}, allocating one {@code int[n]}.
 */
public final class GatewayEstTtft implements Scorer {
  private final String name;
  private final double prefillMsPerToken;
  private final double serviceMsPerRequest;
  private final int maxInflight;
  private final double bandMs;
  private final AtomicLong rr = new AtomicLong();

  /**
   * @param name the scorer's name, not blank
   * @param prefillMsPerToken ms per uncached prompt token, finite and &ge; 0
   * @param serviceMsPerRequest ms per request in flight, finite and &ge; 0
   * @param maxInflight in-flight count above which a backend is skipped, &ge; 0
   * @param bandMs equivalence band above the best estimate, finite and &ge; 0
   * @throws IllegalArgumentException naming the parameter and value when one is out of range
   */
  public GatewayEstTtft(
      String name,
      double prefillMsPerToken,
      double serviceMsPerRequest,
      int maxInflight,
      double bandMs) {
    if (name.isBlank()) {
      throw new IllegalArgumentException("name must not be blank, was '" + name + "'");
    }
    if (maxInflight < 0) {
      throw new IllegalArgumentException("maxInflight must be >= 0, was " + maxInflight);
    }
    this.name = name;
    this.prefillMsPerToken = Ranking.nonNegative("prefillMsPerToken", prefillMsPerToken);
    this.serviceMsPerRequest = Ranking.nonNegative("serviceMsPerRequest", serviceMsPerRequest);
    this.maxInflight = maxInflight;
    this.bandMs = Ranking.nonNegative("bandMs", bandMs);
  }

  /** The gateway's shipped defaults, named {@code gateway-shipped}. */
  public static GatewayEstTtft shipped() {
    return new GatewayEstTtft("gateway-shipped", 0.05, 200, 64, 5);
  }

  /** The constants the gateway's benchmarks used, named {@code gateway-calibrated}. */
  public static GatewayEstTtft calibrated() {
    return new GatewayEstTtft("gateway-calibrated", 0.05, 1, 24, 2);
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public void score(ScoringContext ctx) {
    int n = ctx.size();
    double best = Double.POSITIVE_INFINITY;
    int fallback = -1;
    for (int i = 0; i < n; i++) {
      int load = ctx.inFlight(i);
      if (load > maxInflight) {
        if (fallback < 0 || load < ctx.inFlight(fallback)) {
          fallback = i;
        }
        ctx.setCost(i, Double.POSITIVE_INFINITY);
        continue;
      }
      double est =
          prefillMsPerToken * Math.max(0, ctx.promptTokens() - ctx.matchedTokens(i))
              + serviceMsPerRequest * load;
      ctx.setCost(i, est);
      best = Math.min(best, est);
    }
    long turn = rr.getAndIncrement();
    if (best == Double.POSITIVE_INFINITY) {
      // every backend saturated: least in-flight, affinity ignored
      for (int i = 0; i < n; i++) {
        ctx.setCost(i, ctx.inFlight(i));
      }
      Ranking.chooseFirst(ctx, fallback, 0);
      ctx.setReason(name + ": all saturated → least in-flight");
      return;
    }
    int minLoad = Integer.MAX_VALUE;
    int good = 0;
    for (int i = 0; i < n; i++) {
      if (ctx.cost(i) <= best + bandMs) {
        minLoad = Math.min(minLoad, ctx.inFlight(i));
      }
    }
    int[] tied = new int[n];
    for (int i = 0; i < n; i++) {
      if (ctx.cost(i) <= best + bandMs && ctx.inFlight(i) == minLoad) {
        tied[good++] = i;
      }
    }
    int pick = tied[(int) Math.floorMod(turn, (long) good)];
    Ranking.chooseFirst(ctx, pick, 0);
    ctx.setReason(name);
  }
}
