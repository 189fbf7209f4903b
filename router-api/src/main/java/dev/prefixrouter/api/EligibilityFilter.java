package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.HealthPolicy;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The hard filters that build the candidate set, in the order they apply. When the set ends up
 * empty, {@link Rejected#emptiedBy()} names the filter that removed the last candidates. Each
 * constant owns its rule and the message of the rejection it causes.
 */
public enum EligibilityFilter {
  /** No registered backend serves the (resolved) model. */
  MODEL,
  /** Every backend serving the model is draining. */
  DRAINING,
  /** Every remaining backend is unhealthy (circuit open, or half-open with no probe left). */
  HEALTH,
  /** No remaining backend has every required capability. */
  CAPABILITY,
  /** No remaining backend carries every required label. */
  LABEL,
  /** Every remaining backend already failed for this request (failover). */
  EXCLUDED,
  /**
   * Every ranked backend was removed from the engine while the request was being scored. Applies
   * after scoring, when the engine places the request, not while it builds the candidate set.
   */
  REMOVED;

  /**
   * Whether this filter keeps {@code e} out of the candidates of a request for {@code model}. O(1)
   * except {@link #CAPABILITY}, {@link #LABEL} and {@link #EXCLUDED}, linear in what they compare.
   */
  boolean rejects(
      BackendEntry e,
      String model,
      RouteRequest r,
      List<BackendEntry> excluded,
      HealthPolicy health,
      long nowNanos) {
    Backend b = e.backend;
    return switch (this) {
      case MODEL -> !b.serves(model);
      case DRAINING -> e.draining;
      case HEALTH -> health.state(e.slot, nowNanos) == HealthState.OPEN;
      case CAPABILITY ->
          !r.requiredCapabilities().isEmpty()
              && !b.capabilities().containsAll(r.requiredCapabilities());
      case LABEL -> !hasLabels(b, r.requiredLabels());
      case EXCLUDED -> contains(excluded, e);
      case REMOVED -> e.removed;
    };
  }

  /**
   * The first of {@link #MODEL}, {@link #DRAINING} and {@link #HEALTH} that rejects {@code e}, or
   * null: the same answer as asking each in turn with {@link #rejects}, without the other filters,
   * which cannot reject anything for a request that requires no capability or label and excludes no
   * backend. O(1).
   */
  static @Nullable EligibilityFilter firstFleetFilter(
      BackendEntry e, String model, HealthPolicy health, long nowNanos) {
    if (!e.backend.serves(model)) {
      return MODEL;
    }
    if (e.draining) {
      return DRAINING;
    }
    return health.state(e.slot, nowNanos) == HealthState.OPEN ? HEALTH : null;
  }

  /** The message of a rejection whose candidate set this filter emptied. */
  String message(String model) {
    String m = Bounds.echo(model);
    return switch (this) {
      case MODEL -> "no backend serves model '" + m + "'";
      case DRAINING -> "every backend serving '" + m + "' is draining";
      case HEALTH ->
          "every backend serving '"
              + m
              + "' is unhealthy (circuit open or out of half-open probes)";
      case CAPABILITY -> "no healthy backend serving '" + m + "' has the required capabilities";
      case LABEL -> "no healthy backend serving '" + m + "' carries the required labels";
      case EXCLUDED -> "every eligible backend for '" + m + "' already failed this request";
      case REMOVED -> "every ranked backend for '" + m + "' was removed while it was scored";
    };
  }

  private static boolean hasLabels(Backend b, Map<String, String> required) {
    if (required.isEmpty()) {
      return true;
    }
    for (Map.Entry<String, String> l : required.entrySet()) {
      if (!l.getValue().equals(b.labels().get(l.getKey()))) {
        return false;
      }
    }
    return true;
  }

  private static boolean contains(List<BackendEntry> excluded, BackendEntry e) {
    for (int i = 0; i < excluded.size(); i++) {
      if (excluded.get(i) == e) {
        return true;
      }
    }
    return false;
  }
}
