package dev.prefixrouter.spring;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BackendSnapshot;
import dev.prefixrouter.api.RouterSnapshot;
import dev.prefixrouter.api.RoutingEngine;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;

/**
 * Actuator endpoint {@code prefixrouter}: {@code GET} the engine snapshot or one backend ({@code
 * /actuator/prefixrouter/{id}}); {@code POST /actuator/prefixrouter/{id}} with {@code {"action":
 * "add" | "remove" | "drain" | "undrain", "models": [...], "capacityBlocks": n}} to change
 * membership at runtime.
 */
@Endpoint(id = "prefixrouter")
public class PrefixRouterEndpoint {
  private final RoutingEngine engine;

  public PrefixRouterEndpoint(RoutingEngine engine) {
    this.engine = engine;
  }

  @ReadOperation
  public RouterSnapshot snapshot() {
    return engine.inspect();
  }

  @ReadOperation
  public @Nullable BackendSnapshot backend(@Selector String id) {
    return engine.inspect().backend(id).orElse(null);
  }

  @WriteOperation
  public Map<String, Object> change(
      @Selector String id,
      String action,
      @Nullable List<String> models,
      @Nullable Long capacityBlocks) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("id", id);
    out.put("action", action);
    switch (action) {
      case "add" -> {
        if (models == null || models.isEmpty()) {
          throw new IllegalArgumentException("add needs models");
        }
        engine
            .backends()
            .add(
                new Backend(
                    id,
                    Set.copyOf(models),
                    Set.of(),
                    Map.of(),
                    capacityBlocks == null ? 0 : capacityBlocks,
                    1.0));
        out.put("result", "added");
      }
      case "remove" -> out.put("result", engine.backends().remove(id) ? "removed" : "absent");
      case "drain" -> {
        engine.backends().drain(id);
        out.put("result", "draining");
      }
      case "undrain" -> {
        engine.backends().undrain(id);
        out.put("result", "routable");
      }
      default ->
          throw new IllegalArgumentException(
              "action must be add, remove, drain or undrain, was '" + action + "'");
    }
    return out;
  }
}
