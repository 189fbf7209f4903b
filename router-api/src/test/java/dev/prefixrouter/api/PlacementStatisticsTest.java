package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * A backend's placement statistics ({@link BackendSnapshot#matchedTokens}, {@link
 * BackendSnapshot#predictedHitRatio}, the {@link CapacityPlan}'s cached tokens per request) count
 * the index's match, as {@link CacheAccuracy} and {@code prefixrouter.matched.ratio} do: not a
 * scorer's {@link Scorer#cachedTokens} discount for prefixes still being prefilled.
 */
class PlacementStatisticsTest {
  private final AtomicLong clock = new AtomicLong(5_000_000_000L);

  /** Ranks as given and expects the engine to serve nothing of any match from its cache. */
  static final class NothingServedScorer implements Scorer {
    @Override
    public String name() {
      return "nothing-served";
    }

    @Override
    public void score(ScoringContext ctx) {
      ctx.sortByCost(0);
    }

    @Override
    public int cachedTokens(ScoringContext ctx, int candidate) {
      return 0;
    }
  }

  @Test
  void theBackendsMatchedTokensAreTheIndexsMatchNotTheScorersDiscountedCount() {
    Fakes.RecordingIndex index = new Fakes.RecordingIndex();
    index.matchBySlot.put(0, 3); // 12 of the 16 prompt tokens believed cached on a
    RoutingEngine engine =
        RoutingEngine.builder()
            .ticker(clock::get)
            .hasher(new Fakes.SimpleHasher())
            .prefixIndex(index)
            .scorer(new NothingServedScorer())
            .capacityObjective(
                CapacityObjective.ttft(Duration.ofMillis(100), 0.9)
                    .withWindow(Duration.ofSeconds(10)))
            .backend(Backend.of("a", "m"))
            .build();
    engine.inspect(); // the planner's first sample, before any traffic
    for (int i = 0; i < 10; i++) {
      clock.addAndGet(100_000_000L);
      Routed r =
          (Routed)
              engine.route(
                  RouteRequest.builder("t", "m")
                      .prompt(Prompt.ofTokens(Fakes.tokens(16, 0)))
                      .maxOutputTokens(8)
                      .build());
      assertThat(r.matchedTokens()).as("discounted by the scorer").isZero();
      assertThat(r.indexMatchedTokens()).isEqualTo(12);
      r.lease().complete(new Usage(16, 1, 12));
    }

    RouterSnapshot s = engine.inspect();
    BackendSnapshot a = s.backend("a").orElseThrow();
    assertThat(a.promptTokens()).isEqualTo(160);
    assertThat(a.matchedTokens()).as("the index's match of ten placements").isEqualTo(120);
    assertThat(a.predictedHitRatio()).isEqualTo(0.75);
    // the objective's fallback prefill model at 4 uncached tokens per request, not 16
    assertThat(s.capacity("m").orElseThrow().meanServiceMillis())
        .isCloseTo(6.0 + 0.01725 * 4, within(1e-9));
  }
}
