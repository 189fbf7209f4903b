package dev.prefixrouter.spring;

import static io.micrometer.observation.tck.TestObservationRegistryAssert.assertThat;
import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RejectReason;
import dev.prefixrouter.api.Rejected;
import dev.prefixrouter.api.RouteDecision;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistry;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * Each decision runs in the observation {@code prefixrouter.route} and each failover in {@code
 * prefixrouter.failover}, with low-cardinality key values only; the estimated and observed TTFT are
 * timers in seconds.
 */
class ObservationAndTtftMetersTest {
  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(PrefixRouterAutoConfiguration.class))
          .withPropertyValues(
              "prefix-router.backends[0].id=b0",
              "prefix-router.backends[0].models=m",
              "prefix-router.backends[1].id=b1",
              "prefix-router.backends[1].models=m");

  private static RouteRequest request(String model) {
    return RouteRequest.builder("t", model).prompt(Prompt.ofTokens(new int[32])).build();
  }

  @Test
  void everyDecisionIsObservedWithBoundedKeyValues() {
    TestObservationRegistry observations = TestObservationRegistry.create();
    runner
        .withBean(ObservationRegistry.class, () -> observations)
        .run(
            ctx -> {
              RoutingEngine engine = ctx.getBean(RoutingEngine.class);
              Routed r = (Routed) engine.route(request("m"));
              assertThat(observations)
                  .hasNumberOfObservationsWithNameEqualTo(ObservedRoutingEngine.NAME, 1)
                  .hasObservationWithNameEqualTo(ObservedRoutingEngine.NAME)
                  .that()
                  .hasBeenStarted()
                  .hasBeenStopped()
                  .hasLowCardinalityKeyValue("outcome", "routed")
                  .hasLowCardinalityKeyValue("model", "m")
                  .hasHighCardinalityKeyValue("backend", r.backendId())
                  .doesNotHaveLowCardinalityKeyValueWithKey("backend");
              r.lease().firstToken();

              observations.clear();
              engine.route(request("client-chosen-model"));
              assertThat(observations)
                  .hasObservationWithNameEqualTo(ObservedRoutingEngine.NAME)
                  .that()
                  .hasLowCardinalityKeyValue("outcome", "no_eligible_backend")
                  .hasLowCardinalityKeyValue("model", "none");
              // the rest of the engine is the same engine
              assertThat(engine.inspect().backend("b0")).isPresent();
            });
  }

  @Test
  void everyFailoverIsObservedWithBoundedKeyValues() {
    TestObservationRegistry observations = TestObservationRegistry.create();
    runner
        .withBean(ObservationRegistry.class, () -> observations)
        .run(
            ctx -> {
              RoutingEngine engine = ctx.getBean(RoutingEngine.class);
              Routed first = (Routed) engine.route(request("m"));
              first.lease().fail(Failure.of(Failure.Kind.CONNECT));
              assertThat(first.lease().isEnded()).isTrue();
              observations.clear();
              Routed second = (Routed) first.lease().failover();
              assertThat(second.backendId()).isNotEqualTo(first.backendId());
              assertThat(second.attempt()).isEqualTo(1);
              assertThat(observations)
                  .hasNumberOfObservationsWithNameEqualTo(ObservedRoutingEngine.FAILOVER_NAME, 1)
                  .hasNumberOfObservationsWithNameEqualTo(ObservedRoutingEngine.NAME, 0)
                  .hasObservationWithNameEqualTo(ObservedRoutingEngine.FAILOVER_NAME)
                  .that()
                  .hasBeenStarted()
                  .hasBeenStopped()
                  .hasLowCardinalityKeyValue("outcome", "routed")
                  .hasLowCardinalityKeyValue("model", "m")
                  .hasLowCardinalityKeyValue("failure", "connect")
                  .hasHighCardinalityKeyValue("backend", second.backendId())
                  .hasHighCardinalityKeyValue("failed.backend", first.backendId())
                  .doesNotHaveLowCardinalityKeyValueWithKey("backend");

              // the failover's own lease is observed too: both backends failed, no third
              second.lease().fail(Failure.httpStatus(503));
              observations.clear();
              RouteDecision third = second.lease().failover();
              assertThat(third).isInstanceOf(Rejected.class);
              assertThat(observations)
                  .hasObservationWithNameEqualTo(ObservedRoutingEngine.FAILOVER_NAME)
                  .that()
                  .hasLowCardinalityKeyValue(
                      "outcome", ((Rejected) third).reason().name().toLowerCase(Locale.ROOT))
                  .hasLowCardinalityKeyValue("failure", "server_error")
                  .hasHighCardinalityKeyValue("failed.backend", second.backendId());

              // a failover asked of a lease that never failed: observed, failure none
              Routed open = (Routed) engine.route(request("m"));
              observations.clear();
              assertThat(open.lease().failover())
                  .isInstanceOfSatisfying(
                      Rejected.class,
                      j -> assertThat(j.reason()).isEqualTo(RejectReason.NOT_RETRYABLE));
              assertThat(observations)
                  .hasObservationWithNameEqualTo(ObservedRoutingEngine.FAILOVER_NAME)
                  .that()
                  .hasLowCardinalityKeyValue("outcome", "not_retryable")
                  .hasLowCardinalityKeyValue("failure", "none");
              open.lease().complete(Usage.of(32, 1));
              assertThat(open.lease().isEnded()).isTrue();
            });
  }

  @Test
  void withoutARegistryTheEngineIsNotWrapped() {
    runner.run(
        ctx ->
            assertThat(ctx.getBean(RoutingEngine.class))
                .isNotInstanceOf(ObservedRoutingEngine.class));
  }

  @Test
  void estimatedAndObservedTtftAreTimersInSeconds() {
    runner.run(
        ctx -> {
          MeterRegistry registry = new SimpleMeterRegistry();
          ctx.getBean(PrefixRouterMetrics.class).bindTo(registry);
          Routed r = (Routed) ctx.getBean(RoutingEngine.class).route(request("m"));
          r.lease().firstToken();
          Timer estimated =
              registry.get("prefixrouter.ttft.estimated").tag("backend", r.backendId()).timer();
          assertThat(estimated.count()).isEqualTo(1);
          assertThat(estimated.getId().getBaseUnit()).isEqualTo("seconds");
          assertThat(estimated.totalTime(TimeUnit.MILLISECONDS))
              .isCloseTo(r.cost(), org.assertj.core.data.Offset.offset(0.001));
          Timer observed =
              registry.get("prefixrouter.ttft.observed").tag("backend", r.backendId()).timer();
          assertThat(observed.count()).isEqualTo(1);
          assertThat(observed.getId().getBaseUnit()).isEqualTo("seconds");
          assertThat(registry.find("prefixrouter.route.cost").summary()).isNull();
        });
  }

  @Test
  void anotherPolicysCostIsAUnitlessSummary() {
    runner
        .withPropertyValues("prefix-router.scorer.policy=round-robin")
        .run(
            ctx -> {
              MeterRegistry registry = new SimpleMeterRegistry();
              ctx.getBean(PrefixRouterMetrics.class).bindTo(registry);
              Routed r = (Routed) ctx.getBean(RoutingEngine.class).route(request("m"));
              assertThat(
                      registry
                          .get("prefixrouter.route.cost")
                          .tag("backend", r.backendId())
                          .summary()
                          .count())
                  .isEqualTo(1);
              assertThat(registry.find("prefixrouter.ttft.estimated").timer()).isNull();
            });
  }
}
