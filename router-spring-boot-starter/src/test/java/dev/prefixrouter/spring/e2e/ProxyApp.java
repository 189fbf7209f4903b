package dev.prefixrouter.spring.e2e;

import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.Rejected;
import dev.prefixrouter.api.RouteDecision;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.spring.PrefixRouterProperties;
import dev.prefixrouter.vllm.OpenAiRequest;
import dev.prefixrouter.vllm.OpenAiRequestException;
import dev.prefixrouter.vllm.OpenAiRequestReader;
import jakarta.servlet.http.HttpServletResponse;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/** A minimal gateway: routes /v1/chat/completions through the engine and streams the answer. */
@SpringBootApplication
public class ProxyApp {

  @RestController
  static class Proxy {
    private final RoutingEngine engine;
    private final Map<String, String> urls = new HashMap<>();
    private final OpenAiRequestReader reader = OpenAiRequestReader.defaults();
    private final HttpClient client =
        HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    Proxy(RoutingEngine engine, PrefixRouterProperties props) {
      this.engine = engine;
      props.getBackends().forEach(b -> urls.put(b.getId(), b.getUrl()));
    }

    @PostMapping("/v1/chat/completions")
    void chat(
        @RequestBody byte[] body,
        @RequestHeader(name = "X-Tenant", required = false) String tenant,
        HttpServletResponse response)
        throws Exception {
      OpenAiRequest req;
      try {
        req = reader.read(body, tenant);
      } catch (OpenAiRequestException e) {
        response.sendError(400, e.getMessage());
        return;
      }
      RouteDecision d = engine.route(req.routeRequest());
      while (true) {
        if (d instanceof Rejected x) {
          if (!x.retryAfter().isZero()) {
            response.setHeader(
                "Retry-After",
                Long.toString(Math.max(1, (x.retryAfter().toMillis() + 999) / 1000)));
          }
          response.sendError(x.reason().name().equals("RATE_LIMITED") ? 429 : 503, x.message());
          return;
        }
        Routed r = (Routed) d;
        HttpResponse<InputStream> up;
        try {
          up =
              client.send(
                  HttpRequest.newBuilder(
                          URI.create(urls.get(r.backendId()) + "/v1/chat/completions"))
                      .POST(HttpRequest.BodyPublishers.ofByteArray(body))
                      .build(),
                  HttpResponse.BodyHandlers.ofInputStream());
        } catch (java.io.IOException e) {
          r.lease().fail(Failure.of(Failure.Kind.CONNECT)); // before the first byte: fail over
          d = r.lease().failover();
          continue;
        }
        response.setHeader("X-Backend", r.backendId());
        response.setContentType("text/event-stream");
        try (InputStream in = up.body();
            OutputStream out = response.getOutputStream()) {
          byte[] buf = new byte[8192];
          int n;
          boolean first = true;
          while ((n = in.read(buf)) > 0) {
            if (first) {
              r.lease().firstToken();
              first = false;
            }
            out.write(buf, 0, n);
            out.flush();
          }
        }
        r.lease().complete(Usage.of(r.promptTokens(), 3));
        return;
      }
    }
  }
}
