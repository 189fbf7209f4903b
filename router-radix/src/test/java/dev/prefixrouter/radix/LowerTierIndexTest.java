package dev.prefixrouter.radix;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.AllBlocksCleared;
import dev.prefixrouter.api.BlockRemoved;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The per-backend lower tier (CPU, disk) and {@code matchOffloaded}. */
class LowerTierIndexTest {
  private static final BlockHasher H = BlockHashers.tokens(2);
  private static final int[] TOKENS = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  private static final long[] HASHES = {101, 102, 103, 104, 105};

  private static long[] keys(int... tokens) {
    return BlockHasher.keysOf(H, Prompt.ofTokens(tokens), 0);
  }

  private static RadixPrefixIndex index(RadixPrefixIndex.Builder b, int backends) {
    RadixPrefixIndex index = b.maxBackends(8).predictionTtl(Duration.ZERO).build();
    for (int i = 0; i < backends; i++) {
      index.addBackend(i, 100);
    }
    return index;
  }

  /** [GPU match, lower-tier run] per slot, for the whole prompt {@link #TOKENS}. */
  private static int[][] both(RadixPrefixIndex index, int... slots) {
    long[] k = keys(TOKENS);
    int[] gpu = new int[slots.length];
    int[] lower = new int[slots.length];
    index.match(k, k.length, slots, slots.length, gpu);
    index.matchOffloaded(k, k.length, slots, slots.length, gpu, lower);
    return new int[][] {gpu, lower};
  }

  private static void storeGpu(RadixPrefixIndex index, int slot) {
    index.apply(slot, new BlockStored(HASHES, null, TOKENS, 2, "GPU"), H, 1);
  }

  private static void offload(RadixPrefixIndex index, int slot, long... hashes) {
    index.apply(slot, new BlockStored(hashes, null, new int[0], 2, "CPU"), H, 2);
  }

  @Test
  void blocksEvictedFromTheGpuButKeptOnCpuCountRightAfterTheGpuMatch() {
    RadixPrefixIndex index = index(RadixPrefixIndex.builder(), 2);
    storeGpu(index, 0);
    offload(index, 0, HASHES); // written through while the GPU copies live
    assertThat(both(index, 0, 1)).isDeepEqualTo(new int[][] {{5, 0}, {0, 0}});
    index.apply(0, new BlockRemoved(new long[] {103, 104, 105}, "GPU"), H, 3);
    assertThat(both(index, 0, 1)).isDeepEqualTo(new int[][] {{2, 0}, {3, 0}});
    // a CPU copy dropped in the middle ends the run there
    index.apply(0, new BlockRemoved(new long[] {104}, "CPU"), H, 4);
    assertThat(both(index, 0)).isDeepEqualTo(new int[][] {{2}, {1}});
    // every GPU block gone: the run starts at block 0, and needs block 0
    index.apply(0, new BlockRemoved(new long[] {101, 102}, "GPU"), H, 5);
    assertThat(both(index, 0)).isDeepEqualTo(new int[][] {{0}, {3}});
    index.apply(0, new BlockRemoved(new long[] {101}, "CPU"), H, 6);
    assertThat(both(index, 0)).isDeepEqualTo(new int[][] {{0}, {0}});
    Map<String, Long> c = index.stats().counters();
    assertThat(c).containsEntry("lowerTierBlocks", 3L).containsEntry("kv.lowerTierUnresolved", 0L);
  }

  @Test
  void aLowerTierStoreCarryingTokensIsKeyedFromThemAndUnresolvableBlocksAreCounted() {
    RadixPrefixIndex index = index(RadixPrefixIndex.builder(), 1);
    // never on this GPU: keyed from its tokens (parentless), then a child through its parent
    index.apply(
        0, new BlockStored(new long[] {201, 202}, null, new int[] {1, 2, 3, 4}, 2, "CPU"), H, 1);
    index.apply(0, new BlockStored(new long[] {203}, 202L, new int[] {5, 6}, 2, "disk"), H, 2);
    assertThat(both(index, 0)).isDeepEqualTo(new int[][] {{0}, {3}});
    // no tokens and no GPU mapping: nothing to key it by
    offload(index, 0, 999);
    index.apply(0, new BlockRemoved(new long[] {998}, "CPU"), H, 3);
    assertThat(index.stats().counters())
        .containsEntry("kv.lowerTierUnresolved", 1L)
        .containsEntry("kv.lowerTierUnknownRemoval", 1L)
        .containsEntry("lowerTierBlocks", 3L);
  }

  @Test
  void theBoundEvictsTheLeastRecentlyStoredBlocksAndIsCounted() {
    RadixPrefixIndex index = index(RadixPrefixIndex.builder().lowerTierBlocks(3), 1);
    storeGpu(index, 0);
    offload(index, 0, 101, 102);
    offload(index, 0, 103, 104, 105); // 101, 102 evicted
    assertThat(index.stats().counters())
        .containsEntry("lowerTierBlocks", 3L)
        .containsEntry("kv.lowerTierEvicted", 2L);
    index.apply(0, new BlockRemoved(HASHES, "GPU"), H, 3);
    assertThat(both(index, 0))
        .as("the run needs block 0, evicted")
        .isDeepEqualTo(new int[][] {{0}, {0}});
    // the record never grows past the bound, whatever arrives
    for (long h = 1000; h < 1100; h++) {
      index.apply(0, new BlockStored(new long[] {h}, null, new int[] {(int) h, 0}, 2, "CPU"), H, 4);
      assertThat(index.stats().counters().get("lowerTierBlocks")).isLessThanOrEqualTo(3L);
    }
    assertThat(index.stats().counters()).containsEntry("kv.lowerTierEvicted", 102L);
  }

  @Test
  void aZeroBoundRecordsNothingAndFleetsWithoutLowerTierAnswerZero() {
    RadixPrefixIndex none = index(RadixPrefixIndex.builder().lowerTierBlocks(0), 1);
    storeGpu(none, 0);
    offload(none, 0, HASHES);
    none.apply(0, new BlockRemoved(HASHES, "GPU"), H, 3);
    assertThat(both(none, 0)).isDeepEqualTo(new int[][] {{0}, {0}});
    assertThat(none.stats().counters()).containsEntry("lowerTierBlocks", 0L);

    RadixPrefixIndex gpuOnly = index(RadixPrefixIndex.builder(), 2);
    storeGpu(gpuOnly, 1);
    int[] lower = {7, 7, 7};
    long[] k = keys(TOKENS);
    gpuOnly.matchOffloaded(k, k.length, new int[] {0, 1, 99}, 3, new int[] {0, 5, 0}, lower);
    assertThat(lower).containsExactly(0, 0, 0);
    assertThatThrownBy(() -> RadixPrefixIndex.builder().lowerTierBlocks(-1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("lowerTierBlocks must be in [0, ");
  }

  @Test
  void clearingOrRemovingTheBackendForgetsItsLowerTier() {
    RadixPrefixIndex index = index(RadixPrefixIndex.builder(), 1);
    storeGpu(index, 0);
    offload(index, 0, HASHES);
    index.apply(0, AllBlocksCleared.INSTANCE, H, 3);
    assertThat(both(index, 0)).isDeepEqualTo(new int[][] {{0}, {0}});
    storeGpu(index, 0);
    offload(index, 0, HASHES);
    index.removeBackend(0);
    index.addBackend(0, 100);
    assertThat(both(index, 0)).isDeepEqualTo(new int[][] {{0}, {0}});
    assertThat(index.stats().counters()).containsEntry("lowerTierBlocks", 0L);
  }
}
