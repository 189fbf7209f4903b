package dev.prefixrouter.scoring;

/**
 * Speed evidence from idle-start first tokens ({@link CalibrationScope#IDLE_SPEED}): the slope
 * {@code ŝ} in
 *
 * <pre>
 * ttft_ms ≈ ŝ · (α + β·uncached + γ·uncached·total + decode·running)_fleet
 * </pre>
 *
 * (the fleet fit's whole estimate: a slower GPU's steps, their fixed part included, are slower)
 * over first tokens routed while the backend had no prefill queued, by weighted least squares
 * through the origin with exponential forgetting and a Huber weight against a running residual
 * scale ({@link RobustScale}, with its warm-up bound), and the slope's variance from the forgotten
 * residual sum of squares. One instance per backend and one for the whole fleet (every backend's
 * idle-start first tokens).
 *
 * <p>A backend's published {@link #factor()} is its slope over the fleet's, {@code ŝ_b / ŝ_fleet},
 * but only while the two differ by both a relative margin and a significance test ({@code |ŝ_b −
 * ŝ_fleet| ≥ z·sqrt(var_b + var_fleet)}); otherwise exactly 1, so that a fleet of equal GPUs is
 * priced with one fit. Idle-start first tokens carry no queueing, so what distinguishes equal
 * backends is noise, which the test rejects, while a slower GPU is slower on them too. Hysteresis:
 * once on, the factor stays until the difference falls below half the margin or {@code z − 1}.
 *
 * <p>Writers synchronize on the instance; {@link #factor()} is a volatile read. O(1) and no
 * allocation per observation.
 */
final class IdleSpeed {
  private final double lambda;
  private final double margin; // ln(1 + relative margin)
  private final double z;
  private final double minEvidence;
  private final double band;
  private double sw; // forgotten weight of the observations
  private double sxx;
  private double sxy;
  private double syy;
  private final RobustScale scale = new RobustScale(); // guarded by this
  private long observations;
  private boolean on;
  private volatile double factor = 1.0;

  /**
   * @param forgetting the weight of an observation one observation later, in (0, 1]
   * @param margin the relative speed difference to publish, {@code > 0} (0.25: 25 %)
   * @param z the significance of the difference to publish, in standard errors
   * @param minEvidence forgotten observations needed before the test runs
   * @param band the factor's bound, {@code >= 1}
   */
  IdleSpeed(double forgetting, double margin, double z, double minEvidence, double band) {
    this.lambda = forgetting;
    this.margin = Math.log1p(margin);
    this.z = z;
    this.minEvidence = minEvidence;
    this.band = band;
  }

  /** The published factor over the fleet's fit (1 unless a speed difference is established). */
  double factor() {
    return factor;
  }

  synchronized long observations() {
    return observations;
  }

  /**
   * Learns from one idle-start first token.
   *
   * @param estimateMs the fleet fit's estimate for the request, ms
   * @param observedMs the observed TTFT, ms
   */
  synchronized void observe(double estimateMs, double observedMs) {
    if (!(estimateMs > 0) || !Double.isFinite(estimateMs) || !Double.isFinite(observedMs)) {
      return;
    }
    double variableMs = estimateMs;
    double excessMs = observedMs;
    double slope = sxx > 0 ? sxy / sxx : 1.0;
    double predicted = slope * variableMs;
    double residual = excessMs - predicted;
    double weight = scale.weigh(residual, predicted, observations);
    sw = lambda * sw + weight;
    sxx = lambda * sxx + weight * variableMs * variableMs;
    sxy = lambda * sxy + weight * variableMs * excessMs;
    syy = lambda * syy + weight * excessMs * excessMs;
    observations++;
  }

  /**
   * Copies the slope and its variance into {@code out[0..2)} (NaN slope before any evidence or
   * below the minimum evidence).
   */
  synchronized void slopeInto(double[] out) {
    if (!(sxx > 0) || sw < minEvidence) {
      out[0] = Double.NaN;
      out[1] = Double.NaN;
      return;
    }
    double s = sxy / sxx;
    double rss = Math.max(0, syy - sxy * s);
    out[0] = s;
    out[1] = rss / Math.max(1, sw - 1) / sxx;
  }

  /**
   * Re-tests this backend's slope against the fleet's and publishes the factor.
   *
   * @param fleetSlope the fleet's slope (NaN: no evidence yet)
   * @param fleetVariance its variance
   */
  synchronized void test(double fleetSlope, double fleetVariance) {
    if (!(sxx > 0) || sw < minEvidence || !(fleetSlope > 0)) {
      return; // keeps the factor it has
    }
    double s = sxy / sxx;
    if (!(s > 0)) {
      on = false;
      factor = 1.0;
      return;
    }
    double rss = Math.max(0, syy - sxy * s);
    double variance = rss / Math.max(1, sw - 1) / sxx;
    double se = Math.sqrt(variance + Math.max(0, fleetVariance));
    double diff = Math.abs(s - fleetSlope);
    double logRatio = Math.abs(Math.log(s / fleetSlope));
    on = on ? logRatio >= margin / 2 && diff >= (z - 1) * se : logRatio >= margin && diff >= z * se;
    factor = on ? Math.max(1 / band, Math.min(band, s / fleetSlope)) : 1.0;
  }
}
