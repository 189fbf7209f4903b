package dev.prefixrouter.spring;

import dev.prefixrouter.api.BackendSnapshot;
import dev.prefixrouter.api.HealthState;
import dev.prefixrouter.api.RouterSnapshot;
import dev.prefixrouter.api.RoutingEngine;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/**
 * UP while every configured model has at least one routable backend (registered, not draining,
 * circuit not open); DOWN otherwise, with routable counts per model and each backend's state.
 */
public class PrefixRouterHealthIndicator implements HealthIndicator {
  private final RoutingEngine engine;
  private final Set<String> models;

  /**
   * @param models the models that must stay routable (those of the configured backends)
   */
  public PrefixRouterHealthIndicator(RoutingEngine engine, Set<String> models) {
    this.engine = engine;
    this.models = Set.copyOf(models);
  }

  @Override
  public Health health() {
    RouterSnapshot s = engine.inspect();
    Map<String, Integer> routable = new TreeMap<>();
    models.forEach(m -> routable.put(m, 0));
    Map<String, String> backends = new LinkedHashMap<>();
    for (BackendSnapshot b : s.backends()) {
      boolean ok = !b.draining() && b.health() != HealthState.OPEN;
      backends.put(b.id(), b.draining() ? "DRAINING" : b.health().name());
      if (ok) {
        for (String m : b.backend().models()) {
          routable.merge(m, 1, Integer::sum);
        }
      }
    }
    boolean up =
        routable.entrySet().stream()
            .filter(e -> models.contains(e.getKey()))
            .allMatch(e -> e.getValue() > 0);
    Health.Builder h = up ? Health.up() : Health.down();
    return h.withDetail("routableBackendsPerModel", routable)
        .withDetail("backends", backends)
        .build();
  }
}
