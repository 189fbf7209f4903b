package dev.prefixrouter.spring;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BackendSnapshot;
import dev.prefixrouter.api.RouterSnapshot;
import dev.prefixrouter.api.RoutingEngine;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.Access;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;

/**
 * Actuator endpoint {@code prefixrouter}: {@code GET} the engine snapshot or one backend ({@code
 * /actuator/prefixrouter/{id}}, 404 if unknown); {@code POST /actuator/prefixrouter/{id}} with
 * {@code {"action": "add" | "remove" | "drain" | "undrain", "models": "m1,m2", "capacityBlocks": n,
 * "url": "http://10.0.0.5:8000"}} to change membership at runtime. The optional {@code url} of an
 * {@code add} is the backend's base URL (kept in {@link BackendUrls}): with it the metrics poller
 * scrapes the new backend and precise mode subscribes to its KV events; {@code remove} forgets it.
 * {@code models} is a comma-separated string; a JSON array of strings is accepted too (Spring joins
 * it with commas).
 *
 * <p>Answers: 200 with {@code {id, action, result}}; 400 with {@code {error}} for an unknown
 * action, a missing field or an invalid backend; 404 for an unknown id (remove, drain, undrain);
 * 409 for {@code add} of an id that exists (remove it first; {@code add} never overwrites a
 * backend's capabilities, capacity or weight).
 *
 * <p><b>Access.</b> Read-only by default: the write operation is available only with {@code
 * management.endpoint.prefixrouter.access=unrestricted}, and should then be behind authentication
 * (see the README). Changes made through this endpoint are serialized with each other.
 */
@Endpoint(id = "prefixrouter", defaultAccess = Access.READ_ONLY)
public class PrefixRouterEndpoint {
  private static final int STATUS_CONFLICT = 409;
  private final RoutingEngine engine;
  private final BackendUrls urls;

  public PrefixRouterEndpoint(RoutingEngine engine, BackendUrls urls) {
    this.engine = engine;
    this.urls = urls;
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
  public synchronized WebEndpointResponse<Map<String, Object>> change(
      @Selector String id,
      String action,
      @Nullable String models,
      @Nullable Long capacityBlocks,
      @Nullable String url) {
    String result;
    try {
      switch (action) {
        case "add" -> {
          Set<String> served = models(models);
          if (engine.backends().get(id).isPresent()) {
            return error(
                STATUS_CONFLICT,
                "backend '" + clip(id) + "' exists; remove it first to replace it");
          }
          Backend backend =
              new Backend(
                  id, served, Set.of(), Map.of(), capacityBlocks == null ? 0 : capacityBlocks, 1.0);
          if (url != null) {
            urls.put(id, url); // before the add: the add's listeners look it up
          }
          try {
            engine.backends().add(backend);
          } catch (RuntimeException e) {
            urls.remove(id);
            throw e;
          }
          result = "added";
        }
        case "remove" -> {
          if (!engine.backends().remove(id)) {
            return notFound(id);
          }
          urls.remove(id);
          result = "removed";
        }
        case "drain" -> {
          engine.backends().drain(id);
          result = "draining";
        }
        case "undrain" -> {
          engine.backends().undrain(id);
          result = "routable";
        }
        default ->
            throw new IllegalArgumentException(
                "action must be add, remove, drain or undrain, was '" + clip(action) + "'");
      }
    } catch (NoSuchElementException e) {
      return notFound(id);
    } catch (IllegalArgumentException | IllegalStateException e) {
      return error(WebEndpointResponse.STATUS_BAD_REQUEST, e.getMessage());
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("id", id);
    out.put("action", action);
    out.put("result", result);
    return new WebEndpointResponse<>(out, WebEndpointResponse.STATUS_OK);
  }

  /** The models of an {@code add}: a comma-separated string (a JSON array arrives joined). */
  private static Set<String> models(@Nullable String models) {
    Set<String> served = new LinkedHashSet<>();
    if (models != null) {
      for (String m : models.split(",", -1)) {
        if (!m.isBlank()) {
          served.add(m.strip());
        }
      }
    }
    if (served.isEmpty()) {
      throw new IllegalArgumentException(
          "add needs models: a comma-separated string such as \"models\": \"m1,m2\"");
    }
    return served;
  }

  /** Most characters of a caller's value echoed in an answer. */
  static final int MAX_ECHO = 128;

  private static String clip(String s) {
    return s.length() <= MAX_ECHO ? s : s.substring(0, MAX_ECHO) + "...";
  }

  private static WebEndpointResponse<Map<String, Object>> notFound(String id) {
    return error(WebEndpointResponse.STATUS_NOT_FOUND, "no backend '" + clip(id) + "'");
  }

  private static WebEndpointResponse<Map<String, Object>> error(int status, @Nullable String msg) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("status", status);
    out.put("error", msg == null ? "invalid request" : msg);
    return new WebEndpointResponse<>(out, status);
  }
}
