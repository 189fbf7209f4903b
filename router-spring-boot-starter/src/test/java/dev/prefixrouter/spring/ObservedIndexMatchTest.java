package dev.prefixrouter.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.radix.BlockHashers;
import dev.prefixrouter.radix.RadixPrefixIndex;
import io.micrometer.observation.tck.TestObservationRegistry;
import org.junit.jupiter.api.Test;

/**
 * A {@link Routed} handed out by {@link ObservedRoutingEngine} (a copy around its observed lease)
 * reports the index's match in {@link Routed#indexMatchedTokens()}, as the engine's own decision
 * does, not the scorer's {@link dev.prefixrouter.api.spi.Scorer#cachedTokens} discount: for the
 * first route and for a failover's.
 */
class ObservedIndexMatchTest {
  private static final BlockHasher HASHER = BlockHashers.tokens(16);
  private static final Prompt PROMPT = Prompt.ofTokens(new int[32]);

  @Test
  void anObservedDecisionReportsTheIndexsMatchNotTheScorersDiscountedCount() {
    RoutingEngine inner =
        RoutingEngine.builder()
            .hasher(HASHER)
            .prefixIndex(RadixPrefixIndex.create())
            .scorer(new MatchedRatioMeterTest.NothingServedScorer())
            .backend(Backend.of("a", "m"))
            .backend(Backend.of("b", "m"))
            .build();
    long[] keys = BlockHasher.keysOf(HASHER, PROMPT, 0);
    assertThat(keys).hasSize(2);
    inner.applyPredicted("a", keys, keys.length); // both blocks believed on both backends
    inner.applyPredicted("b", keys, keys.length);
    RoutingEngine engine = new ObservedRoutingEngine(inner, TestObservationRegistry.create());
    RouteRequest request = RouteRequest.builder("t", "m").prompt(PROMPT).build();

    Routed first = (Routed) engine.route(request);
    assertThat(first.lease().toString()).as("the observed copy").startsWith("observed ");
    assertThat(first.matchedTokens()).as("discounted by the scorer").isZero();
    assertThat(first.indexMatchedTokens()).as("the index's match: 32 of 32").isEqualTo(32);

    first.lease().fail(Failure.of(Failure.Kind.CONNECT));
    Routed next = (Routed) first.lease().failover();
    assertThat(next.backendId()).isNotEqualTo(first.backendId());
    assertThat(next.lease().toString()).as("the failover's observed copy").startsWith("observed ");
    assertThat(next.matchedTokens()).as("discounted by the scorer").isZero();
    assertThat(next.indexMatchedTokens()).as("the failover's index match").isEqualTo(32);
    next.lease().complete(new Usage(32, 1, 16));
  }
}
