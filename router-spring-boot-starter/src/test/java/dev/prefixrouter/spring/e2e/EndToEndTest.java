package dev.prefixrouter.spring.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.RoutingEngine;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A real web application on a random loopback port using the starter, a proxy controller, and three
 * backends: two fake vLLMs and one dead port.
 */
class EndToEndTest {
  private static FakeVllm b0;
  private static FakeVllm b1;
  private static String deadUrl;
  private static ConfigurableApplicationContext app;
  private static String base;
  private static final HttpClient http = HttpClient.newHttpClient();

  @BeforeAll
  static void start() throws Exception {
    b0 = new FakeVllm("b0");
    b1 = new FakeVllm("b1");
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      deadUrl = "http://127.0.0.1:" + s.getLocalPort(); // closed again: connection refused
    }
    List<String> props = new ArrayList<>();
    props.add("server.port=0");
    props.add("server.address=127.0.0.1");
    props.add("management.endpoints.web.exposure.include=prefixrouter,health");
    props.add("management.endpoint.prefixrouter.access=unrestricted");
    props.add("prefix-router.backends[0].id=b0");
    props.add("prefix-router.backends[0].url=" + b0.url());
    props.add("prefix-router.backends[0].models=m");
    props.add("prefix-router.backends[1].id=b1");
    props.add("prefix-router.backends[1].url=" + b1.url());
    props.add("prefix-router.backends[1].models=m");
    props.add("prefix-router.backends[2].id=dead");
    props.add("prefix-router.backends[2].url=" + deadUrl);
    props.add("prefix-router.backends[2].models=m");
    props.add("prefix-router.limiter.tenants.tiny=3000");
    props.add("prefix-router.poller.enabled=true");
    props.add("prefix-router.poller.interval=100ms");
    app =
        new SpringApplicationBuilder(ProxyApp.class).properties(props.toArray(new String[0])).run();
    base = "http://127.0.0.1:" + app.getEnvironment().getProperty("local.server.port");
  }

  @AfterAll
  static void stop() {
    if (app != null) {
      app.close();
    }
    b0.close();
    b1.close();
  }

  private static HttpResponse<String> chat(String tenant, String system, String user)
      throws Exception {
    String body =
        "{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"system\",\"content\":\""
            + system
            + "\"},{\"role\":\"user\",\"content\":\""
            + user
            + "\"}]}";
    return http.send(
        HttpRequest.newBuilder(URI.create(base + "/v1/chat/completions"))
            .header("Content-Type", "application/json")
            .header("X-Tenant", tenant)
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static String system(int n) {
    return ("You are assistant number " + n + ". ").repeat(80);
  }

  @Test
  void routesFailsOverLimitsDrainsAndMeters() throws Exception {
    // every request is answered, the dead backend's share failed over before the first byte
    for (int i = 0; i < 6; i++) {
      HttpResponse<String> r = chat("acme", system(i), "hello " + i);
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.body()).contains("data: [DONE]");
      assertThat(r.headers().firstValue("X-Backend"))
          .hasValueSatisfying(b -> assertThat(b).isIn("b0", "b1"));
    }
    RoutingEngine engine = app.getBean(RoutingEngine.class);
    assertThat(engine.inspect().failovers())
        .as("requests sent to the dead port failed over")
        .isPositive();

    // repeated prefixes go to the same backend
    String holder =
        chat("acme", system(100), "first").headers().firstValue("X-Backend").orElseThrow();
    for (int i = 0; i < 4; i++) {
      assertThat(chat("acme", system(100), "again " + i).headers().firstValue("X-Backend"))
          .hasValue(holder);
    }

    // a tenant over quota gets 429 with Retry-After
    // (each request: ~540 prompt tokens + 256 reserved output; the quota is 3000 tokens/minute)
    HttpResponse<String> ok = chat("tiny", system(7), "q");
    assertThat(ok.statusCode()).isEqualTo(200);
    HttpResponse<String> limited = null;
    for (int i = 0; i < 20 && (limited == null || limited.statusCode() != 429); i++) {
      limited = chat("tiny", system(7), "q" + i);
    }
    assertThat(limited.statusCode()).isEqualTo(429);
    assertThat(limited.headers().firstValue("Retry-After")).isPresent();

    // a backend drained through the actuator receives nothing new
    HttpResponse<String> drain =
        http.send(
            HttpRequest.newBuilder(URI.create(base + "/actuator/prefixrouter/" + holder))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"action\":\"drain\"}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(drain.statusCode()).as(drain.body()).isEqualTo(200);
    FakeVllm drained = holder.equals("b0") ? b0 : b1;
    int before = drained.completions.get();
    for (int i = 0; i < 4; i++) {
      assertThat(chat("acme", system(100), "after drain " + i).statusCode()).isEqualTo(200);
    }
    assertThat(drained.completions.get()).isEqualTo(before);
    HttpResponse<String> snapshot =
        http.send(
            HttpRequest.newBuilder(URI.create(base + "/actuator/prefixrouter")).build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(snapshot.statusCode()).isEqualTo(200);
    assertThat(snapshot.body()).contains("\"draining\":true");

    // the meters are there
    MeterRegistry registry = app.getBean(MeterRegistry.class);
    assertThat(registry.get("prefixrouter.decisions").tag("outcome", "routed").counter().count())
        .isGreaterThanOrEqualTo(15);
    assertThat(
            registry.get("prefixrouter.rejections").tag("reason", "RATE_LIMITED").counter().count())
        .isPositive();
    assertThat(registry.get("prefixrouter.failures").tag("backend", "dead").counter().count())
        .isPositive();
    assertThat(registry.get("prefixrouter.ttft.observed").timers()).isNotEmpty();
  }
}
