package dev.prefixrouter.radix;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.spi.IndexSignal;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The index follows the engines' cached counts by learning the capacity it models. */
class CapacityFeedbackTest {

  /** Keys of a 4-block path with its own first key. */
  private static long[] path(long id) {
    return new long[] {id * 100 + 1, id * 100 + 2, id * 100 + 3, id * 100 + 4};
  }

  private static int matched(RadixPrefixIndex index, long[] keys) {
    int[] out = new int[1];
    index.match(keys, keys.length, new int[] {0}, 1, out);
    return out[0];
  }

  private static RadixPrefixIndex index(boolean feedback) {
    RadixPrefixIndex index =
        RadixPrefixIndex.builder()
            .maxBackends(4)
            .predictionTtl(Duration.ofSeconds(1))
            .capacityFeedback(feedback)
            .build();
    index.addBackend(0, 40); // room for 10 paths of 4 blocks
    return index;
  }

  @Test
  void theRuleShrinksOnStaleBeliefsAndGrowsBackWithinItsBounds() {
    // stale = predicted - engine - in flight; from min(capacity, held)
    assertThat(CapacityFeedback.next(100, 100, 60, 10, 2, 0)).isEqualTo(52);
    assertThat(CapacityFeedback.next(100, 100, 60, 10, 2, 8)).isEqualTo(100); // explained
    assertThat(CapacityFeedback.next(100, 100, 60, 10, 2, 5)).isEqualTo(57);
    assertThat(CapacityFeedback.next(100, 20, 20, 90, 0, 0)).isEqualTo(12); // floor: 100 / 8
    assertThat(CapacityFeedback.next(100, 50, 50, 2, 10, 0)).isEqualTo(58); // under: grows
    assertThat(CapacityFeedback.next(100, 95, 95, 2, 10, 0)).isEqualTo(100); // up to configured
    assertThat(CapacityFeedback.next(100, 100, 100, 2, 10, 0)).isEqualTo(100);
    assertThat(CapacityFeedback.floor(3)).isEqualTo(1);
  }

  @Test
  void aStaleReportDropsTheOldestBeliefsAndKeepsTheRecentOnes() {
    RadixPrefixIndex index = index(true);
    for (int p = 0; p < 10; p++) {
      index.recordRouted(path(p), 4, 0, p);
    }
    assertThat(index.heldBlocks(0)).isEqualTo(40);
    // path 9 was routed believing 3 blocks (capped before the last token); the engine held 0
    index.onEngineCached(0, 3, 0, 0, 20);
    assertThat(index.signal(0, IndexSignal.CAPACITY_BLOCKS, 20)).isEqualTo(37);
    assertThat(index.heldBlocks(0)).isEqualTo(37);
    assertThat(matched(index, path(0))).isEqualTo(1); // the oldest path lost its tail first
    assertThat(matched(index, path(9))).isEqualTo(4);
    index.onEngineCached(0, 3, 0, 0, 21);
    index.onEngineCached(0, 3, 0, 0, 22);
    assertThat(index.heldBlocks(0)).isEqualTo(31);
    assertThat(matched(index, path(0))).isZero();
    assertThat(matched(index, path(1))).isZero();
    assertThat(matched(index, path(2))).isEqualTo(3);
    assertThat(index.listsConsistent(0)).isTrue();
  }

  @Test
  void underPredictionRestoresCapacityUpToTheConfiguredSize() {
    RadixPrefixIndex index = index(true);
    for (int p = 0; p < 10; p++) {
      index.recordRouted(path(p), 4, 0, p);
    }
    index.onEngineCached(0, 3, 0, 0, 20); // 37
    index.onEngineCached(0, 0, 2, 0, 21); // the engine held 2 the mirror had dropped
    assertThat(index.signal(0, IndexSignal.CAPACITY_BLOCKS, 21)).isEqualTo(39);
    index.onEngineCached(0, 0, 3, 0, 22);
    assertThat(index.signal(0, IndexSignal.CAPACITY_BLOCKS, 22)).isEqualTo(40);
    index.setCapacity(0, 80); // a new configured size resets what was learned
    index.onEngineCached(0, 0, 3, 0, 23);
    assertThat(index.signal(0, IndexSignal.CAPACITY_BLOCKS, 23)).isEqualTo(80);
  }

  @Test
  void explainedMissesTheOffSwitchAndBackendsWithEventsChangeNothing() {
    RadixPrefixIndex on = index(true);
    RadixPrefixIndex off = index(false);
    for (RadixPrefixIndex index : new RadixPrefixIndex[] {on, off}) {
      for (int p = 0; p < 10; p++) {
        index.recordRouted(path(p), 4, 0, p);
      }
    }
    on.onEngineCached(0, 3, 0, 3, 20); // requests in flight may have been bringing them
    off.onEngineCached(0, 3, 0, 0, 20);
    assertThat(on.heldBlocks(0)).isEqualTo(40);
    assertThat(off.heldBlocks(0)).isEqualTo(40);
    assertThat(off.signal(0, IndexSignal.CAPACITY_BLOCKS, 20)).isEqualTo(40);

    on.apply(0, new BlockStored(new long[] {7}, null, new int[] {1, 2}, 2, null), H, 21);
    on.onEngineCached(0, 3, 0, 0, 22); // events are authoritative there
    assertThat(on.signal(0, IndexSignal.CAPACITY_BLOCKS, 22)).isEqualTo(40);
    on.onEngineCached(9, 3, 0, 0, 22); // unknown slot: ignored
    on.onEngineCached(0, -1, -5, -2, 22); // nonsense counts: nothing to learn
    assertThat(on.signal(0, IndexSignal.CAPACITY_BLOCKS, 22)).isEqualTo(40);
  }

  /**
   * A capacity feedback shrank before the backend's first KV event stayed shrunk once events
   * arrived: feedback stops for a backend with events, and nothing restored the configured size.
   */
  @Test
  void theFirstKvEventRestoresTheConfiguredCapacity() {
    RadixPrefixIndex index = index(true);
    for (int p = 0; p < 10; p++) {
      index.recordRouted(path(p), 4, 0, p);
    }
    index.onEngineCached(0, 3, 0, 0, 20);
    assertThat(index.signal(0, IndexSignal.CAPACITY_BLOCKS, 20)).isEqualTo(37);
    index.apply(0, new BlockStored(new long[] {7}, null, new int[] {1, 2}, 2, null), H, 21);
    assertThat(index.signal(0, IndexSignal.CAPACITY_BLOCKS, 21)).isEqualTo(40);
    index.onEngineCached(0, 3, 0, 0, 22); // events are authoritative there
    assertThat(index.signal(0, IndexSignal.CAPACITY_BLOCKS, 22)).isEqualTo(40);
    assertThat(index.listsConsistent(0)).isTrue();
  }

  private static final dev.prefixrouter.api.spi.BlockHasher H = BlockHashers.tokens(2);
}
