package dev.prefixrouter.api;

/**
 * How well the router's cache beliefs for one backend matched the engine's own count: each
 * completion whose {@link Usage#cachedReported()} compares the engine's {@link
 * Usage#cachedTokens()} with the tokens the router's index matched there when it routed the request
 * (its {@link Routed#matchedTokens()} before a scorer's {@link
 * dev.prefixrouter.api.spi.Scorer#cachedTokens} discount for prefixes still being prefilled), both
 * capped at the tokens an engine can serve from cache (the full blocks before the prompt's last
 * token, which the engine always computes). Counts since the backend was added; all {@code >= 0}.
 *
 * @param reports completions that carried the engine's count
 * @param predictedTokens the router's predicted cached tokens, summed over those
 * @param engineCachedTokens the engine's cached tokens, summed over those
 * @param overPredicted reports where the engine held fewer tokens than predicted
 * @param overPredictedTokens predicted minus engine tokens, summed over those
 * @param staleTokens of {@code overPredictedTokens}, the tokens that requests still prefilling on
 *     the backend when the request was routed could not have been bringing: beliefs the engine had
 *     evicted or never kept (what the prefix index is told to correct)
 * @param underPredicted reports where the engine held more tokens than predicted
 * @param underPredictedTokens engine minus predicted tokens, summed over those
 */
public record CacheAccuracy(
    long reports,
    long predictedTokens,
    long engineCachedTokens,
    long overPredicted,
    long overPredictedTokens,
    long staleTokens,
    long underPredicted,
    long underPredictedTokens) {

  /** No report yet. */
  public static final CacheAccuracy NONE = new CacheAccuracy(0, 0, 0, 0, 0, 0, 0, 0);

  public CacheAccuracy {
    if (reports < 0
        || predictedTokens < 0
        || engineCachedTokens < 0
        || overPredicted < 0
        || overPredictedTokens < 0
        || staleTokens < 0
        || underPredicted < 0
        || underPredictedTokens < 0) {
      throw new IllegalArgumentException("counts must be >= 0");
    }
  }

  /** Reports where the engine held exactly what was predicted. */
  public long exact() {
    return Math.max(0, reports - overPredicted - underPredicted); // adders read one by one
  }

  /**
   * Mean absolute prediction error per report, in tokens ({@code (over + under) / reports}; 0
   * before any report).
   */
  public double meanAbsoluteErrorTokens() {
    return reports == 0 ? 0.0 : (double) (overPredictedTokens + underPredictedTokens) / reports;
  }
}
