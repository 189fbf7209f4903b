package dev.prefixrouter.gateway;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.RoutingEngine;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;

/**
 * {@code GET /v1/models}: the models the registered backends serve (draining ones included: they
 * still serve what they hold), in OpenAI's list shape, sorted by id. With API keys configured it
 * needs a valid key like the other routes. Cost: one pass over the backends.
 */
final class ModelsHandler {
  private final RoutingEngine engine;
  private final ApiKeys keys;

  ModelsHandler(RoutingEngine engine, ApiKeys keys) {
    this.engine = engine;
    this.keys = keys;
  }

  Mono<ServerResponse> handle(ServerRequest request) {
    if (keys.enabled()
        && keys.tenant(request.headers().firstHeader(HttpHeaders.AUTHORIZATION)) == null) {
      Map<String, Object> error = new LinkedHashMap<>();
      error.put("message", "missing or unknown API key (Authorization: Bearer <key>)");
      error.put("type", "invalid_request_error");
      error.put("param", null);
      error.put("code", "invalid_api_key");
      return ServerResponse.status(401)
          .contentType(MediaType.APPLICATION_JSON)
          .bodyValue(Map.of("error", error));
    }
    TreeSet<String> models = new TreeSet<>();
    for (Backend b : engine.backends().all()) {
      models.addAll(b.models());
    }
    List<Map<String, Object>> data = new ArrayList<>();
    for (String m : models) {
      Map<String, Object> e = new LinkedHashMap<>();
      e.put("id", m);
      e.put("object", "model");
      e.put("created", 0);
      e.put("owned_by", "prefix-router");
      data.add(e);
    }
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("object", "list");
    body.put("data", data);
    return ServerResponse.ok().contentType(MediaType.APPLICATION_JSON).bodyValue(body);
  }
}
