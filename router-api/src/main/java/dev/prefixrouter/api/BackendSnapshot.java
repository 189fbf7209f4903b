package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.IndexSignal;
import dev.prefixrouter.api.spi.PrefixIndex;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import org.jspecify.annotations.Nullable;

/**
 * State of one backend at {@link RoutingEngine#inspect()} time.
 *
 * @param backend the descriptor
 * @param draining whether new requests are kept away
 * @param health circuit-breaker state
 * @param inFlight leases not yet ended
 * @param pendingPrefillTokens uncached prompt tokens sent and not yet past their first token
 * @param runningDecodes leases past their first token and not yet ended
 * @param lastLoad the last load report, or {@code null}
 * @param loadAgeNanos age of the last load report now in nanoseconds, or {@code null} without one
 * @param indexSignals what the prefix index believes about this backend's cache ({@link
 *     PrefixIndex#signal}), present signals only, in each signal's unit; empty when the index
 *     reports none
 * @param routed requests routed here since the backend was added
 * @param promptTokens prompt tokens routed here
 * @param matchedTokens of those, tokens the index believed cached here when each was routed ({@link
 *     Routed#indexMatchedTokens()} summed: a scorer's discount for prefixes still being prefilled,
 *     {@link Routed#matchedTokens()}, is not counted)
 * @param costModel the scorer's parameters for this backend (e.g. fitted TTFT coefficients)
 * @param cacheAccuracy the engine's reported cached tokens against the router's predictions
 */
public record BackendSnapshot(
    Backend backend,
    boolean draining,
    HealthState health,
    int inFlight,
    long pendingPrefillTokens,
    int runningDecodes,
    @Nullable LoadReport lastLoad,
    @Nullable Long loadAgeNanos,
    Map<IndexSignal, Long> indexSignals,
    long routed,
    long promptTokens,
    long matchedTokens,
    Map<String, Double> costModel,
    CacheAccuracy cacheAccuracy) {

  public BackendSnapshot {
    Objects.requireNonNull(backend, "backend");
    Objects.requireNonNull(health, "health");
    Objects.requireNonNull(cacheAccuracy, "cacheAccuracy");
    costModel = Map.copyOf(costModel);
    indexSignals = Map.copyOf(indexSignals);
  }

  /**
   * The index's {@link IndexSignal#LRU_AGE_NANOS} for this backend (its cache's turnover time),
   * empty while the cache has room or the index does not track recency.
   */
  public OptionalLong lruAgeNanos() {
    Long age = indexSignals.get(IndexSignal.LRU_AGE_NANOS);
    return age == null ? OptionalLong.empty() : OptionalLong.of(age);
  }

  public String id() {
    return backend.id();
  }

  /**
   * Predicted prefix-hit ratio of requests routed here, {@link #matchedTokens} over {@link
   * #promptTokens}, in [0, 1] (0 before any request).
   */
  public double predictedHitRatio() {
    return promptTokens == 0 ? 0.0 : (double) matchedTokens / promptTokens;
  }
}
