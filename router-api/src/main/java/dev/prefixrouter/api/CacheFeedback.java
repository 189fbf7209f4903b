package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.PrefixIndex;
import java.util.concurrent.atomic.LongAdder;

/**
 * Closes the loop for one backend: compares the engine's cached count of a completed request with
 * what the router predicted, counts the error ({@link CacheAccuracy}) and tells the prefix index
 * ({@link PrefixIndex#onEngineCached}). Thread-safe (adders); O(1) per report, never on the routing
 * path.
 */
final class CacheFeedback {
  private final LongAdder reports = new LongAdder();
  private final LongAdder predictedTokens = new LongAdder();
  private final LongAdder engineCachedTokens = new LongAdder();
  private final LongAdder overPredicted = new LongAdder();
  private final LongAdder overPredictedTokens = new LongAdder();
  private final LongAdder staleTokens = new LongAdder();
  private final LongAdder underPredicted = new LongAdder();
  private final LongAdder underPredictedTokens = new LongAdder();

  /**
   * Prompt tokens an engine can serve from its cache: the full blocks before the prompt's last
   * token (it always computes that token to produce the first output), 0 for an empty prompt.
   */
  static int cacheableTokens(int promptTokens, int tokensPerBlock) {
    return promptTokens <= 0 ? 0 : ((promptTokens - 1) / tokensPerBlock) * tokensPerBlock;
  }

  /**
   * Counts one report and returns whether the index should hear of it (the engine disagreed with
   * the prediction by at least a block).
   *
   * @param promptTokens the prompt's tokens (the smaller of the router's and the engine's count)
   * @param matchedTokens tokens the router predicted cached at routing time
   * @param cachedTokens tokens the engine reported cached
   * @param inFlightTokens uncached tokens other requests were still prefilling on the backend at
   *     routing time
   * @param tokensPerBlock the hasher's tokens per block
   * @param out the three block counts for the index: predicted, engine, in flight
   */
  boolean record(
      int promptTokens,
      int matchedTokens,
      int cachedTokens,
      long inFlightTokens,
      int tokensPerBlock,
      int[] out) {
    int cacheable = cacheableTokens(promptTokens, tokensPerBlock);
    int predicted = Math.min(matchedTokens, cacheable);
    int engine = Math.min(cachedTokens, cacheable);
    reports.increment();
    predictedTokens.add(predicted);
    engineCachedTokens.add(engine);
    if (predicted > engine) {
      int over = predicted - engine;
      overPredicted.increment();
      overPredictedTokens.add(over);
      long stale = over - Math.max(0, inFlightTokens);
      if (stale > 0) {
        staleTokens.add(stale);
      }
    } else if (engine > predicted) {
      underPredicted.increment();
      underPredictedTokens.add(engine - predicted);
    }
    out[0] = predicted / tokensPerBlock;
    out[1] = engine / tokensPerBlock;
    long inFlightBlocks = (Math.max(0, inFlightTokens) + tokensPerBlock - 1) / tokensPerBlock;
    out[2] = (int) Math.min(Integer.MAX_VALUE, inFlightBlocks);
    return out[0] != out[1];
  }

  CacheAccuracy snapshot() {
    return new CacheAccuracy(
        reports.sum(),
        predictedTokens.sum(),
        engineCachedTokens.sum(),
        overPredicted.sum(),
        overPredictedTokens.sum(),
        staleTokens.sum(),
        underPredicted.sum(),
        underPredictedTokens.sum());
  }
}
