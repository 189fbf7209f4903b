package dev.prefixrouter.radix;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.RoutingEngineBuilder;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * Issue #16: LoRA adapters. vLLM hashes the adapter's name into every block of its requests, so an
 * adapter's engine blocks must confirm that adapter's requests, and never the base model's or
 * another adapter's.
 */
class LoraKvEventsTest {
  private final int[] tokens = new int[1024];

  LoraKvEventsTest() {
    SplittableRandom rnd = new SplittableRandom(5);
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = rnd.nextInt(150_000);
    }
  }

  private static RoutingEngine engine(boolean isolation, String... adapters) {
    RoutingEngineBuilder b =
        RoutingEngine.builder()
            .hasher(BlockHashers.tokens(16))
            .prefixIsolation(isolation)
            .prefixIndex(RadixPrefixIndex.builder().predictionTtl(Duration.ofSeconds(30)).build())
            .backend(Backend.of("b0", "base", "sql", "chat").withCapacityBlocks(10_000));
    for (String a : adapters) {
      b.loraAdapter(a);
    }
    return b.build();
  }

  /** The matched tokens of the first route of the prompt for {@code model}. */
  private int matched(RoutingEngine e, String tenant, String model, @Nullable String salt) {
    Routed r =
        (Routed)
            e.route(
                RouteRequest.builder(tenant, model)
                    .prompt(Prompt.ofTokens(tokens))
                    .cacheSalt(salt)
                    .build());
    r.lease().complete(dev.prefixrouter.api.Usage.of(tokens.length, 1));
    return r.matchedTokens();
  }

  private BlockStored stored(@Nullable String salt, @Nullable String lora) {
    long[] hashes = new long[tokens.length / 16];
    for (int i = 0; i < hashes.length; i++) {
      hashes[i] = 0x10_0000L * (lora == null ? 1 : lora.length() + 1) + i;
    }
    return new BlockStored(hashes, null, tokens, 16, "GPU", salt, lora);
  }

  @Test
  void anAdaptersEventsConfirmItsRequestsAndNeverTheBaseModelsOrAnotherAdapters() {
    RoutingEngine e = engine(false, "sql", "chat");
    e.applyKvEvents("b0", List.of(stored(null, "sql")));
    assertThat(matched(e, "t", "base", null)).as("base model").isZero();
    assertThat(matched(e, "t", "chat", null)).as("another adapter").isZero();
    assertThat(matched(e, "t", "sql", null)).as("the adapter").isEqualTo(1024);
    assertThat(matched(e, "t2", "sql", "s")).as("the adapter, salted: another cache").isZero();
  }

  @Test
  void baseModelEventsNeverConfirmAnAdaptersRequests() {
    RoutingEngine e = engine(false, "sql");
    e.applyKvEvents("b0", List.of(stored(null, null)));
    assertThat(matched(e, "t", "sql", null)).isZero();
    assertThat(matched(e, "t", "base", null)).isEqualTo(1024);
  }

  @Test
  void anUndeclaredAdaptersEventsConfirmNothing() {
    RoutingEngine e = engine(false);
    e.applyKvEvents("b0", List.of(stored(null, "sql")));
    assertThat(matched(e, "t", "base", null)).isZero();
    // (this route's own prediction now covers the base keys, which the undeclared adapter shares)
    assertThat(matched(e, "t", "sql", null)).as("keyed as a base request").isEqualTo(1024);
  }

  @Test
  void underIsolationASaltedAdaptersEventsConfirmThatTenantsAdapterRequestsOnly() {
    RoutingEngine e = engine(true, "sql");
    e.applyKvEvents("b0", List.of(stored("acme", "sql")));
    assertThat(matched(e, "acme", "base", "acme")).isZero();
    assertThat(matched(e, "other", "sql", "other")).isZero();
    assertThat(matched(e, "acme", "sql", "acme")).isEqualTo(1024);
  }

  @Test
  void aBlankAdapterNameIsRejected() {
    assertThatThrownBy(() -> RoutingEngine.builder().loraAdapter(" "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("loraAdapter: name must not be blank");
  }
}
