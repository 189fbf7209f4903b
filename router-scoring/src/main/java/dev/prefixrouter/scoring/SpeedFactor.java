package dev.prefixrouter.scoring;

/**
 * One backend's speed relative to the fleet's fit ({@link CalibrationScope#FLEET_SCALED}): the
 * factor {@code s} in
 *
 * <pre>
 * ttft_ms − α_fleet ≈ s · (β·(uncached + queued) + γ·uncached·total + decode·running)_fleet
 * </pre>
 *
 * fitted by weighted least squares through the origin with exponential forgetting and a Huber
 * weight against a running residual scale ({@link RobustScale}, with its warm-up bound), then
 * shrunk toward 1 by its evidence (credibility weighting): {@code s = (n·ŝ + k) / (n + k)}, where
 * {@code ŝ} is the least-squares factor, {@code n} the forgotten weight of the observations and
 * {@code k} the shrinkage in observations. That is the minimiser of the squared error plus {@code
 * k} pseudo-observations at factor 1, so a backend with few first tokens keeps the fleet's fit and
 * one with many gets its own speed. The factor stays within {@code [1/band, band]}.
 *
 * <p>One parameter per backend instead of a full fit: on a fleet of equal GPUs the factors stay
 * near 1 (little noise between backends), on a mixed fleet the slower ones learn their factor.
 *
 * <p>Writers synchronize on the instance; {@link #factor()} is a volatile read. O(1) and no
 * allocation per observation.
 */
final class SpeedFactor {
  private final double lambda;
  private final double shrinkage;
  private final double band;
  private double sw; // forgotten weight of the observations
  private double sxx; // forgotten weighted Σ x²
  private double sxy; // forgotten weighted Σ x·y
  private final RobustScale scale = new RobustScale(); // guarded by this
  private long observations;
  private volatile double factor = 1.0;

  /**
   * @param forgetting the weight of an observation one observation later, in (0, 1]
   * @param shrinkage pseudo-observations at factor 1, {@code >= 0}
   * @param band the factor's bound, {@code >= 1}
   */
  SpeedFactor(double forgetting, double shrinkage, double band) {
    this.lambda = forgetting;
    this.shrinkage = shrinkage;
    this.band = band;
  }

  /** The published factor (1 until observations move it). */
  double factor() {
    return factor;
  }

  synchronized long observations() {
    return observations;
  }

  /**
   * Learns from one first token.
   *
   * @param variableMs the fleet fit's variable estimate for the request, ms
   * @param excessMs the observed TTFT minus the fleet fit's constant, ms
   */
  synchronized void observe(double variableMs, double excessMs) {
    if (!(variableMs > 0) || !Double.isFinite(variableMs) || !Double.isFinite(excessMs)) {
      return; // carries nothing about the speed (no variable part) or is not a number
    }
    double predicted = factor * variableMs;
    double residual = excessMs - predicted;
    double weight = scale.weigh(residual, predicted, observations);
    sw = lambda * sw + weight;
    sxx = lambda * sxx + weight * variableMs * variableMs;
    sxy = lambda * sxy + weight * variableMs * excessMs;
    observations++;
    double raw = sxy / sxx;
    double s = (sw * raw + shrinkage) / (sw + shrinkage);
    factor = Double.isFinite(s) ? Math.max(1 / band, Math.min(band, s)) : 1.0;
  }
}
