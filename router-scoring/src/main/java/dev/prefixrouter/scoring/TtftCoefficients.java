package dev.prefixrouter.scoring;

import dev.prefixrouter.api.spi.ScoringContext;

/**
 * Coefficients of the time-to-first-token model, in milliseconds:
 *
 * <pre>
 * prefill(u, c) = alpha + beta·u + gamma·u·(u + c)          u uncached, c cached prompt tokens
 * queue         = beta·(queued prefill tokens) + decode·(running decodes) + waitingMs·(waiting)
 * </pre>
 *
 * Defaults from a Llama-3.1-8B / H100 step-time fit (vLLM): 6 ms per step overhead, 17.25 µs per
 * uncached prompt token, an attention term that adds ~13 % at 8k tokens, 0.5 ms per running decode
 * sharing the batch, and 10 ms per request the engine reports waiting beyond the router's own (a
 * larger value makes stale queue reports move cached prefixes around; measured in the simulator).
 *
 * @param alphaMs fixed cost per prefill, [0, 10000]
 * @param betaMsPerToken per uncached prompt token, [1e-6, 10]
 * @param gammaMsPerToken2 attention term per uncached × total token, [0, 1e-3]
 * @param decodeMsPerRunning queue cost of one running decode, [0, 1000]
 * @param waitingMs queue cost of one request the engine reports waiting, [0, 100000]
 */
public record TtftCoefficients(
    double alphaMs,
    double betaMsPerToken,
    double gammaMsPerToken2,
    double decodeMsPerRunning,
    double waitingMs) {

  public static final TtftCoefficients DEFAULTS =
      new TtftCoefficients(6.0, 0.01725, 2.8e-7, 0.5, 10.0);

  public TtftCoefficients {
    check("alphaMs", alphaMs, 0, 10_000);
    check("betaMsPerToken", betaMsPerToken, 1e-6, 10);
    check("gammaMsPerToken2", gammaMsPerToken2, 0, 1e-3);
    check("decodeMsPerRunning", decodeMsPerRunning, 0, 1000);
    check("waitingMs", waitingMs, 0, 100_000);
  }

  /**
   * Coefficients with each value held within its range (a value a speed factor scaled past a bound
   * shows at the bound), for reports: never throws for finite input.
   */
  static TtftCoefficients clamped(
      double alphaMs,
      double betaMsPerToken,
      double gammaMsPerToken2,
      double decodeMsPerRunning,
      double waitingMs) {
    return new TtftCoefficients(
        clamp(alphaMs, 0, 10_000),
        clamp(betaMsPerToken, 1e-6, 10),
        clamp(gammaMsPerToken2, 0, 1e-3),
        clamp(decodeMsPerRunning, 0, 1000),
        clamp(waitingMs, 0, 100_000));
  }

  private static double clamp(double v, double min, double max) {
    return v >= min ? Math.min(v, max) : min; // NaN: the lower bound
  }

  private static void check(String name, double v, double min, double max) {
    if (!(v >= min && v <= max)) {
      throw new IllegalArgumentException(name + " must be in [" + min + ", " + max + "], was " + v);
    }
  }

  /** Prefill time of {@code uncached} tokens after {@code cached} ones. */
  public double prefillMs(double uncached, double cached) {
    return alphaMs + betaMsPerToken * uncached + gammaMsPerToken2 * uncached * (uncached + cached);
  }

  /**
   * The routed request's prefill on {@code candidate} in ms at these coefficients: its prompt
   * tokens after the candidate's matched ones, divided by the backend's weight (the recent prefill
   * load the future-wait and extra-work terms keep per backend).
   */
  double routedPrefillMs(ScoringContext ctx, int candidate) {
    double matched = ctx.matchedTokens(candidate);
    double uncached = Math.max(0, ctx.promptTokens() - matched);
    return prefillMs(uncached, matched) / ctx.backend(candidate).weight();
  }
}
