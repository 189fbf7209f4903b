package dev.prefixrouter.radix;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.api.spi.IndexSignal;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Held routes refresh recency through the backend's {@link TouchLog}: the refreshes are applied in
 * order with each route's own clock reading before anything reads the mirror, also past a full
 * ring, and a route that touches the published LRU victim settles at once.
 */
class TouchLogTest {
  private static final BlockHasher H = BlockHashers.tokens(2);

  /** Path {@code i}: two blocks of its own. */
  private static long[] path(int i) {
    return BlockHasher.keysOf(
        H, Prompt.ofTokens(10 * i + 1, 10 * i + 1, 10 * i + 2, 10 * i + 2), 0);
  }

  private static int matched(RadixPrefixIndex index, long[] keys) {
    int[] out = new int[1];
    index.match(keys, keys.length, new int[] {0}, 1, out);
    return out[0];
  }

  private static RadixPrefixIndex full() {
    RadixPrefixIndex index =
        RadixPrefixIndex.builder().maxBackends(4).predictionTtl(Duration.ZERO).build();
    index.addBackend(0, 8);
    for (int i = 0; i < 4; i++) {
      index.recordRouted(path(i), 2, 0, 1 + i); // full; path 0 is the victim
    }
    return index;
  }

  @Test
  void heldRoutesPastAFullRingAreAppliedInOrderWithTheirOwnClock() {
    RadixPrefixIndex index = full();
    for (int k = 0; k < 4 * TouchLog.RECORDS; k++) {
      index.recordRouted(path(1 + k % 3), 2, 0, 1_000 + k); // held, never the victim
    }
    assertThat(index.signal(0, IndexSignal.LRU_AGE_NANOS, 2_000))
        .as("path 0 is still the victim, stamped 1")
        .isEqualTo(1_999);
    index.recordRouted(path(0), 2, 0, 1_500); // touches the victim: settles at once
    int last = 4 * TouchLog.RECORDS - 1;
    int oldest = 1 + (last - 2) % 3; // the least recent of paths 1..3
    assertThat(index.signal(0, IndexSignal.LRU_AGE_NANOS, 2_000))
        .as("the victim is now path %d, last touched at %d", oldest, 1_000 + last - 2)
        .isEqualTo(2_000 - (1_000 + last - 2));
    index.recordRouted(path(9), 2, 0, 1_600); // evicts the victim alone
    assertThat(matched(index, path(oldest))).isZero();
    for (int i = 0; i < 4; i++) {
      if (i != oldest) {
        assertThat(matched(index, path(i))).as("path %d", i).isEqualTo(2);
      }
    }
    assertThat(index.listsConsistent(0)).isTrue();
  }

  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void heldRoutesOnTwoThreadsAndEvictingWritesKeepTheMirrorWellFormed() throws Exception {
    RadixPrefixIndex index = full();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Thread[] threads = new Thread[3];
    for (int t = 0; t < threads.length; t++) {
      int id = t;
      threads[t] =
          new Thread(
              () -> {
                try {
                  for (int k = 0; k < 20_000; k++) {
                    // threads 0 and 1 re-route held paths; thread 2 routes new paths now and then
                    int p = id < 2 ? (k + id) % 4 : k % 50 == 0 ? 10 + k % 7 : k % 4;
                    index.recordRouted(path(p), 2, 0, k);
                  }
                } catch (Throwable e) {
                  failure.compareAndSet(null, e);
                }
              });
      threads[t].start();
    }
    for (Thread t : threads) {
      t.join();
    }
    assertThat(failure.get()).isNull();
    assertThat(index.listsConsistent(0)).isTrue();
    assertThat(index.heldBlocks(0)).isEqualTo(8);
    int held = 0;
    for (int p = 0; p < 17; p++) {
      held += matched(index, path(p));
    }
    assertThat(held).as("every held block on one of the paths").isEqualTo(8);
  }
}
