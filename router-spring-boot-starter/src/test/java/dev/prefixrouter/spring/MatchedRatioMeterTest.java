package dev.prefixrouter.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import dev.prefixrouter.radix.BlockHashers;
import dev.prefixrouter.radix.RadixPrefixIndex;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.support.StaticListableBeanFactory;

/**
 * {@code prefixrouter.matched.ratio} is the index's match over the prompt, as {@link
 * dev.prefixrouter.api.CacheAccuracy} counts predictions: not the scorer's {@link
 * Scorer#cachedTokens} discount for prefixes still being prefilled.
 */
class MatchedRatioMeterTest {

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
  void theRatioIsTheIndexsMatchNotTheScorersDiscountedCount() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    PrefixRouterMetrics metrics =
        new PrefixRouterMetrics(
            new StaticListableBeanFactory().getBeanProvider(RoutingEngine.class), false);
    metrics.bindTo(registry);
    RoutingEngine engine =
        RoutingEngine.builder()
            .hasher(BlockHashers.tokens(16))
            .prefixIndex(RadixPrefixIndex.create())
            .scorer(new NothingServedScorer())
            .listener(metrics)
            .backend(Backend.of("a", "m"))
            .build();
    RouteRequest request =
        RouteRequest.builder("t", "m").prompt(Prompt.ofTokens(new int[32])).build();

    Routed first = (Routed) engine.route(request); // nothing believed yet
    first.lease().complete(new Usage(32, 1, 0));
    Routed second = (Routed) engine.route(request); // the index holds both blocks on a
    assertThat(second.matchedTokens()).as("discounted by the scorer").isZero();
    second.lease().complete(new Usage(32, 1, 16));

    DistributionSummary ratio = registry.get("prefixrouter.matched.ratio").summary();
    assertThat(ratio.count()).isEqualTo(2);
    assertThat(ratio.max()).as("the second route's index match: 32 of 32").isEqualTo(1.0);
    assertThat(ratio.totalAmount()).isEqualTo(1.0);
    assertThat(engine.inspect().backend("a").orElseThrow().cacheAccuracy().predictedTokens())
        .as("what the engine's cache is checked against: the same match (its last block capped)")
        .isEqualTo(16);
  }
}
