package dev.prefixrouter.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

class ActuatorAndMetricsTest {
  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(PrefixRouterAutoConfiguration.class))
          .withPropertyValues(
              "prefix-router.backends[0].id=b0",
              "prefix-router.backends[0].models=m",
              "prefix-router.backends[1].id=b1",
              "prefix-router.backends[1].models=m");

  private static Routed route(RoutingEngine e) {
    return (Routed)
        e.route(RouteRequest.builder("t", "m").prompt(Prompt.ofTokens(new int[32])).build());
  }

  @Test
  void endpointReadsAndChangesMembership() {
    runner.run(
        ctx -> {
          PrefixRouterEndpoint ep = ctx.getBean(PrefixRouterEndpoint.class);
          RoutingEngine engine = ctx.getBean(RoutingEngine.class);
          assertThat(ep.snapshot().backends()).hasSize(2);
          assertThat(ep.backend("b0")).isNotNull();
          assertThat(ep.backend("nope")).isNull();
          assertThat(ep.change("b1", "drain", null, null, null).getBody())
              .containsEntry("result", "draining");
          for (int i = 0; i < 5; i++) {
            assertThat(route(engine).backendId()).isEqualTo("b0");
          }
          ep.change("b1", "undrain", null, null, null);
          ep.change("b2", "add", "m", 500L, null);
          assertThat(engine.backends().get("b2").orElseThrow().capacityBlocks()).isEqualTo(500);
          assertThat(ep.change("b2", "remove", null, null, null).getBody())
              .containsEntry("result", "removed");
          var explode = ep.change("b0", "explode", null, null, null);
          assertThat(explode.getStatus()).isEqualTo(400);
          assertThat(explode.getBody().get("error").toString()).contains("action must be");
          var noModels = ep.change("b3", "add", null, null, null);
          assertThat(noModels.getStatus()).isEqualTo(400);
          assertThat(noModels.getBody().get("error").toString()).contains("add needs models");
          BackendUrls urls = ctx.getBean(BackendUrls.class);
          ep.change("b4", "add", "m", null, "http://10.0.0.9:8000");
          assertThat(urls.get("b4")).isEqualTo("http://10.0.0.9:8000");
          ep.change("b4", "remove", null, null, null);
          assertThat(urls.get("b4")).isNull();
          var badUrl = ep.change("b5", "add", "m", null, "ftp://10.0.0.9:8000");
          assertThat(badUrl.getStatus()).isEqualTo(400);
          assertThat(badUrl.getBody().get("error").toString()).contains("absolute http(s) URL");
          assertThat(engine.backends().get("b5")).isEmpty();
        });
  }

  @Test
  void healthIsUpWhileEveryModelHasARoutableBackend() {
    runner.run(
        ctx -> {
          HealthIndicator h = ctx.getBean(PrefixRouterHealthIndicator.class);
          RoutingEngine engine = ctx.getBean(RoutingEngine.class);
          assertThat(h.health().getStatus()).isEqualTo(Status.UP);
          engine.backends().drain("b0");
          assertThat(h.health().getStatus()).isEqualTo(Status.UP);
          engine.backends().drain("b1");
          assertThat(h.health().getStatus()).isEqualTo(Status.DOWN);
          assertThat(h.health().getDetails()).containsKey("routableBackendsPerModel");
        });
  }

  @Test
  void metersCountDecisionsAndFollowBackends() {
    runner.run(
        ctx -> {
          MeterRegistry registry = new SimpleMeterRegistry();
          ctx.getBean(PrefixRouterMetrics.class).bindTo(registry);
          RoutingEngine engine = ctx.getBean(RoutingEngine.class);
          Routed r = route(engine);
          r.lease().firstToken();
          r.lease().fail(Failure.of(Failure.Kind.ENGINE_ERROR));
          engine.route(RouteRequest.builder("t", "unknown").build());
          assertThat(
                  registry.get("prefixrouter.decisions").tag("outcome", "routed").counter().count())
              .isEqualTo(1);
          assertThat(
                  registry
                      .get("prefixrouter.rejections")
                      .tag("reason", "NO_ELIGIBLE_BACKEND")
                      .counter()
                      .count())
              .isEqualTo(1);
          assertThat(registry.get("prefixrouter.ttft.observed").timer().count()).isEqualTo(1);
          assertThat(
                  registry
                      .get("prefixrouter.backend.inflight")
                      .tag("backend", "b0")
                      .gauge()
                      .value())
              .isZero();
          assertThat(
                  registry.get("prefixrouter.backend.lru.age").tag("backend", "b0").gauge().value())
              .as("the index's mirror has room")
              .isNaN();
          assertThat(registry.find("prefixrouter.decisions").tag("tenant", "t").counter()).isNull();
          engine.backends().remove(r.backendId());
          assertThat(
                  registry
                      .find("prefixrouter.backend.inflight")
                      .tag("backend", r.backendId())
                      .gauge())
              .as("meters of a removed backend are removed")
              .isNull();
          assertThat(
                  registry
                      .find("prefixrouter.backend.lru.age")
                      .tag("backend", r.backendId())
                      .gauge())
              .isNull();
        });
  }

  @Test
  void enginesCachedCountsAgainstPredictionsAreMetered() {
    runner
        .withPropertyValues("prefix-router.index.capacity-feedback=true")
        .run(
            ctx -> {
              MeterRegistry registry = new SimpleMeterRegistry();
              ctx.getBean(PrefixRouterMetrics.class).bindTo(registry);
              RoutingEngine engine = ctx.getBean(RoutingEngine.class);
              Routed first = route(engine); // nothing believed yet; 32 tokens, 2 blocks
              first.lease().complete(new Usage(32, 1, 0));
              engine.backends().drain(first.backendId().equals("b0") ? "b1" : "b0");
              Routed second = route(engine); // believed: the first block (the last is recomputed)
              assertThat(second.backendId()).isEqualTo(first.backendId());
              assertThat(second.matchedTokens()).isEqualTo(32);
              second.lease().complete(new Usage(32, 1, 0)); // the engine held nothing
              String id = second.backendId();
              assertThat(registry.get("prefixrouter.backend.cache.reports").tag("backend", id))
                  .satisfies(m -> assertThat(m.functionCounter().count()).isEqualTo(2));
              assertThat(mispredicted(registry, "", id, "over")).isEqualTo(1);
              assertThat(mispredicted(registry, "", id, "under")).isZero();
              assertThat(mispredicted(registry, ".tokens", id, "over")).isEqualTo(16);
              assertThat(mispredicted(registry, ".tokens", id, "stale")).isEqualTo(16);
              assertThat(capacity(registry, id))
                  .as("the index models a smaller cache after a stale belief")
                  .isPositive()
                  .isLessThan(capacity(registry, first.backendId().equals("b0") ? "b1" : "b0"));
            });
  }

  private static double mispredicted(
      MeterRegistry registry, String suffix, String backend, String direction) {
    return registry
        .get("prefixrouter.backend.cache.mispredicted" + suffix)
        .tag("backend", backend)
        .tag("direction", direction)
        .functionCounter()
        .count();
  }

  private static double capacity(MeterRegistry registry, String backend) {
    return registry
        .get("prefixrouter.backend.cache.capacity")
        .tag("backend", backend)
        .gauge()
        .value();
  }

  @Test
  void capacityPlanIsInTheSnapshotAndItsGaugesOnlyWhenAnObjectiveIsSet() {
    runner.run(
        ctx -> {
          MeterRegistry registry = new SimpleMeterRegistry();
          ctx.getBean(PrefixRouterMetrics.class).bindTo(registry);
          assertThat(ctx.getBean(PrefixRouterEndpoint.class).snapshot().capacity()).isEmpty();
          assertThat(registry.find("prefixrouter.capacity.recommended").gauge()).isNull();
        });
    runner
        .withPropertyValues(
            "prefix-router.capacity.ttft=500ms",
            "prefix-router.capacity.percentile=0.99",
            "prefix-router.capacity.window=30s")
        .run(
            ctx -> {
              MeterRegistry registry = new SimpleMeterRegistry();
              ctx.getBean(PrefixRouterMetrics.class).bindTo(registry);
              RoutingEngine engine = ctx.getBean(RoutingEngine.class);
              Thread.sleep(20);
              for (int i = 0; i < 5; i++) {
                route(engine).lease().complete(new dev.prefixrouter.api.Usage(32, 1, 0));
              }
              var plan =
                  ctx.getBean(PrefixRouterEndpoint.class).snapshot().capacity("m").orElseThrow();
              assertThat(plan.backends()).isEqualTo(2);
              assertThat(plan.arrivalsPerSecond()).isPositive();
              double gauge =
                  registry
                      .get("prefixrouter.capacity.recommended")
                      .tag("model", "m")
                      .gauge()
                      .value();
              var after =
                  ctx.getBean(PrefixRouterEndpoint.class).snapshot().capacity("m").orElseThrow();
              // the plan is recomputed from a clock-dependent arrival rate (no new arrivals: it
              // only
              // falls), so the gauge's own snapshot lies between the two taken around it
              assertThat(gauge)
                  .isBetween(
                      (double) Math.min(plan.recommendedBackends(), after.recommendedBackends()),
                      (double) Math.max(plan.recommendedBackends(), after.recommendedBackends()));
              assertThat(
                      registry
                          .get("prefixrouter.capacity.arrivals")
                          .tag("model", "m")
                          .gauge()
                          .value())
                  .isPositive();
            });
    runner
        .withPropertyValues(
            "prefix-router.capacity.ttft=500ms", "prefix-router.capacity.percentile=2")
        .run(
            ctx ->
                assertThat(ctx.getStartupFailure())
                    .hasStackTraceContaining("prefix-router.capacity.percentile")
                    .hasStackTraceContaining("must be in [0.5, 0.9999], was 2.0"));
  }

  @Test
  void worksWithoutActuatorHealthOrMicrometer() {
    runner
        .withClassLoader(
            new FilteredClassLoader(Endpoint.class, HealthIndicator.class, MeterRegistry.class))
        .run(
            ctx -> {
              assertThat(ctx).hasSingleBean(RoutingEngine.class);
              assertThat(ctx).doesNotHaveBean(PrefixRouterEndpoint.class);
              assertThat(ctx).doesNotHaveBean(PrefixRouterHealthIndicator.class);
              assertThat(ctx).doesNotHaveBean(PrefixRouterMetrics.class);
            });
  }
}
