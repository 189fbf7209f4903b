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
