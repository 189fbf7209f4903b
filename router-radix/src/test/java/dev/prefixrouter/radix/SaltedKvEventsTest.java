package dev.prefixrouter.radix;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * Issue #14: KV events and prefix isolation / {@code cache_salt}. A salted or isolated tenant's
 * blocks, confirmed by the engine's events, must stay matched after the prediction TTL: the events
 * are keyed from the same seed as the tenant's requests, not from the unsalted seed.
 */
class SaltedKvEventsTest {
  private static final long SECOND = 1_000_000_000L;

  private final AtomicLong clock = new AtomicLong(SECOND);
  private final int[] tokens = new int[1024];

  SaltedKvEventsTest() {
    SplittableRandom rnd = new SplittableRandom(3);
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = rnd.nextInt(150_000);
    }
  }

  private RoutingEngine engine(boolean prefixIsolation) {
    return RoutingEngine.builder()
        .ticker(clock::get)
        .hasher(BlockHashers.tokens(16))
        .prefixIsolation(prefixIsolation)
        .prefixIndex(RadixPrefixIndex.builder().predictionTtl(Duration.ofSeconds(30)).build())
        .backend(Backend.of("b0", "m").withCapacityBlocks(10_000))
        .build();
  }

  /** Routes the prompt for {@code tenant} with {@code salt}; returns its matched tokens. */
  private int route(RoutingEngine engine, String tenant, @Nullable String salt) {
    return route(engine, tenant, salt, tokens);
  }

  private static int route(
      RoutingEngine engine, String tenant, @Nullable String salt, int[] tokens) {
    Routed r =
        (Routed)
            engine.route(
                RouteRequest.builder(tenant, "m")
                    .prompt(Prompt.ofTokens(tokens))
                    .cacheSalt(salt)
                    .maxOutputTokens(8)
                    .build());
    r.lease().firstToken();
    r.lease().complete(Usage.of(tokens.length, 8));
    return r.matchedTokens();
  }

  /** What vLLM sends once it has stored the prompt's 64 blocks (engine hashes of its own). */
  private BlockStored stored(@Nullable String salt) {
    long[] hashes = new long[tokens.length / 16];
    for (int i = 0; i < hashes.length; i++) {
      hashes[i] = 0x5A17_0000L + i + (salt == null ? 0 : 1000L * salt.hashCode());
    }
    return new BlockStored(hashes, null, tokens, 16, "GPU", salt);
  }

  /** Routes, lets the engine confirm, waits past the TTL and routes again. */
  private int matchedAfterTtl(
      RoutingEngine engine, String tenant, @Nullable String salt, BlockStored event) {
    assertThat(route(engine, tenant, salt)).isZero();
    clock.addAndGet(SECOND / 100);
    assertThat(engine.applyKvEvents("b0", List.of(event))).isTrue();
    clock.addAndGet(40 * SECOND); // past the 30 s prediction TTL
    // expiry runs on the backend's next write: another request's route
    int[] other = new int[64];
    Arrays.fill(other, 7);
    route(engine, "someone", null, other);
    return route(engine, tenant, salt);
  }

  @Test
  void aSaltedRequestsBlocksStayMatchedOnceItsSaltedEventsConfirmThem() {
    RoutingEngine engine = engine(false);
    assertThat(matchedAfterTtl(engine, "t", "s1", stored("s1"))).isEqualTo(1024);
    assertThat(route(engine, "t", null)).isZero(); // the unsalted prompt never shared them
    assertThat(route(engine, "t", "s2")).isZero();
  }

  @Test
  void anIsolatedTenantPassingItselfAsSaltStaysMatched() {
    RoutingEngine engine = engine(true);
    assertThat(matchedAfterTtl(engine, "acme", "acme", stored("acme"))).isEqualTo(1024);
    assertThat(route(engine, "other", "other")).isZero();
  }

  @Test
  void anIsolatedTenantWithASaltOfItsOwnIsLearntFromItsRoutes() {
    RoutingEngine engine = engine(true);
    assertThat(matchedAfterTtl(engine, "acme", "conversation-7", stored("conversation-7")))
        .isEqualTo(1024);
    assertThat(route(engine, "other", "other")).isZero();
  }

  /**
   * A tenant-bound salt (as the gateway forwards under prefix isolation) names its tenant before
   * any of its requests was routed here (another replica's traffic, a replay after a restart): the
   * fallback took the whole salt as the tenant, and such events confirmed keys nobody used.
   */
  @Test
  void aTenantBoundSaltNamesItsTenantBeforeAnyRouteIsLearnt() {
    RoutingEngine engine = engine(true);
    assertThat(engine.applyKvEvents("b0", List.of(stored("4:acme")))).isTrue();
    assertThat(route(engine, "acme", "4:acme")).isEqualTo(1024);
    assertThat(engine.applyKvEvents("b0", List.of(stored("4:acme|c7")))).isTrue();
    assertThat(route(engine, "acme", "4:acme|c7")).isEqualTo(1024);
    assertThat(route(engine, "other", "4:acme")).as("another tenant with that salt").isZero();
  }

  @Test
  void anUnsaltedEventDoesNotConfirmASaltedTenantsKeys() {
    // the failure before the fix: events keyed from the unsalted seed, the predictions expire
    RoutingEngine engine = engine(false);
    assertThat(matchedAfterTtl(engine, "t", "s1", stored(null))).isZero();
  }
}
