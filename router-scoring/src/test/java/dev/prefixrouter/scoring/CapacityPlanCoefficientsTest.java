package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.CapacityObjective;
import dev.prefixrouter.api.CapacityPlan;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.api.spi.Scorer;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The capacity planner (router-api) reads est-ttft's calibrated prefill coefficients through the
 * scorer's {@code describe()} keys and falls back to the objective's coefficients without them. The
 * two modules cannot see each other, so this test pins the coupling: a rename on either side would
 * otherwise degrade every plan silently to the fallback.
 */
class CapacityPlanCoefficientsTest {
  private static final double FALLBACK_ALPHA_MS = 5_000;

  private final AtomicLong clock = new AtomicLong(1_000_000_000L);

  private CapacityPlan planAfterTraffic(Scorer scorer) {
    RoutingEngine engine =
        RoutingEngine.builder()
            .ticker(clock::get)
            .backend(Backend.of("a", "m"))
            .backend(Backend.of("b", "m"))
            .scorer(scorer)
            .capacityObjective(
                CapacityObjective.ttft(Duration.ofSeconds(30), 0.9)
                    .withWindow(Duration.ofSeconds(60))
                    .withFallbackPrefill(FALLBACK_ALPHA_MS, 5.0))
            .build();
    int[] tokens = new int[256];
    for (int i = 0; i < 20; i++) {
      tokens[0] = i;
      Routed r =
          (Routed)
              engine.route(RouteRequest.builder("t", "m").prompt(Prompt.ofTokens(tokens)).build());
      clock.addAndGet(Duration.ofMillis(500).toNanos());
      r.lease().complete(new Usage(256, 1, 0));
    }
    return engine.inspect().capacity("m").orElseThrow();
  }

  @Test
  void estTtftsCalibratedCoefficientsReachThePlanNotTheFallback() {
    CapacityPlan withEstTtft = planAfterTraffic(EstimatedTtftScorer.builder().build());
    assertThat(withEstTtft.status()).isEqualTo(CapacityPlan.Status.OK);
    assertThat(withEstTtft.meanServiceMillis()).isPositive().isLessThan(FALLBACK_ALPHA_MS / 10);
  }

  @Test
  void aScorerWithoutCoefficientsGetsTheFallback() {
    CapacityPlan withLeastRequest = planAfterTraffic(Policies.byName("least-request"));
    assertThat(withLeastRequest.meanServiceMillis()).isGreaterThanOrEqualTo(FALLBACK_ALPHA_MS);
  }
}
