package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class CapacityPlannerTest {
  private final AtomicLong clock = new AtomicLong(5_000_000_000L);

  private RoutingEngine engine(CapacityObjective objective) {
    RoutingEngineBuilder b = RoutingEngine.builder().ticker(clock::get);
    b.backend(Backend.of("a0", "m")).backend(Backend.of("a1", "m"));
    b.backend(Backend.of("x0", "other"));
    if (objective != null) {
      b.capacityObjective(objective);
    }
    return b.build();
  }

  private static RouteRequest req(String model, int tokens) {
    return RouteRequest.builder("t", model)
        .prompt(Prompt.ofTokens(Fakes.tokens(tokens, 0)))
        .maxOutputTokens(8)
        .build();
  }

  /** Routes {@code n} requests of {@code model} spread evenly over {@code seconds}. */
  private void traffic(RoutingEngine e, String model, int n, int tokens, double seconds) {
    long step = (long) (seconds * 1e9 / n);
    for (int i = 0; i < n; i++) {
      clock.addAndGet(step);
      Routed r = (Routed) e.route(req(model, tokens));
      r.lease().complete(new Usage(tokens, 1, 0));
    }
  }

  @Test
  void offWithoutAnObjective() {
    RoutingEngine e = engine(null);
    traffic(e, "m", 10, 100, 1);
    assertThat(e.inspect().capacity()).isEmpty();
  }

  @Test
  void recommendsFromObservedRateAndFallbackPrefillTime() {
    CapacityObjective obj =
        CapacityObjective.ttft(Duration.ofMillis(60), 0.95).withWindow(Duration.ofSeconds(30));
    RoutingEngine e = engine(obj);
    RouterSnapshot first = e.inspect();
    assertThat(first.capacity())
        .extracting(CapacityPlan::status)
        .containsOnly(CapacityPlan.Status.NO_TRAFFIC);

    traffic(e, "m", 400, 2000, 10); // 40 requests/s of 2000 uncached tokens
    CapacityPlan p = e.inspect().capacity("m").orElseThrow();
    double serviceMs = 6.0 + 0.01725 * 2000; // the fallback prefill model: 40.5 ms
    assertThat(p.status()).isEqualTo(CapacityPlan.Status.OK);
    assertThat(p.backends()).isEqualTo(2);
    assertThat(p.arrivalsPerSecond()).isCloseTo(40, within(0.01));
    assertThat(p.meanServiceMillis()).isCloseTo(serviceMs, within(1e-9));
    int expected = ErlangC.serversFor(40, serviceMs / 1e3, 0.060, 0.95).orElseThrow();
    assertThat(p.recommendedBackends()).isEqualTo(expected);
    assertThat(p.predictedTtftMillisRecommended()).isLessThanOrEqualTo(60.0 + 1e-6);
    assertThat(p.predictedTtftMillisNow()).isGreaterThan(60.0); // 2 backends at 81 % miss
    assertThat(p.delta()).isEqualTo(expected - 2);
    assertThat(e.inspect().capacity("other").orElseThrow().status())
        .isEqualTo(CapacityPlan.Status.NO_TRAFFIC);
  }

  @Test
  void theRateForgetsTrafficOlderThanTheWindow() {
    RoutingEngine e =
        engine(
            CapacityObjective.ttft(Duration.ofMillis(200), 0.9).withWindow(Duration.ofSeconds(10)));
    traffic(e, "m", 100, 100, 5);
    assertThat(e.inspect().capacity("m").orElseThrow().arrivalsPerSecond())
        .isCloseTo(20, within(0.01));
    for (int i = 0; i < 30; i++) { // quiet for 30 s, inspected every second
      clock.addAndGet(1_000_000_000L);
      e.inspect();
    }
    CapacityPlan p = e.inspect().capacity("m").orElseThrow();
    assertThat(p.status()).isEqualTo(CapacityPlan.Status.NO_TRAFFIC);
    assertThat(p.observedSeconds()).isBetween(10.0, 11.0);
  }

  @Test
  void drainingBackendsDoNotCountAndUnreachableObjectivesSaySo() {
    RoutingEngine e = engine(CapacityObjective.ttft(Duration.ofMillis(10), 0.95));
    traffic(e, "m", 50, 4000, 5); // mean prefill alone ≈ 75 ms > 10 ms
    e.backends().drain("a1");
    CapacityPlan p = e.inspect().capacity("m").orElseThrow();
    assertThat(p.backends()).isEqualTo(1);
    assertThat(p.status()).isEqualTo(CapacityPlan.Status.UNREACHABLE);
    assertThat(p.recommendedBackends()).isEqualTo(-1);
    assertThat(p.delta()).isZero();
  }

  @Test
  void objectiveRejectsBadValues() {
    assertThatThrownBy(() -> CapacityObjective.ttft(Duration.ZERO, 0.9))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ttft");
    assertThatThrownBy(() -> CapacityObjective.ttft(Duration.ofMillis(1), 0.2))
        .hasMessageContaining("percentile");
    assertThatThrownBy(
            () -> CapacityObjective.ttft(Duration.ofMillis(1), 0.9).withWindow(Duration.ZERO))
        .hasMessageContaining("window");
    assertThatThrownBy(
            () -> CapacityObjective.ttft(Duration.ofMillis(1), 0.9).withFallbackPrefill(1, 0))
        .hasMessageContaining("fallbackBetaMsPerToken");
  }
}
