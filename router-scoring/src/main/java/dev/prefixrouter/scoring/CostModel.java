package dev.prefixrouter.scoring;

import dev.prefixrouter.api.spi.FirstTokenObservation;

/**
 * Online fit of one backend's TTFT coefficients from observed first tokens: recursive least squares
 * with exponential forgetting (tracks drift) and Huber weighting against a running residual scale
 * (robust to outliers), on the features
 *
 * <pre>
 * ttft_ms ≈ alpha + beta·(uncached + queuedPrefill) + gamma·uncached·(uncached + cached)
 *          + decode·runningDecodes
 * </pre>
 *
 * Features are scaled (tokens / 1e3, token² / 1e6) for conditioning. Fitted values are clamped to
 * the ranges of {@link TtftCoefficients} and used only after {@code minObservations}; until then
 * the configured defaults hold. Writers synchronize on the model; readers take the published
 * immutable {@link #current()} snapshot without locking.
 */
final class CostModel {
  private static final int N = 4;
  private static final double[] SCALE = {1.0, 1e-3, 1e-6, 1.0};

  private final TtftCoefficients defaults;
  private final double lambda;
  private final int minObservations;
  private final double[] theta = new double[N]; // in scaled units
  private final double[][] p = new double[N][N];
  private final double[] xScratch = new double[N];
  private final double[] pxScratch = new double[N];
  private double residualScale; // robust scale of |residual|, ms
  private long observations;
  private volatile TtftCoefficients current;

  CostModel(TtftCoefficients defaults, double forgetting, int minObservations) {
    this.defaults = defaults;
    this.lambda = forgetting;
    this.minObservations = minObservations;
    this.current = defaults;
    theta[0] = defaults.alphaMs();
    theta[1] = defaults.betaMsPerToken() / SCALE[1];
    theta[2] = defaults.gammaMsPerToken2() / SCALE[2];
    theta[3] = defaults.decodeMsPerRunning();
    double[] prior = {1e4, 1e4, 1e4, 1e2};
    for (int i = 0; i < N; i++) {
      p[i][i] = prior[i];
    }
    residualScale = 0;
  }

  TtftCoefficients current() {
    return current;
  }

  long observations() {
    return observations;
  }

  double residualScale() {
    return residualScale;
  }

  synchronized void observe(FirstTokenObservation o) {
    double y = o.ttftNanos() / 1e6;
    double u = Math.max(0, o.uncachedTokens());
    double c = Math.max(0, o.matchedTokens());
    double[] x = xScratch; // guarded by this (synchronized): no per-observation arrays
    x[0] = 1.0;
    x[1] = (u + o.queuedPrefillTokens()) * SCALE[1];
    x[2] = u * (u + c) * SCALE[2];
    x[3] = o.runningDecodes();
    if (!Double.isFinite(y) || y < 0) {
      return;
    }
    double predicted = dot(theta, x);
    double residual = y - predicted;
    // Huber weight against the running scale; the scale itself learns from clipped residuals
    double weight = 1.0;
    if (observations >= 10 && residualScale > 0) {
      double k = 3.0 * residualScale;
      if (Math.abs(residual) > k) {
        weight = k / Math.abs(residual);
      }
    }
    double clipped =
        Math.min(Math.abs(residual), residualScale > 0 ? 5 * residualScale : Math.abs(residual));
    residualScale = observations == 0 ? clipped : 0.95 * residualScale + 0.05 * clipped;

    // weighted RLS with forgetting: gain g = P x / (lambda/w + x' P x)
    double[] px = pxScratch;
    for (int i = 0; i < N; i++) {
      double s = 0;
      for (int j = 0; j < N; j++) {
        s += p[i][j] * x[j];
      }
      px[i] = s;
    }
    double denom = lambda / weight + dot(x, px);
    if (!(denom > 0) || !Double.isFinite(denom)) {
      return;
    }
    for (int i = 0; i < N; i++) {
      theta[i] += px[i] * residual / denom;
    }
    for (int i = 0; i < N; i++) {
      for (int j = 0; j < N; j++) {
        p[i][j] = (p[i][j] - px[i] * px[j] / denom) / lambda;
      }
    }
    // keep P bounded (no wind-up when a feature never varies)
    for (int i = 0; i < N; i++) {
      if (p[i][i] > 1e6) {
        double f = 1e6 / p[i][i];
        for (int j = 0; j < N; j++) {
          p[i][j] *= Math.sqrt(f);
          p[j][i] *= Math.sqrt(f);
        }
      }
    }
    observations++;
    if (observations >= minObservations) {
      current =
          new TtftCoefficients(
              clamp(theta[0], 0, 10_000),
              clamp(theta[1] * SCALE[1], 1e-6, 10),
              clamp(theta[2] * SCALE[2], 0, 1e-3),
              clamp(theta[3], 0, 1000),
              defaults.waitingMs());
    }
  }

  private static double dot(double[] a, double[] b) {
    double s = 0;
    for (int i = 0; i < a.length; i++) {
      s += a[i] * b[i];
    }
    return s;
  }

  private static double clamp(double v, double lo, double hi) {
    return Double.isNaN(v) ? lo : Math.max(lo, Math.min(hi, v));
  }
}
