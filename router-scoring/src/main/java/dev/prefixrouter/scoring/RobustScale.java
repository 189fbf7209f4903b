package dev.prefixrouter.scoring;

/**
 * The outlier weighting the online fits share ({@link CostModel}, {@link SpeedFactor}, {@link
 * IdleSpeed}): a Huber weight against a running robust scale of the residuals, which itself learns
 * from clipped residuals. Before ten observations a residual beyond the warm-up bound (a cold
 * start, a stall: {@value #WARMUP_FACTOR} times the prediction, at least {@value #WARMUP_FLOOR_MS}
 * ms) is weighted down against that bound, and the scale starts from the bound at most: weighted 1,
 * one 30 s first token against a 35 ms estimate seeded the scale with itself and held a fit back
 * for hundreds of observations.
 *
 * <p>Not thread-safe: guarded by its owner's lock. O(1), no allocation.
 */
final class RobustScale {
  /** Warm-up bound on a residual (before ten observations): this many times the prediction ... */
  static final double WARMUP_FACTOR = 10;

  /** ... and at least this many milliseconds. */
  static final double WARMUP_FLOOR_MS = 1_000;

  private double scale; // robust scale of |residual|, ms

  /**
   * The weight of one observation's residual, in (0, 1], and the scale updated with it.
   *
   * @param residual observed minus predicted, ms
   * @param predicted the prediction, ms
   * @param observations observations before this one
   */
  double weigh(double residual, double predicted, long observations) {
    double abs = Math.abs(residual);
    double warmup = Math.max(WARMUP_FLOOR_MS, WARMUP_FACTOR * Math.abs(predicted));
    double weight = 1.0;
    if (observations >= 10 && scale > 0) {
      double k = 3.0 * scale;
      if (abs > k) {
        weight = k / abs;
      }
    } else if (abs > warmup) {
      weight = warmup / abs;
    }
    double clipped = Math.min(abs, scale > 0 ? 5 * scale : warmup);
    scale = observations == 0 ? clipped : 0.95 * scale + 0.05 * clipped;
    return weight;
  }

  /** The current scale, ms (0 before any observation). */
  double value() {
    return scale;
  }
}
