package dev.prefixrouter.api;

import java.util.Map;
import java.util.Objects;
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
 * @param loadAgeNanos age of the last load report now, or {@code -1} without one
 * @param lruAgeNanos how long ago the block the prefix index would evict next for this backend was
 *     used ({@link dev.prefixrouter.api.spi.PrefixIndex#lruAgeNanos}: its cache's turnover time,
 *     which the default scorer's cache pressure compares across backends), or {@link
 *     Long#MAX_VALUE} while the index's mirror of it has room or the index does not track recency
 * @param routed requests routed here since the backend was added
 * @param promptTokens prompt tokens routed here
 * @param matchedTokens of those, tokens the index believed cached here
 * @param costModel the scorer's parameters for this backend (e.g. fitted TTFT coefficients)
 */
public record BackendSnapshot(
    Backend backend,
    boolean draining,
    HealthState health,
    int inFlight,
    long pendingPrefillTokens,
    int runningDecodes,
    @Nullable LoadReport lastLoad,
    long loadAgeNanos,
    long lruAgeNanos,
    long routed,
    long promptTokens,
    long matchedTokens,
    Map<String, Double> costModel) {

  public BackendSnapshot {
    Objects.requireNonNull(backend, "backend");
    Objects.requireNonNull(health, "health");
    costModel = Map.copyOf(costModel);
  }

  public String id() {
    return backend.id();
  }

  /** Predicted prefix-hit ratio of requests routed here, in [0, 1] (0 before any request). */
  public double predictedHitRatio() {
    return promptTokens == 0 ? 0.0 : (double) matchedTokens / promptTokens;
  }
}
