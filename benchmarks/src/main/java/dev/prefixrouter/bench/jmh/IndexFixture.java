package dev.prefixrouter.bench.jmh;

import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.radix.BlockHashers;
import dev.prefixrouter.radix.RadixPrefixIndex;
import java.time.Duration;
import java.util.SplittableRandom;

/**
 * Builds a warmed index: {@code backends} backends sharing {@code totalBlocks} (block, backend)
 * entries, filled by routing 4k-token prompts that share one of 32 system prompts (1k tokens) and
 * continue with unique text, so the tree has a shared trunk and many leaves.
 */
final class IndexFixture {
  static final int PROMPT_TOKENS = 4096;
  static final BlockHasher HASHER = BlockHashers.tokens(16);

  final RadixPrefixIndex index;
  final int[] slots;
  final long[][] prompts; // keys of prompts that were recorded (hits)
  final int[] promptSlots; // the backend each of them was recorded on
  final Prompt[] rawPrompts;

  IndexFixture(int backends, long totalBlocks, int maxBackends, long seed) {
    index =
        RadixPrefixIndex.builder()
            .maxBackends(maxBackends)
            .predictionTtl(Duration.ZERO)
            .defaultCapacityBlocks(Math.max(1, totalBlocks / backends))
            .build();
    slots = new int[backends];
    for (int b = 0; b < backends; b++) {
      slots[b] = b;
      index.addBackend(b, totalBlocks / backends);
    }
    SplittableRandom rnd = new SplittableRandom(seed);
    int[][] system = new int[32][1024];
    for (int[] s : system) {
      for (int i = 0; i < s.length; i++) {
        s[i] = rnd.nextInt(150_000);
      }
    }
    int blocksPerPrompt = PROMPT_TOKENS / 16;
    long needed = totalBlocks / blocksPerPrompt + 1;
    int keep = 256; // prompts kept for matching; the fill routes at least this many
    needed = Math.max(needed, keep);
    prompts = new long[keep][];
    rawPrompts = new Prompt[keep];
    promptSlots = new int[keep];
    long now = 0;
    for (long p = 0; p < needed; p++) {
      int[] ids = new int[PROMPT_TOKENS];
      System.arraycopy(system[(int) (p % 32)], 0, ids, 0, 1024);
      for (int i = 1024; i < ids.length; i++) {
        ids[i] = rnd.nextInt(150_000);
      }
      Prompt prompt = Prompt.ofTokens(ids);
      long[] keys = BlockHasher.keysOf(HASHER, prompt, 0);
      index.recordRouted(keys, keys.length, (int) (p % backends), now++);
      long fromEnd = needed - p;
      if (fromEnd <= keep) {
        int k = (int) (keep - fromEnd);
        prompts[k] = keys;
        rawPrompts[k] = prompt;
        promptSlots[k] = (int) (p % backends);
      }
    }
  }
}
