package dev.prefixrouter.radix;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.AllBlocksCleared;
import dev.prefixrouter.api.BlockRemoved;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.EngineHashes;
import dev.prefixrouter.api.IndexStats;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.api.spi.IndexSignal;
import dev.prefixrouter.api.spi.PrefixIndex;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class RadixPrefixIndexTest {
  private static final BlockHasher H = BlockHashers.tokens(2);

  private static long[] keys(int... tokens) {
    return BlockHasher.keysOf(H, Prompt.ofTokens(tokens), 0);
  }

  private static int[] match(RadixPrefixIndex index, long[] keys, int... slots) {
    int[] out = new int[slots.length];
    index.match(keys, keys.length, slots, slots.length, out);
    return out;
  }

  private static RadixPrefixIndex index(int... capacities) {
    RadixPrefixIndex index =
        RadixPrefixIndex.builder().maxBackends(130).predictionTtl(Duration.ofSeconds(1)).build();
    for (int i = 0; i < capacities.length; i++) {
      index.addBackend(i, capacities[i]);
    }
    return index;
  }

  @Test
  void matchReturnsTheLongestLeadingRunPerBackend() {
    RadixPrefixIndex index = index(100, 100, 100);
    recordAll(index, keys(1, 2, 3, 4, 5, 6), 0, 1);
    recordAll(index, keys(1, 2, 3, 4), 1, 2);
    recordAll(index, keys(9, 9), 2, 3);
    assertThat(match(index, keys(1, 2, 3, 4, 5, 6, 7, 8), 0, 1, 2)).containsExactly(3, 2, 0);
    assertThat(match(index, keys(1, 2, 3, 4, 5, 6), 2, 0)).containsExactly(0, 3);
    assertThat(match(index, keys(), 0)).containsExactly(0);
    assertThat(match(index, keys(7, 7), 0)).containsExactly(0);
  }

  @Test
  void commonPrefixOfChainedKeysIsWhereThePromptsPart() {
    int[] a = new int[24];
    for (int i = 0; i < a.length; i++) {
      a[i] = i + 1;
    }
    long[] run = keys(a); // 12 blocks
    for (int part = 0; part < 12; part++) { // b differs from a in block `part` only
      int[] b = a.clone();
      b[2 * part + 1] = -1;
      long[] other = keys(b);
      int expected = Math.max(1, part); // the first keys are assumed equal
      assertThat(RadixPrefixIndex.commonPrefix(run, other, 0, 12)).isEqualTo(expected);
      assertThat(RadixPrefixIndex.commonPrefix(run, other, 0, part + 1)).isEqualTo(expected);
      assertThat(RadixPrefixIndex.commonPrefix(run, other, 0, Math.max(1, part)))
          .isEqualTo(expected);
    }
    assertThat(RadixPrefixIndex.commonPrefix(run, run, 0, 12)).isEqualTo(12);
    assertThat(RadixPrefixIndex.commonPrefix(run, keys(a), 0, 7)).isEqualTo(7);
    long[] longer = new long[20];
    System.arraycopy(run, 0, longer, 5, 12);
    assertThat(RadixPrefixIndex.commonPrefix(run, longer, 5, 20)).isEqualTo(12);
    assertThat(RadixPrefixIndex.commonPrefix(java.util.Arrays.copyOf(run, 5), longer, 5, 20))
        .isEqualTo(5);
  }

  @Test
  void aBufferWithAKeyCountActsAsItsFirstKeysOnly() {
    RadixPrefixIndex index = index(100, 100);
    long[] buffer = keys(1, 2, 3, 4, 5, 6, 7, 8); // 4 keys; only the first 2 are "the prompt"
    index.recordRouted(buffer, 2, 0, 1);
    assertThat(match(index, keys(1, 2, 3, 4, 5, 6, 7, 8), 0)).containsExactly(2);
    recordAll(index, keys(1, 2, 3, 4, 5, 6, 7, 8), 1, 1);
    int[] out = new int[2];
    index.match(buffer, 3, new int[] {0, 1}, 2, out);
    assertThat(out).containsExactly(2, 3);
    index.match(buffer, 0, new int[] {0, 1}, 2, out);
    assertThat(out).containsExactly(0, 0);
    assertThatThrownBy(() -> index.match(buffer, 5, new int[] {0}, 1, new int[1]))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("keyCount");
    assertThatThrownBy(() -> index.recordRouted(buffer, -1, 0, 1))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void slotsBeyondTheFirstWordWork() {
    RadixPrefixIndex index = RadixPrefixIndex.builder().maxBackends(300).build();
    index.addBackend(0, 10);
    index.addBackend(129, 10);
    index.addBackend(299, 10);
    recordAll(index, keys(1, 2, 3, 4), 129, 1);
    recordAll(index, keys(1, 2), 299, 1);
    assertThat(match(index, keys(1, 2, 3, 4), 0, 129, 299)).containsExactly(0, 2, 1);
  }

  @Test
  void leastRecentlyUsedBlocksGoFirstAndLeavesBeforeAncestors() {
    RadixPrefixIndex index = index(4);
    recordAll(index, keys(1, 1, 2, 2, 3, 3), 0, 1); // path A of 3 blocks
    recordAll(index, keys(7, 7), 0, 2); // path B of 1 block: 4 blocks held
    recordAll(index, keys(8, 8), 0, 3); // over capacity: A's leaf goes, not its root
    assertThat(match(index, keys(1, 1, 2, 2, 3, 3), 0)).containsExactly(2);
    assertThat(match(index, keys(7, 7), 0)).containsExactly(1);
    // re-routing A needs one block: it must not evict A's own head, but B (least recent)
    recordAll(index, keys(1, 1, 2, 2, 3, 3), 0, 4);
    assertThat(match(index, keys(7, 7), 0)).containsExactly(0);
    assertThat(match(index, keys(8, 8), 0)).containsExactly(1);
    assertThat(match(index, keys(1, 1, 2, 2, 3, 3), 0)).containsExactly(3);
    assertThat(index.heldBlocks(0)).isEqualTo(4);
    assertThat(index.stats().counters().get("evictions")).isEqualTo(2);
    // a path longer than the capacity keeps its head
    recordAll(index, keys(5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 1, 1), 0, 5);
    assertThat(match(index, keys(5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 1, 1), 0)).containsExactly(4);
  }

  @Test
  @Timeout(value = 20, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a corrupt list loops
  void reTouchingHeldPathsKeepsExactLruOrderAndSurvivesRepeatedKeys() {
    RadixPrefixIndex index = index(6);
    long[] a = {11, 12, 13};
    long[] b = {11, 12, 21}; // shares a's first two blocks: a is now two runs in the LRU list
    recordAll(index, a, 0, 1);
    recordAll(index, b, 0, 2);
    recordAll(index, a, 0, 3); // held: the spliced fast path; b's leaf is now least recent
    recordAll(index, new long[] {31, 32}, 0, 4); // 6 held
    recordAll(index, new long[] {41}, 0, 5); // evicts b's leaf 21, nothing of a
    assertThat(match(index, a, 0)).containsExactly(3);
    assertThat(match(index, b, 0)).containsExactly(2);
    // a path whose keys repeat (a hash collision) is six positions of the tree, not three
    long[] cycle = {11, 12, 13, 11, 12, 13};
    recordAll(index, cycle, 0, 6); // evicts 31, 32 and 41, keeps a (touched first)
    recordAll(index, cycle, 0, 7);
    assertThat(index.heldBlocks(0)).isEqualTo(6);
    assertThat(match(index, a, 0)).containsExactly(3);
    assertThat(match(index, cycle, 0)).containsExactly(6);
    recordAll(index, new long[] {51, 52, 53}, 0, 8); // evicts the cycle's tail, deepest first
    assertThat(match(index, a, 0)).containsExactly(3);
    assertThat(match(index, new long[] {31}, 0)).containsExactly(0);
    assertThat(match(index, new long[] {41}, 0)).containsExactly(0);
    assertThat(match(index, new long[] {51, 52, 53}, 0)).containsExactly(3);
    recordAll(index, new long[] {61, 62, 63, 64, 65, 66}, 0, 10); // evicts everything else
    assertThat(index.heldBlocks(0)).isEqualTo(6);
    assertThat(match(index, a, 0)).containsExactly(0);
    assertThat(match(index, new long[] {61, 62, 63, 64, 65, 66}, 0)).containsExactly(6);
    recordAll(index, new long[] {71, 72, 73, 74, 75, 76}, 0, 11);
    assertThat(match(index, new long[] {61}, 0)).containsExactly(0);
    assertThat(index.heldBlocks(0)).isEqualTo(6);
  }

  @Test
  @Timeout(value = 20, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void aHeldRouteRefreshesRecencyUnderItsMirrorLockAloneNotTheStructureLock() throws Exception {
    RadixPrefixIndex index = index(4, 4);
    long[] a = keys(1, 1, 2, 2);
    long[] b = keys(3, 3, 4, 4);
    recordAll(index, a, 0, 1);
    recordAll(index, b, 0, 2); // full: a is the next victim
    CountDownLatch locked = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Thread writer =
        new Thread(
            () -> {
              synchronized (index.structureLock()) {
                locked.countDown();
                try {
                  release.await();
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              }
            });
    writer.start();
    locked.await();
    try {
      recordAll(index, a, 0, 3); // held in full: returns while another thread holds the lock
    } finally {
      release.countDown();
      writer.join();
    }
    recordAll(index, keys(5, 5, 6, 6), 0, 4); // evicts b, not the refreshed a
    assertThat(match(index, a, 0)).containsExactly(2);
    assertThat(match(index, b, 0)).containsExactly(0);
    assertThat(index.listsConsistent(0)).isTrue();
  }

  @Test
  void lruAgeIsHowLongAgoTheNextVictimWasTouchedOnceTheMirrorIsFull() {
    RadixPrefixIndex index = index(4, 4);
    assertThat(index.signal(0, IndexSignal.LRU_AGE_NANOS, 100))
        .as("empty: room")
        .isEqualTo(IndexSignal.ABSENT);
    recordAll(index, keys(1, 1, 2, 2, 3, 3), 0, 1_000); // stamps 1000 (leaf) .. 1002 (root)
    assertThat(index.signal(0, IndexSignal.LRU_AGE_NANOS, 5_000))
        .as("3 of 4: room")
        .isEqualTo(IndexSignal.ABSENT);
    recordAll(index, keys(5, 5), 0, 2_000);
    assertThat(index.signal(0, IndexSignal.HELD_BLOCKS, 5_000)).isEqualTo(4);
    assertThat(index.signal(0, IndexSignal.CONFIRMED_BLOCKS, 5_000)).isZero();
    assertThat(index.signal(0, IndexSignal.OFFLOADED_BLOCKS, 5_000)).isEqualTo(IndexSignal.ABSENT);
    assertThat(index.signal(0, IndexSignal.LRU_AGE_NANOS, 5_000))
        .as("full: path A's leaf goes next")
        .isEqualTo(4_000);
    recordAll(index, keys(1, 1, 2, 2, 3, 3), 0, 3_000);
    assertThat(index.signal(0, IndexSignal.LRU_AGE_NANOS, 5_000))
        .as("A re-touched: B goes next")
        .isEqualTo(3_000);
    assertThat(index.signal(0, IndexSignal.LRU_AGE_NANOS, 0))
        .as("a clock behind the stamps")
        .isZero();
    assertThat(index.signal(1, IndexSignal.LRU_AGE_NANOS, 5_000)).isEqualTo(IndexSignal.ABSENT);
    assertThat(index.signal(7, IndexSignal.LRU_AGE_NANOS, 5_000))
        .as("unused slot")
        .isEqualTo(IndexSignal.ABSENT);
    assertThat(index.signal(-1, IndexSignal.LRU_AGE_NANOS, 5_000))
        .as("no such slot")
        .isEqualTo(IndexSignal.ABSENT);
    index.setCapacity(0, 8);
    assertThat(index.signal(0, IndexSignal.LRU_AGE_NANOS, 5_000))
        .as("capacity raised: room")
        .isEqualTo(IndexSignal.ABSENT);
    index.setCapacity(0, 4);
    assertThat(index.signal(0, IndexSignal.LRU_AGE_NANOS, 5_000)).isEqualTo(3_000);
    index.removeBackend(0);
    assertThat(index.signal(0, IndexSignal.LRU_AGE_NANOS, 5_000)).isEqualTo(IndexSignal.ABSENT);
  }

  @Test
  void shrinkingCapacityEvictsAtOnceAndNodesAreReclaimed() {
    RadixPrefixIndex index = index(100, 100);
    recordAll(index, keys(1, 2, 3, 4, 5, 6, 7, 8), 0, 1);
    recordAll(index, keys(1, 2, 3, 4), 1, 1);
    assertThat(index.stats().nodes()).as("one run split where backend 1's path ends").isEqualTo(2);
    index.setCapacity(0, 1);
    assertThat(index.heldBlocks(0)).isEqualTo(1);
    assertThat(match(index, keys(1, 2, 3, 4, 5, 6, 7, 8), 0, 1)).containsExactly(1, 2);
    assertThat(index.stats().nodes()).as("the run only backend 0 held is unlinked").isEqualTo(1);
  }

  @Test
  void removeBackendClearsEverythingAndFreesTheSlot() {
    RadixPrefixIndex index = index();
    long baseline = index.stats().approximateBytes();
    index.addBackend(0, 100);
    index.addBackend(1, 100);
    for (int i = 0; i < 2_000; i++) {
      recordAll(index, keys(i, i, i + 1, i + 1), i % 2, i);
    }
    assertThat(index.stats().approximateBytes()).isGreaterThan(baseline);
    index.removeBackend(0);
    index.removeBackend(1);
    IndexStats s = index.stats();
    assertThat(s.nodes()).isZero();
    assertThat(s.predictedBlocks()).isZero();
    assertThat(s.approximateBytes()).as("memory back to the empty baseline").isEqualTo(baseline);
    index.addBackend(0, 5); // slot reusable
    assertThat(match(index, keys(1, 1, 2, 2), 0)).containsExactly(0);
    assertThatThrownBy(() -> index.addBackend(0, 5)).hasMessageContaining("already in use");
    assertThatThrownBy(() -> index.addBackend(130, 5)).hasMessageContaining("maxBackends");
  }

  @Test
  void blockStoredConfirmsBlocksRecomputedFromTokens() {
    RadixPrefixIndex index = index(100);
    long h1 = EngineHashes.fromUnsignedString("15760518052499183552"); // > Long.MAX_VALUE
    index.apply(
        0, new BlockStored(new long[] {h1, 22}, null, new int[] {1, 2, 3, 4}, 2, "GPU"), H, 1);
    index.apply(0, new BlockStored(new long[] {33}, 22L, new int[] {5, 6}, 2, null), H, 2);
    assertThat(match(index, keys(1, 2, 3, 4, 5, 6, 7, 8), 0)).containsExactly(3);
    IndexStats s = index.stats();
    assertThat(s.confirmedBlocks()).isEqualTo(3);
    assertThat(s.predictedBlocks()).isZero();
    index.apply(0, BlockRemoved.of(22), H, 3);
    assertThat(match(index, keys(1, 2, 3, 4, 5, 6), 0)).containsExactly(1);
    index.apply(0, AllBlocksCleared.INSTANCE, H, 4);
    assertThat(match(index, keys(1, 2, 3, 4, 5, 6), 0)).containsExactly(0);
    assertThat(index.stats().counters()).containsEntry("kv.cleared", 1L);
  }

  @Test
  void storesLongerThanTheKeyBufferAreKeyedWholeAndLaterShortOnesToo() {
    RadixPrefixIndex index = index(1_000);
    int blocks = 100; // beyond the index's first key buffer (64)
    long[] hashes = new long[blocks];
    int[] tokens = new int[2 * blocks];
    for (int i = 0; i < blocks; i++) {
      hashes[i] = 1_000 + i;
    }
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = i + 1;
    }
    index.apply(0, new BlockStored(hashes, null, tokens, 2, "GPU"), H, 1);
    index.apply(0, new BlockStored(new long[] {5}, null, new int[] {9, 9}, 2, "GPU"), H, 2);
    assertThat(match(index, keys(tokens), 0)).containsExactly(blocks);
    assertThat(match(index, keys(9, 9), 0)).containsExactly(1);
    assertThat(index.stats().confirmedBlocks()).isEqualTo(blocks + 1);
  }

  @Test
  void routedPredictionsAreConfirmedByMatchingEvents() {
    RadixPrefixIndex index = index(100);
    recordAll(index, keys(1, 2, 3, 4), 0, 1);
    assertThat(index.stats().predictedBlocks()).isEqualTo(2);
    index.apply(
        0, new BlockStored(new long[] {10, 11}, null, new int[] {1, 2, 3, 4}, 2, "GPU"), H, 2);
    assertThat(index.stats().predictedBlocks()).isZero();
    assertThat(index.stats().confirmedBlocks()).isEqualTo(2);
  }

  /** Slots 0 and 1 hold the 4-block run {@code 10..13}, slot 1 also its 1-block extension. */
  private static RadixPrefixIndex twoHolders() {
    RadixPrefixIndex index = index(100, 100);
    int[] tokens = {1, 2, 3, 4, 5, 6, 7, 8};
    index.apply(0, new BlockStored(new long[] {10, 11, 12, 13}, null, tokens, 2, "GPU"), H, 1);
    index.apply(1, new BlockStored(new long[] {10, 11, 12, 13}, null, tokens, 2, "GPU"), H, 1);
    index.apply(1, new BlockStored(new long[] {14}, 13L, new int[] {9, 9}, 2, "GPU"), H, 2);
    return index;
  }

  /** What a test can see of an index: matches of every prefix, held blocks, LRU age, counts. */
  private static String observable(RadixPrefixIndex index) {
    StringBuilder b = new StringBuilder();
    long[] path = keys(1, 2, 3, 4, 5, 6, 7, 8, 9, 9);
    long[] suffix = java.util.Arrays.copyOfRange(path, 2, path.length);
    for (long[] k : new long[][] {path, suffix}) {
      for (int n = 1; n <= k.length; n++) {
        b.append(java.util.Arrays.toString(match(index, java.util.Arrays.copyOf(k, n), 0, 1)));
      }
    }
    for (int slot = 0; slot < 2; slot++) {
      b.append(" held ").append(index.heldBlocks(slot));
      b.append(" age ").append(index.signal(slot, IndexSignal.LRU_AGE_NANOS, 10));
    }
    IndexStats s = index.stats();
    b.append(" confirmed ").append(s.confirmedBlocks()).append(" predicted ");
    b.append(s.predictedBlocks()).append(' ').append(s.counters().get("kv.removed"));
    return b.toString();
  }

  @Test
  void aHeadFirstRemovalInOneEventShortensOnceWithoutASplitPerBlock() {
    // a head-first removal of a whole run in one event: one shortening, no split (a split per
    // block left the dead node forwarding to new nodes: GC nepotism once the dead one is tenured)
    RadixPrefixIndex whole = twoHolders();
    long splits = whole.stats().counters().get("splits");
    whole.apply(0, new BlockRemoved(new long[] {10, 11, 12, 13}, "GPU"), H, 3);
    assertThat(whole.stats().counters().get("splits")).isEqualTo(splits);
    assertThat(whole.heldBlocks(0)).isZero();
    assertThat(match(whole, keys(1, 2, 3, 4, 5, 6, 7, 8, 9, 9), 0, 1)).containsExactly(0, 5);

    // the head of the run only: one split (after the last removed block), not one per block
    RadixPrefixIndex head = twoHolders();
    splits = head.stats().counters().get("splits");
    head.apply(0, new BlockRemoved(new long[] {10, 11}, "GPU"), H, 3);
    assertThat(head.stats().counters().get("splits")).isEqualTo(splits + 1);
    assertThat(head.heldBlocks(0)).isEqualTo(2); // blocks 12, 13 stay, after the gap

    // the same end state as the same removals one event per block, in every order tried
    long[][] removals = {{10, 11, 12, 13}, {10, 11}, {11, 12}, {12, 13}, {13, 12}, {11, 13}};
    for (long[] hashes : removals) {
      RadixPrefixIndex together = twoHolders();
      RadixPrefixIndex oneByOne = twoHolders();
      together.apply(0, new BlockRemoved(hashes, "GPU"), H, 3);
      for (long h : hashes) {
        oneByOne.apply(0, BlockRemoved.of(h), H, 3);
      }
      assertThat(observable(together))
          .as("removing %s", java.util.Arrays.toString(hashes))
          .isEqualTo(observable(oneByOne));
      assertThat(together.listsConsistent(0)).isTrue();
      assertThat(together.listsConsistent(1)).isTrue();
      assertThat(together.stats().nodes()).isLessThanOrEqualTo(oneByOne.stats().nodes());
    }
  }

  @Test
  void duplicatesNeedAsManyRemovals() {
    RadixPrefixIndex index = index(100);
    BlockStored s = new BlockStored(new long[] {10}, null, new int[] {1, 2}, 2, "GPU");
    index.apply(0, s, H, 1);
    index.apply(0, s, H, 2);
    index.apply(0, BlockRemoved.of(10), H, 3);
    assertThat(match(index, keys(1, 2), 0)).containsExactly(1);
    index.apply(0, BlockRemoved.of(10), H, 4);
    assertThat(match(index, keys(1, 2), 0)).containsExactly(0);
    assertThat(index.stats().counters()).containsEntry("kv.duplicate", 1L);
  }

  /**
   * The same engine hash stored again under another seed (another tenant's salt learnt between the
   * copies) keys to another router key: the store stops before it and counts it, so no block is
   * confirmed under a key that the hash's removals would never release.
   */
  @Test
  void aHashStoredAgainUnderAnotherSeedConfirmsNothingNew() {
    RadixPrefixIndex index = index(100);
    BlockStored s = new BlockStored(new long[] {10, 11}, null, new int[] {1, 2, 3, 4}, 2, "GPU");
    index.apply(0, s, H, 7L, 1);
    index.apply(0, s, H, 8L, 2);
    assertThat(index.stats().counters()).containsEntry("kv.keyConflict", 1L);
    long[] seven = BlockHasher.keysOf(H, Prompt.ofTokens(1, 2, 3, 4), 7L);
    long[] eight = BlockHasher.keysOf(H, Prompt.ofTokens(1, 2, 3, 4), 8L);
    assertThat(match(index, eight, 0)).containsExactly(0);
    assertThat(match(index, seven, 0)).containsExactly(2);
    index.apply(0, BlockRemoved.of(10, 11), H, 3);
    assertThat(match(index, seven, 0)).containsExactly(2); // two copies: one removal each
    index.apply(0, BlockRemoved.of(10, 11), H, 4);
    assertThat(match(index, seven, 0)).containsExactly(0);
    assertThat(index.heldBlocks(0)).as("nothing left behind").isZero();
  }

  @Test
  void anomaliesAreCountedAndChangeNothing() {
    RadixPrefixIndex index = index(100);
    recordAll(index, keys(1, 2), 0, 1);
    long nodes = index.stats().nodes();
    index.apply(0, new BlockStored(new long[] {5}, 999L, new int[] {3, 4}, 2, "GPU"), H, 2);
    index.apply(0, BlockRemoved.of(12345), H, 3);
    index.apply(0, new BlockStored(new long[] {6}, null, new int[0], 2, "CPU"), H, 4);
    index.apply(0, new BlockStored(new long[] {6}, null, new int[0], 2, null), H, 4);
    index.apply(0, new BlockStored(new long[] {7}, null, new int[] {1, 2, 3}, 3, "GPU"), H, 5);
    assertThat(index.stats().counters())
        .containsEntry("kv.unknownParent", 1L)
        .containsEntry("kv.unknownRemoval", 1L)
        .containsEntry("kv.otherMedium", 1L)
        .containsEntry("kv.noTokens", 1L)
        .containsEntry("kv.blockSizeMismatch", 1L);
    assertThat(index.stats().nodes()).isEqualTo(nodes);
    assertThat(match(index, keys(1, 2), 0)).containsExactly(1);
  }

  @Test
  void offloadedCopiesAreCountedAndTheirRemovalLeavesTheGpuCopy() {
    RadixPrefixIndex index = index(100);
    BlockStored gpu = new BlockStored(new long[] {10, 11}, null, new int[] {1, 2, 3, 4}, 2, "GPU");
    index.apply(0, gpu, H, 1);
    assertThat(index.signal(0, IndexSignal.OFFLOADED_BLOCKS, 2)).isEqualTo(IndexSignal.ABSENT);
    index.apply(0, new BlockStored(new long[] {10, 11}, null, new int[0], 2, "CPU"), H, 2);
    assertThat(index.signal(0, IndexSignal.OFFLOADED_BLOCKS, 3)).isEqualTo(2);
    index.apply(0, new BlockRemoved(new long[] {10, 11}, "cpu"), H, 3);
    assertThat(index.signal(0, IndexSignal.OFFLOADED_BLOCKS, 4)).isZero();
    assertThat(match(index, keys(1, 2, 3, 4), 0)).as("the GPU copy stays").containsExactly(2);
    index.apply(0, new BlockRemoved(new long[] {11}, null), H, 4); // no medium: the GPU's
    assertThat(match(index, keys(1, 2, 3, 4), 0)).containsExactly(1);
    index.apply(0, new BlockStored(new long[] {12}, null, new int[0], 2, "disk"), H, 5);
    index.apply(0, AllBlocksCleared.INSTANCE, H, 6);
    assertThat(index.signal(0, IndexSignal.OFFLOADED_BLOCKS, 7)).isZero();
    assertThat(index.stats().counters()).containsEntry("kv.otherMedium", 3L);
  }

  @Test
  void outOfOrderRemovalBeforeStoreIsHarmless() {
    RadixPrefixIndex index = index(100);
    index.apply(0, BlockRemoved.of(10), H, 1);
    index.apply(0, new BlockStored(new long[] {10}, null, new int[] {1, 2}, 2, "GPU"), H, 2);
    assertThat(match(index, keys(1, 2), 0)).containsExactly(1);
  }

  @Test
  void predictionsExpireOnlyOnceTheBackendSendsEvents() {
    RadixPrefixIndex index = index(100, 100);
    long second = 1_000_000_000L;
    recordAll(index, keys(1, 2), 0, 0);
    recordAll(index, keys(1, 2), 1, 0);
    index.apply(1, new BlockStored(new long[] {10}, null, new int[] {7, 7}, 2, "GPU"), H, 0);
    recordAll(index, keys(3, 4), 0, 5 * second);
    recordAll(index, keys(3, 4), 1, 5 * second); // sweeps backend 1's old predictions
    assertThat(match(index, keys(1, 2), 0, 1)).containsExactly(1, 0);
    assertThat(match(index, keys(7, 7), 1)).containsExactly(1); // confirmed blocks stay
    assertThat(index.stats().counters().get("expiredPredictions")).isEqualTo(1);
  }

  @Test
  void engineMapStaysBoundedWhenTheMirrorEvicts() {
    RadixPrefixIndex index = index(4);
    for (int i = 0; i < 5_000; i++) {
      index.apply(0, new BlockStored(new long[] {i}, null, new int[] {i, i}, 2, "GPU"), H, i);
    }
    assertThat(index.heldBlocks(0)).isEqualTo(4);
    assertThat(index.stats().counters().get("kv.mappingsEvicted")).isPositive();
    assertThat(index.stats().approximateBytes()).isLessThan(200_000);
  }

  @Test
  void aSlotGivenTwiceGetsItsAnswerAtBothPositions() {
    RadixPrefixIndex index = index(100, 100);
    recordAll(index, keys(1, 2, 3, 4), 0, 1);
    recordAll(index, keys(1, 2), 1, 1);
    assertThat(match(index, keys(1, 2, 3, 4), 0, 1, 0, -1, 1)).containsExactly(2, 1, 2, 0, 1);
    assertThat(index.stats().counters().get("unknownSlot")).isEqualTo(1);
  }

  @Test
  void badSlotsAreCountedNeverThrown() {
    RadixPrefixIndex index = index(100);
    recordAll(index, keys(1, 2), 0, 1);
    assertThat(match(index, keys(1, 2), -1, 0, 500, 7)).containsExactly(0, 1, 0, 0);
    recordAll(index, keys(1, 2), 500, 1);
    recordAll(index, keys(1, 2), 7, 1); // in range, not in use
    index.apply(7, BlockRemoved.of(1), H, 1);
    index.apply(-3, AllBlocksCleared.INSTANCE, H, 1);
    index.setCapacity(9, 5);
    index.removeBackend(70_000);
    assertThat(index.stats().counters().get("unknownSlot")).isEqualTo(8);
    assertThat(index.signal(500, IndexSignal.LRU_AGE_NANOS, 1)).isEqualTo(IndexSignal.ABSENT);
    index.removeBackend(0);
    index.apply(0, BlockRemoved.of(1), H, 2); // an event racing the backend's removal
    assertThat(index.stats().counters().get("unknownSlot")).isEqualTo(9);
  }

  @Test
  void aRemovedBlockInsideARunLeavesAGapThatAStoreFills() {
    RadixPrefixIndex index = index(100);
    index.apply(
        0,
        new BlockStored(
            new long[] {10, 11, 12, 13}, null, new int[] {1, 1, 2, 2, 3, 3, 4, 4}, 2, null),
        H,
        1);
    long[] path = keys(1, 1, 2, 2, 3, 3, 4, 4);
    assertThat(match(index, path, 0)).containsExactly(4);
    index.apply(0, BlockRemoved.of(11), H, 2);
    assertThat(match(index, path, 0)).as("match stops at the gap").containsExactly(1);
    assertThat(index.heldBlocks(0)).as("the blocks after the gap stay").isEqualTo(3);
    index.apply(0, new BlockStored(new long[] {11}, 10L, new int[] {2, 2}, 2, null), H, 3);
    assertThat(match(index, path, 0)).containsExactly(4);
    assertThat(index.stats().confirmedBlocks()).isEqualTo(4);
    assertThat(index.listsConsistent(0)).isTrue();
  }

  @Test
  void aStoreBelowAParentTheMirrorEvictedIsPlacedOnItsPath() {
    RadixPrefixIndex index = index(2, 100);
    index.apply(0, new BlockStored(new long[] {10}, null, new int[] {1, 1}, 2, null), H, 1);
    recordAll(index, keys(5, 5, 6, 6), 0, 2); // evicts block (1, 1): its node is unlinked
    assertThat(match(index, keys(1, 1), 0)).containsExactly(0);
    index.apply(0, new BlockStored(new long[] {20}, 10L, new int[] {2, 2}, 2, null), H, 3);
    assertThat(index.stats().counters()).containsEntry("kv.unknownParent", 0L);
    assertThat(match(index, keys(1, 1, 2, 2), 0)).as("held after a gap").containsExactly(0);
    recordAll(index, keys(1, 1), 1, 4);
    assertThat(match(index, keys(1, 1, 2, 2), 0, 1)).containsExactly(0, 1);
    recordAll(index, keys(1, 1), 0, 5);
    assertThat(match(index, keys(1, 1, 2, 2), 0)).as("the gap filled").containsExactly(2);
    assertThat(index.listsConsistent(0)).isTrue();
  }

  /**
   * A store that must evict never takes its own prefix: its parent block was the mirror's least
   * recent, and the eviction made room for the new block by evicting it, which left the new block
   * held below a block nobody held (a match of the path found 1 block where the engine holds 3).
   */
  @Test
  void aStoreThatMustEvictKeepsItsOwnPrefix() {
    RadixPrefixIndex index = index(4);
    index.apply(
        0, new BlockStored(new long[] {10, 11}, null, new int[] {1, 1, 2, 2}, 2, null), H, 1);
    recordAll(index, keys(5, 5, 6, 6), 0, 2); // full: (1, 1), (2, 2) least recent
    index.apply(0, new BlockStored(new long[] {12}, 11L, new int[] {3, 3}, 2, null), H, 3);
    assertThat(match(index, keys(1, 1, 2, 2, 3, 3), 0)).containsExactly(3);
    assertThat(index.heldBlocks(0)).isEqualTo(4);
    assertThat(index.listsConsistent(0)).isTrue();
    // a store longer than the room below its prefix holds what fits below it
    index.apply(
        0,
        new BlockStored(new long[] {13, 14, 15}, 12L, new int[] {4, 4, 7, 7, 8, 8}, 2, null),
        H,
        4);
    assertThat(match(index, keys(1, 1, 2, 2, 3, 3, 4, 4, 7, 7, 8, 8), 0)).containsExactly(4);
    assertThat(index.heldBlocks(0)).isEqualTo(4);
    assertThat(index.listsConsistent(0)).isTrue();
  }

  /**
   * Head-first removals leave keys nobody holds above a held block. Rounds of "store C/2 fresh
   * blocks, remove all but the last, head first" kept about C²/4 keys (10,000 at C = 200); the tree
   * now prunes them once they exceed the capacity by the budget (the capacity again).
   */
  @Test
  void keysNobodyHoldsAreBoundedByTheCapacities() {
    int capacity = 200;
    RadixPrefixIndex index = index(capacity, capacity);
    int half = capacity / 2;
    long hash = 0;
    long maxKeys = 0;
    for (int round = 0; round < half; round++) {
      int[] tokens = new int[2 * half];
      long[] hashes = new long[half];
      for (int i = 0; i < half; i++) {
        tokens[2 * i] = tokens[2 * i + 1] = 1_000 * round + i + 1;
        hashes[i] = ++hash;
      }
      index.apply(0, new BlockStored(hashes, null, tokens, 2, null), H, round);
      index.apply(0, new BlockRemoved(Arrays.copyOf(hashes, half - 1), null), H, round);
      maxKeys = Math.max(maxKeys, index.stats().counters().get("treeKeys"));
    }
    assertThat(maxKeys).isLessThanOrEqualTo(4L * capacity); // twice the sum of the capacities
    Map<String, Long> counters = index.stats().counters();
    assertThat(counters.get("prunes")).isPositive();
    assertThat(counters.get("prunedBlocks")).isPositive();
    assertThat(index.heldBlocks(0) + counters.get("prunedBlocks")).isEqualTo(half);
    assertThat(index.listsConsistent(0)).isTrue();
    // what a match can reach is untouched: a held path on another backend, and this one's
    recordAll(index, keys(7, 7, 8, 8), 1, 1_000);
    recordAll(index, keys(7, 7, 8, 8, 9, 9), 0, 1_001);
    assertThat(match(index, keys(7, 7, 8, 8, 9, 9), 0, 1)).containsExactly(3, 2);
    index.removeBackend(0);
    index.removeBackend(1);
    assertThat(index.stats().nodes()).isZero();
    assertThat(index.stats().counters().get("treeKeys")).isZero();
  }

  @Test
  void perBlockHeadFirstRemovalsKeepKeysLinearInTheRun() {
    int run = 512;
    RadixPrefixIndex index = index(4 * run);
    int[] tokens = new int[2 * run];
    long[] hashes = new long[run];
    for (int i = 0; i < run; i++) {
      tokens[2 * i] = tokens[2 * i + 1] = i + 1;
      hashes[i] = 1_000 + i;
    }
    index.apply(0, new BlockStored(hashes, null, tokens, 2, null), H, 1);
    for (int i = 0; i < run - 1; i++) { // one event per block, head first: a split per block
      index.apply(0, BlockRemoved.of(hashes[i]), H, 2 + i);
    }
    // each split once copied the rest of the run, and the mappings kept the copies reachable
    // through the split chain: about run² / 2 keys (131,328 here)
    assertThat(index.keysKeptByMappings(0)).isLessThanOrEqualTo(4L * run);
    assertThat(index.heldBlocks(0)).isEqualTo(1);
    assertThat(index.listsConsistent(0)).isTrue();
    long[] all = keys(tokens);
    assertThat(match(index, all, 0)).containsExactly(0); // the gap hides the last block
    // stored again, the head reconnects to the block held after it (the engine's gap semantics)
    index.apply(
        0,
        new BlockStored(
            Arrays.copyOf(hashes, run - 1), null, Arrays.copyOf(tokens, 2 * run - 2), 2, null),
        H,
        10_000);
    assertThat(match(index, all, 0)).containsExactly(run);
    assertThat(index.listsConsistent(0)).isTrue();
  }

  @Test
  void anEvictedChainOfDecodeStoresIsFoundAgainWithoutRecursion() {
    int depth = 20_000; // decode-time stores: one block each, below the previous one
    BlockHasher h1 = BlockHashers.tokens(1);
    RadixPrefixIndex index = index(depth + 10);
    index.apply(0, new BlockStored(new long[] {0}, null, new int[] {0}, 1, null), h1, 0);
    for (int i = 1; i < depth; i++) {
      index.apply(
          0, new BlockStored(new long[] {i}, (long) (i - 1), new int[] {i}, 1, null), h1, i);
    }
    long[] other = new long[depth + 10];
    for (int i = 0; i < other.length; i++) {
      other[i] = 0x9E3779B97F4A7C15L * (i + 7);
    }
    index.recordRouted(
        other, other.length, 0, depth); // evicts the whole chain: every node unlinked
    assertThat(index.heldBlocks(0)).isEqualTo(depth + 10);
    // a store below the chain's last block finds its path again (each level re-made once; it
    // recursed a level per node and overflowed the stack)
    index.apply(
        0,
        new BlockStored(new long[] {depth}, (long) (depth - 1), new int[] {depth}, 1, null),
        h1,
        depth + 1);
    int[] tokens = new int[depth + 1];
    for (int i = 0; i <= depth; i++) {
      tokens[i] = i;
    }
    long[] chain = BlockHasher.keysOf(h1, Prompt.ofTokens(tokens), 0);
    assertThat(match(index, chain, 0)).containsExactly(0); // held below blocks nobody holds
    // the engine frees the chain tail first: every removal finds its block's path or its absence
    for (int i = depth; i >= 0; i--) {
      index.apply(0, BlockRemoved.of(i), h1, depth + 2 + (depth - i));
    }
    Map<String, Long> counters = index.stats().counters();
    assertThat(counters.get("kv.removed")).isEqualTo(depth + 1);
    assertThat(counters.get("kv.unknownRemoval")).isZero();
    assertThat(index.heldBlocks(0)).isEqualTo(depth + 9); // the store evicted one routed block
    assertThat(index.listsConsistent(0)).isTrue();
    // stored again from the head, the chain is held whole
    index.apply(
        0, new BlockStored(new long[] {0, 1}, null, new int[] {0, 1}, 1, null), h1, 1L << 40);
    assertThat(match(index, chain, 0)).containsExactly(2);
  }

  @Test
  void aRemovalFindsItsBlockAfterTheNodeWasEvictedAndMadeAgain() {
    RadixPrefixIndex index = index(2);
    index.apply(0, new BlockStored(new long[] {10}, null, new int[] {1, 1}, 2, null), H, 1);
    recordAll(index, keys(5, 5, 6, 6), 0, 2); // evicts (1, 1): its node is unlinked
    recordAll(index, keys(1, 1), 0, 3); // held again, in a new node
    assertThat(match(index, keys(1, 1), 0)).containsExactly(1);
    index.apply(0, BlockRemoved.of(10), H, 4);
    assertThat(match(index, keys(1, 1), 0)).containsExactly(0);
    assertThat(index.heldBlocks(0)).isEqualTo(1);
    assertThat(index.listsConsistent(0)).isTrue();
  }

  @Test
  void engineMappingsAreBoundedPerBackend() {
    RadixPrefixIndex index = index(1);
    for (int i = 0; i < 10_000; i++) { // distinct hashes for the same tokens (salts, restarts)
      index.apply(0, new BlockStored(new long[] {i}, null, new int[] {1, 1}, 2, null), H, i);
    }
    assertThat(index.heldBlocks(0)).isEqualTo(1);
    assertThat(index.stats().counters().get("kv.mappingsEvicted")).isEqualTo(10_000 - 1026);
    assertThat(index.stats().counters().get("kv.duplicate")).isZero();
  }

  @Test
  void zeroKeyIsStoredLikeAnyOther() {
    RadixPrefixIndex index = index(10);
    recordAll(index, new long[] {0L, 5L}, 0, 1);
    assertThat(match(index, new long[] {0L, 5L}, 0)).containsExactly(2);
  }

  @Test
  void builderValidates() {
    assertThatThrownBy(() -> RadixPrefixIndex.builder().maxBackends(0))
        .hasMessageContaining("maxBackends");
    assertThatThrownBy(() -> RadixPrefixIndex.builder().predictionTtl(Duration.ofSeconds(-1)))
        .hasMessageContaining("predictionTtl");
    assertThatThrownBy(() -> index(1).addBackend(1, -1)).hasMessageContaining("capacityBlocks");
    assertThatThrownBy(() -> RadixPrefixIndex.builder().predictionTtl(Duration.ofDays(365L * 300)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("predictionTtl must be at most");
    assertThat(RadixPrefixIndex.builder().predictionTtl(Duration.ofNanos(Long.MAX_VALUE)).build())
        .isNotNull();
  }

  private static void recordAll(PrefixIndex index, long[] keys, int slot, long nowNanos) {
    index.recordRouted(keys, keys.length, slot, nowNanos);
  }
}
