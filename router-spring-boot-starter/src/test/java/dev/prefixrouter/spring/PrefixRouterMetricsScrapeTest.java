package dev.prefixrouter.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BackendRegistry;
import dev.prefixrouter.api.KvEvent;
import dev.prefixrouter.api.RouteDecision;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.RouterSnapshot;
import dev.prefixrouter.api.RoutingEngine;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.support.StaticListableBeanFactory;

/** A scrape of the per-backend gauges takes one engine snapshot, not one per gauge. */
class PrefixRouterMetricsScrapeTest {

  @Test
  void oneScrapeOfEveryBackendGaugeInspectsTheEngineOnce() {
    RoutingEngine real = RoutingEngine.builder().build();
    for (int i = 0; i < 50; i++) {
      real.backends().add(Backend.of("b" + i, "m"));
    }
    AtomicInteger inspections = new AtomicInteger();
    RoutingEngine counting =
        new RoutingEngine() {
          @Override
          public RouteDecision route(RouteRequest request) {
            return real.route(request);
          }

          @Override
          public BackendRegistry backends() {
            return real.backends();
          }

          @Override
          public boolean applyKvEvents(String backendId, List<? extends KvEvent> batch) {
            return real.applyKvEvents(backendId, batch);
          }

          @Override
          public boolean applyPredicted(String backendId, long[] keys, int keyCount) {
            return real.applyPredicted(backendId, keys, keyCount);
          }

          @Override
          public RouterSnapshot inspect() {
            inspections.incrementAndGet();
            return real.inspect();
          }
        };
    PrefixRouterMetrics metrics =
        new PrefixRouterMetrics(
            new StaticListableBeanFactory(Map.of("engine", counting))
                .getBeanProvider(RoutingEngine.class),
            false);
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    metrics.bindTo(registry);
    inspections.set(0);

    java.util.Collection<Gauge> gauges = registry.find("prefixrouter.backend.inflight").gauges();
    assertThat(gauges).hasSize(50);
    double sum = 0;
    for (Gauge g : gauges) {
      sum += g.value();
    }
    for (Gauge g : registry.find("prefixrouter.backend.breaker").gauges()) {
      sum += g.value();
    }
    assertThat(sum).isZero();
    assertThat(inspections.get()).isLessThanOrEqualTo(2);
  }
}
