package dev.prefixrouter.api;

import java.time.Duration;
import java.util.Objects;

/**
 * A time-to-first-token objective the capacity planner sizes each model's pool for: "the {@code
 * percentile} of TTFT at most {@code ttft}". Set on {@link RoutingEngineBuilder#capacityObjective};
 * {@link RoutingEngine#inspect()} then carries one {@link CapacityPlan} per model.
 *
 * @param ttft the objective, in (0, 1 h]
 * @param percentile in [0.5, 0.9999], e.g. 0.95 for p95
 * @param window how far back arrival rates and token counts are measured, in [1 s, 24 h]
 * @param fallbackAlphaMs fixed prefill cost per request, in ms, used for backends whose scorer
 *     publishes no prefill coefficients (see {@link CapacityPlan}); in [0, 10000]
 * @param fallbackBetaMsPerToken prefill cost per uncached prompt token, in ms, for the same
 *     backends; in (0, 10]
 */
public record CapacityObjective(
    Duration ttft,
    double percentile,
    Duration window,
    double fallbackAlphaMs,
    double fallbackBetaMsPerToken) {

  /** The default measurement window: one minute. */
  public static final Duration DEFAULT_WINDOW = Duration.ofMinutes(1);

  public CapacityObjective {
    Objects.requireNonNull(ttft, "ttft");
    Objects.requireNonNull(window, "window");
    if (ttft.isNegative() || ttft.isZero() || ttft.compareTo(Duration.ofHours(1)) > 0) {
      throw new IllegalArgumentException("ttft must be in (0, 1 h], was " + ttft);
    }
    if (!(percentile >= 0.5 && percentile <= 0.9999)) {
      throw new IllegalArgumentException("percentile must be in [0.5, 0.9999], was " + percentile);
    }
    if (window.compareTo(Duration.ofSeconds(1)) < 0 || window.compareTo(Duration.ofHours(24)) > 0) {
      throw new IllegalArgumentException("window must be in [1 s, 24 h], was " + window);
    }
    if (!(fallbackAlphaMs >= 0 && fallbackAlphaMs <= 10_000)) {
      throw new IllegalArgumentException(
          "fallbackAlphaMs must be in [0, 10000], was " + fallbackAlphaMs);
    }
    if (!(fallbackBetaMsPerToken > 0 && fallbackBetaMsPerToken <= 10)) {
      throw new IllegalArgumentException(
          "fallbackBetaMsPerToken must be in (0, 10], was " + fallbackBetaMsPerToken);
    }
  }

  /**
   * An objective with a one-minute window and the fallback prefill model of a Llama-3.1-8B on one
   * H100 (6 ms per request, 17.25 µs per uncached token).
   */
  public static CapacityObjective ttft(Duration ttft, double percentile) {
    return new CapacityObjective(ttft, percentile, DEFAULT_WINDOW, 6.0, 0.01725);
  }

  public CapacityObjective withWindow(Duration window) {
    return new CapacityObjective(ttft, percentile, window, fallbackAlphaMs, fallbackBetaMsPerToken);
  }

  public CapacityObjective withFallbackPrefill(double alphaMs, double betaMsPerToken) {
    return new CapacityObjective(ttft, percentile, window, alphaMs, betaMsPerToken);
  }
}
