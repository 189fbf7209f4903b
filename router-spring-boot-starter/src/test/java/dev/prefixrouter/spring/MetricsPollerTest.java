package dev.prefixrouter.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.LoadReport;
import dev.prefixrouter.api.RoutingEngine;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The poller against a fake vLLM /metrics on loopback. */
class MetricsPollerTest {
  private HttpServer server;

  private String serve(int status, String body) throws Exception {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext(
        "/metrics",
        ex -> {
          byte[] b = body.getBytes(StandardCharsets.UTF_8);
          ex.sendResponseHeaders(status, b.length);
          try (OutputStream o = ex.getResponseBody()) {
            o.write(b);
          }
        });
    server.start();
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  @AfterEach
  void stop() {
    if (server != null) {
      server.stop(0);
    }
  }

  @Test
  void feedsLoadReportsAndCapacity() throws Exception {
    String url =
        serve(
            200,
            "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 4\n"
                + "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 2\n"
                + "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.5\n"
                + "garbage line {\n"
                + "vllm:cache_config_info{engine=\"0\",num_gpu_blocks=\"1234\"} 1\n");
    RoutingEngine engine = RoutingEngine.builder().backend(Backend.of("b0", "m")).build();
    MetricsPoller poller =
        new MetricsPoller(
            engine, Map.of("b0", url)::get, Duration.ofSeconds(1), Duration.ofSeconds(2));
    poller.pollOnce();
    assertThat(engine.inspect().backend("b0").orElseThrow().lastLoad())
        .isEqualTo(LoadReport.of(4, 2, 0.5));
    assertThat(engine.backends().get("b0").orElseThrow().capacityBlocks()).isEqualTo(1234);
    MetricsPoller.Stats s = poller.stats().get("b0");
    assertThat(s.scrapes()).isEqualTo(1);
    assertThat(s.failures()).isZero();
    assertThat(s.malformedLines()).isEqualTo(1);
  }

  @Test
  void failuresAreCountedNeverThrown() throws Exception {
    String url = serve(503, "down");
    RoutingEngine engine =
        RoutingEngine.builder()
            .backend(Backend.of("b0", "m"))
            .backend(Backend.of("b1", "m"))
            .build();
    MetricsPoller poller =
        new MetricsPoller(
            engine,
            Map.of("b0", url, "b1", "http://127.0.0.1:1")::get,
            Duration.ofSeconds(1),
            Duration.ofMillis(500));
    poller.pollOnce();
    assertThat(poller.stats().get("b0").failures()).isEqualTo(1);
    assertThat(poller.stats().get("b0").lastError()).contains("HTTP 503");
    assertThat(poller.stats().get("b1").failures()).isEqualTo(1);
    assertThat(engine.inspect().backend("b0").orElseThrow().lastLoad()).isNull();
  }

  @Test
  void lifecycleStartsAndStops() throws Exception {
    String url = serve(200, "vllm:num_requests_running 1\n");
    RoutingEngine engine = RoutingEngine.builder().backend(Backend.of("b0", "m")).build();
    MetricsPoller poller =
        new MetricsPoller(
            engine, Map.of("b0", url)::get, Duration.ofMillis(20), Duration.ofSeconds(1));
    poller.start();
    assertThat(poller.isRunning()).isTrue();
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (engine.inspect().backend("b0").orElseThrow().lastLoad() == null
        && System.nanoTime() < deadline) {
      Thread.onSpinWait();
    }
    poller.stop();
    assertThat(poller.isRunning()).isFalse();
    assertThat(engine.inspect().backend("b0").orElseThrow().lastLoad()).isNotNull();
  }
}
