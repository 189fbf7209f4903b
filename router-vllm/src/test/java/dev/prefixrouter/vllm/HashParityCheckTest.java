package dev.prefixrouter.vllm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.KvEvent;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Hash parity: events carrying the tokens routing hashed match; anything else is a mismatch. */
class HashParityCheckTest {
  private static final int BLOCK = 4;
  private static final Backend B0 = Backend.of("b0", "m");
  private final BlockHasher hasher = new ChainHasher();

  /** Chained key per block of 4 tokens (a mix of the seed and the tokens), for tests only. */
  static final class ChainHasher implements BlockHasher {
    @Override
    public int keys(Prompt prompt, long seed, long[] out) {
      if (!(prompt instanceof Prompt.Tokens t)) {
        return 0;
      }
      int n = t.length() / BLOCK;
      if (n > out.length) {
        return n;
      }
      long k = seed;
      for (int i = 0; i < n; i++) {
        for (int j = 0; j < BLOCK; j++) {
          k = (k ^ t.token(i * BLOCK + j)) * 0x100000001b3L;
        }
        k ^= k >>> 29;
        out[i] = k;
      }
      return n;
    }

    @Override
    public int tokensPerBlock() {
      return BLOCK;
    }
  }

  private static int[] prompt(int i, int blocks) {
    int[] t = new int[blocks * BLOCK];
    for (int j = 0; j < t.length; j++) {
      t[j] = 1_000 * i + j;
    }
    return t;
  }

  private void route(HashParityCheck check, int[] tokens, long seed) {
    long[] keys = BlockHasher.keysOf(hasher, Prompt.ofTokens(tokens), seed);
    check.onPredicted(B0, keys, keys.length, 0);
  }

  private static BlockStored stored(int[] tokens, Long parent, int blockSize, String medium) {
    long[] hashes = new long[tokens.length / blockSize];
    for (int i = 0; i < hashes.length; i++) {
      hashes[i] = tokens[0] * 100L + i;
    }
    return new BlockStored(hashes, parent, tokens, blockSize, medium);
  }

  @Test
  void eventsWithTheRoutedTokensMatch() {
    HashParityCheck check = HashParityCheck.builder(hasher).window(8).build();
    for (int i = 0; i < 16; i++) {
      route(check, prompt(i, 3), 0);
      check.check("b0", List.of(stored(prompt(i, 3), null, BLOCK, "GPU")));
    }
    assertThat(check.stats()).isEqualTo(new HashParityCheck.Stats(16, 16, 0, 0, false));
  }

  @Test
  void aTemplateDifferenceIsAMismatchUntilTheTokensAgreeAgain() {
    HashParityCheck check = HashParityCheck.builder(hasher).window(8).build();
    for (int i = 0; i < 16; i++) {
      route(check, prompt(i, 3), 0);
      int[] engineSide = prompt(i, 3);
      engineSide[0] = 7; // e.g. a BOS token or a template marker the host does not render
      check.check("b0", List.of(stored(engineSide, null, BLOCK, null)));
    }
    assertThat(check.stats()).isEqualTo(new HashParityCheck.Stats(16, 0, 0, 2, true));
    for (int i = 16; i < 24; i++) {
      route(check, prompt(i, 2), 0);
      check.check("b0", List.of(stored(prompt(i, 2), null, BLOCK, "gpu")));
    }
    assertThat(check.stats().mismatch()).isFalse();
  }

  @Test
  void prefixIsolationSeedsAreAMismatch() {
    HashParityCheck check = HashParityCheck.builder(hasher).window(4).build();
    for (int i = 0; i < 4; i++) {
      route(check, prompt(i, 2), hasher.seed("tenant-" + i));
      check.check("b0", List.of(stored(prompt(i, 2), null, BLOCK, "GPU")));
    }
    assertThat(check.stats().mismatch()).isTrue();
  }

  @Test
  void noVerdictWithoutRouting() {
    HashParityCheck check = HashParityCheck.builder(hasher).window(4).build();
    for (int i = 0; i < 8; i++) {
      check.check("b0", List.of(stored(prompt(i, 2), null, BLOCK, "GPU")));
    }
    assertThat(check.stats()).isEqualTo(new HashParityCheck.Stats(8, 0, 0, 0, false));
  }

  @Test
  void anotherBlockSizeIsCountedAndContinuationsAndOtherTiersAreNotChecked() {
    HashParityCheck check = HashParityCheck.builder(hasher).window(4).build();
    route(check, prompt(1, 4), 0);
    List<KvEvent> batch = new ArrayList<>();
    batch.add(stored(prompt(1, 4), null, 2 * BLOCK, "GPU"));
    batch.add(stored(prompt(1, 2), 5L, BLOCK, "GPU"));
    batch.add(stored(prompt(1, 2), null, BLOCK, "CPU"));
    check.check("b0", batch);
    assertThat(check.stats()).isEqualTo(new HashParityCheck.Stats(0, 0, 1, 0, false));
  }

  @Test
  void theSinkChecksThenForwards() {
    HashParityCheck check = HashParityCheck.builder(hasher).window(1).build();
    List<String> forwarded = new ArrayList<>();
    KvEventSubscriber.Sink sink =
        check.sink(
            (id, batch) -> {
              forwarded.add(id);
              return true;
            });
    route(check, prompt(3, 2), 0);
    assertThat(sink.apply("b0", List.of(stored(prompt(3, 2), null, BLOCK, "GPU")))).isTrue();
    assertThat(forwarded).containsExactly("b0");
    assertThat(check.stats().matched()).isEqualTo(1);
  }

  @Test
  void builderBounds() {
    HashParityCheck.Builder b = HashParityCheck.builder(hasher);
    assertThatThrownBy(() -> b.recentPrompts(1000)).hasMessageContaining("power of two");
    assertThatThrownBy(() -> b.recentPrompts(1 << 23)).hasMessageContaining("recentPrompts");
    assertThatThrownBy(() -> b.window(0)).hasMessageContaining("window must be in");
  }
}
