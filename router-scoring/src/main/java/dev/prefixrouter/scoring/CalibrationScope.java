package dev.prefixrouter.scoring;

/** Whose observed first tokens the est-TTFT calibration fits coefficients from. */
public enum CalibrationScope {
  /** One fit per backend (each from its own first tokens). */
  BACKEND,
  /** One fit for the whole fleet (every backend's first tokens), used for every backend. */
  FLEET,
  /**
   * The fleet's fit for every backend, except a backend whose own fit predicts its first tokens
   * better than the fleet's by the calibration advantage (a slower or faster GPU in a mixed fleet).
   */
  HIERARCHICAL,
  /**
   * The fleet's fit for the shape of the cost, times one speed factor per backend learned from its
   * own first tokens and shrunk toward 1 by its evidence (see {@code
   * EstimatedTtftScorer.Builder#speedShrinkage}): a mixed fleet learns one number per backend
   * instead of four, so a fleet of equal GPUs gets the fleet's fit and a slower GPU its speed. The
   * factors learn only while the fleet's first tokens carry a prefix signal, and the scaled
   * coefficients stay within the calibration band around the priors.
   */
  FLEET_SCALED,
  /**
   * The fleet's fit moved toward a backend's own fit by the evidence behind it: {@code fleet + w ·
   * (own − fleet)} with {@code w = n / (n + k)}, where {@code n} counts the backend's own first
   * tokens, each decaying by the forgetting factor at every first token of the fleet (so a backend
   * that gets no traffic drifts back to the fleet's fit instead of keeping a stale fit that starves
   * it) and {@code k} is {@code EstimatedTtftScorer.Builder#backendShrinkage}. A backend's own fit
   * counts only while published (enough observations, a prefix signal).
   */
  SHRUNK,
  /**
   * The fleet's fit for every backend, its whole estimate times a speed factor per backend that is
   * exactly 1 unless the backend's <em>idle-start</em> first tokens (routed while it had no prefill
   * queued) show a speed that differs from the fleet's idle-start speed by a margin and
   * significantly (see {@code EstimatedTtftScorer.Builder#speedMargin}). On equal GPUs backends
   * differ by the queueing each absorbed, which idle starts do not carry; a slower GPU is slower on
   * idle starts too. As with FLEET_SCALED, speeds learn only while the fleet's first tokens carry a
   * prefix signal, and the scaled coefficients stay within the calibration band around the priors.
   */
  IDLE_SPEED;

  /** Whether a per-backend speed factor scales the fleet's fit. */
  boolean scalesFleetFit() {
    return this == FLEET_SCALED || this == IDLE_SPEED;
  }
}
