package dev.prefixrouter.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.vllm.MetricsPoller;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** The poller of router-vllm wired from {@code prefix-router.poller.*}, against a real server. */
class MetricsPollerAutoConfigurationTest {
  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(
              AutoConfigurations.of(
                  PrefixRouterAutoConfiguration.class, MetricsPollerAutoConfiguration.class))
          .withBean(MeterRegistry.class, SimpleMeterRegistry::new);

  private HttpServer server;
  private String url;

  @BeforeEach
  void serve() throws Exception {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext(
        "/metrics",
        ex -> {
          byte[] b = "vllm:num_requests_running 3\n".getBytes(StandardCharsets.UTF_8);
          ex.sendResponseHeaders(200, b.length);
          try (OutputStream o = ex.getResponseBody()) {
            o.write(b);
          }
        });
    server.start();
    url = "http://127.0.0.1:" + server.getAddress().getPort();
  }

  @AfterEach
  void stop() {
    server.stop(0);
  }

  @Test
  void offByDefault() {
    runner.run(ctx -> assertThat(ctx).hasNotFailed().doesNotHaveBean(MetricsPoller.class));
  }

  @Test
  void pollsTheConfiguredBackendsAndExportsItsHealth() {
    runner
        .withPropertyValues(
            "prefix-router.backends[0].id=b0",
            "prefix-router.backends[0].url=" + url,
            "prefix-router.backends[0].models=m",
            "prefix-router.poller.enabled=true",
            "prefix-router.poller.interval=20ms",
            // failures are asserted zero: the first scrape on a loaded host must not time out
            "prefix-router.poller.timeout=10s")
        .run(
            ctx -> {
              MetricsPoller poller = ctx.getBean(MetricsPoller.class);
              assertThat(poller.isRunning()).isTrue();
              RoutingEngine engine = ctx.getBean(RoutingEngine.class);
              long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
              while (engine.inspect().backend("b0").orElseThrow().lastLoad() == null
                  && System.nanoTime() < deadline) {
                Thread.sleep(5);
              }
              assertThat(engine.inspect().backend("b0").orElseThrow().lastLoad().running())
                  .isEqualTo(3);
              MeterRegistry r = new SimpleMeterRegistry();
              ctx.getBean("prefixRouterMetricsPollerMeters", MeterBinder.class).bindTo(r);
              assertThat(r.get("prefixrouter.poller.scrapes").functionCounter().count())
                  .isPositive();
              assertThat(r.get("prefixrouter.poller.failures").functionCounter().count()).isZero();
              assertThat(r.get("prefixrouter.poller.unreachable").gauge().value()).isZero();
              assertThat(r.get("prefixrouter.poller.staleness").gauge().value()).isNotNegative();
            });
  }

  @Test
  void badPropertiesNameTheProperty() {
    runner
        .withPropertyValues(
            "prefix-router.poller.enabled=true", "prefix-router.poller.unreachable-after=-1s")
        .run(
            ctx ->
                assertThat(ctx.getStartupFailure())
                    .hasStackTraceContaining("prefix-router.poller.unreachable-after")
                    .hasStackTraceContaining("must be in [0 ms, 3600000 ms]"));
  }

  @Test
  void withoutRouterVllmThePropertyFailsStartup() {
    runner
        .withClassLoader(new FilteredClassLoader(MetricsPoller.class))
        .withPropertyValues("prefix-router.poller.enabled=true")
        .run(
            ctx ->
                assertThat(ctx.getStartupFailure())
                    .hasStackTraceContaining("prefix-router.poller.enabled")
                    .hasStackTraceContaining("needs router-vllm"));
  }
}
