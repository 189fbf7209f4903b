package dev.prefixrouter.redis;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.IndexStats;
import dev.prefixrouter.api.KvEvent;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.api.spi.PrefixIndex;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A test index that records every {@code recordRouted} as {@code "slot:[keys]"} and answers every
 * match with {@link #held} blocks (capped at the prompt). Thread-safe.
 */
final class KeyRecordingIndex implements PrefixIndex {
  final List<String> recorded = new CopyOnWriteArrayList<>();
  volatile int held;

  static String entry(int slot, long[] keys, int n) {
    return slot + ":" + Arrays.toString(Arrays.copyOf(keys, n));
  }

  @Override
  public void addBackend(int slot, Backend backend) {}

  @Override
  public void updateBackend(int slot, Backend before, Backend after) {}

  @Override
  public void match(long[] keys, int keyCount, int[] slots, int count, int[] matchedOut) {
    Arrays.fill(matchedOut, 0, count, Math.min(held, keyCount));
  }

  @Override
  public void recordRouted(long[] keys, int keyCount, int slot, long nowNanos) {
    recorded.add(entry(slot, keys, keyCount));
  }

  @Override
  public void apply(int slot, KvEvent event, BlockHasher hasher, long nowNanos) {}

  @Override
  public void removeBackend(int slot) {}

  @Override
  public IndexStats stats(String[] slotNames) {
    return IndexStats.EMPTY;
  }

  /** One key per token of a token prompt, chained (key = 31 × previous + token); tests only. */
  static final class TokenHasher implements BlockHasher {
    @Override
    public int keys(Prompt prompt, long seed, long[] out) {
      if (!(prompt instanceof Prompt.Tokens t)) {
        return 0;
      }
      int n = t.length();
      if (n > out.length) {
        return n;
      }
      long k = seed;
      for (int i = 0; i < n; i++) {
        k = k * 31 + t.token(i);
        out[i] = k;
      }
      return n;
    }

    @Override
    public int tokensPerBlock() {
      return 1;
    }
  }
}
