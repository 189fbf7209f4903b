package dev.prefixrouter.bench.tier;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BlockRemoved;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.radix.BlockHashers;
import dev.prefixrouter.radix.RadixPrefixIndex;
import dev.prefixrouter.scoring.EstimatedTtftScorer;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * End to end: KV events with medium "CPU" reach the real index, the engine's scoring context and
 * the est-ttft credit.
 */
class LowerTierRoutingTest {
  private static final int BLOCKS = 64;

  private static RoutingEngine engine(double credit) {
    return RoutingEngine.builder()
        .hasher(BlockHashers.tokens(16))
        .prefixIndex(RadixPrefixIndex.create())
        .scorer(
            EstimatedTtftScorer.builder()
                .calibrate(false)
                .sessions(java.time.Duration.ofMinutes(1), 0)
                .lowerTierCredit(credit)
                .build())
        .backend(Backend.of("gpu-half", "m").withCapacityBlocks(10_000))
        .backend(Backend.of("cpu-all", "m").withCapacityBlocks(10_000))
        .build();
  }

  private static int[] prompt() {
    int[] tokens = new int[BLOCKS * 16];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = 1000 + i;
    }
    return tokens;
  }

  /** "gpu-half" holds the first half on its GPU; "cpu-all" held all of it, now only on CPU. */
  private static void events(RoutingEngine e) {
    int[] tokens = prompt();
    long[] hashes = new long[BLOCKS];
    for (int i = 0; i < BLOCKS; i++) {
      hashes[i] = 5000 + i;
    }
    long[] half = java.util.Arrays.copyOf(hashes, BLOCKS / 2);
    int[] halfTokens = java.util.Arrays.copyOf(tokens, BLOCKS / 2 * 16);
    e.applyKvEvents("gpu-half", List.of(new BlockStored(half, null, halfTokens, 16, "GPU")));
    e.applyKvEvents(
        "cpu-all",
        List.of(
            new BlockStored(hashes, null, tokens, 16, "GPU"),
            new BlockStored(hashes, null, new int[0], 16, "CPU"), // offloaded while on the GPU
            new BlockRemoved(hashes, "GPU"))); // then evicted from the GPU
  }

  private static Routed route(RoutingEngine e) {
    return (Routed)
        e.route(RouteRequest.builder("t", "m").prompt(Prompt.ofTokens(prompt())).build());
  }

  @Test
  void aPromptHeldOnCpuGoesThereWhenTheCreditOutweighsAHalfGpuHit() {
    RoutingEngine on = engine(0.8);
    events(on);
    Routed r = route(on);
    assertThat(r.backendId()).isEqualTo("cpu-all");
    assertThat(r.matchedTokens()).as("a lower-tier hit is not a GPU hit").isZero();
    assertThat(r.reason()).isEqualTo("est-ttft, lower-tier hit");
    assertThat(on.inspect().index().counters()).containsEntry("lowerTierBlocks", (long) BLOCKS);
  }

  @Test
  void withoutTheCreditTheHalfGpuHitWins() {
    RoutingEngine off = engine(0);
    events(off);
    Routed r = route(off);
    assertThat(r.backendId()).isEqualTo("gpu-half");
    assertThat(r.matchedTokens()).isEqualTo(BLOCKS / 2 * 16);
  }
}
