package dev.prefixrouter.api.spi;

import dev.prefixrouter.api.IndexStats;
import dev.prefixrouter.api.KvEvent;
import java.util.Arrays;

/**
 * Believes which backends hold which prompt prefixes, keyed by chained block keys (see {@link
 * BlockHasher}).
 *
 * <p><b>Call sites:</b> {@link #match} and {@link #recordRouted} once per {@code route()} on the
 * caller's thread, concurrently from many threads; {@link #apply} from the host's event thread(s);
 * membership methods rarely. <b>Budget:</b> {@code match} a few µs for a 4k-token prompt against a
 * million blocks; it must not block behind writes to unrelated prefixes. Thread-safe.
 *
 * <p>Backends are dense slots (see the package documentation). Index memory must be bounded by the
 * sum of the backends' capacities.
 */
public interface PrefixIndex {

  /**
   * Starts tracking a slot. {@code capacityBlocks == 0} means unknown: the index uses its default.
   */
  void addBackend(int slot, long capacityBlocks);

  /** Changes a slot's capacity; shrinking evicts at once. */
  void setCapacity(int slot, long capacityBlocks);

  /**
   * For each of the first {@code count} entries of {@code slots}, writes into {@code matchedOut} at
   * the same position the number of leading blocks of {@code keys} believed held by that slot (the
   * longest contiguous run from block 0).
   */
  void match(long[] keys, int[] slots, int count, int[] matchedOut);

  /**
   * {@link #match(long[], int[], int, int[])} over the first {@code keyCount} entries of {@code
   * keys} (a reused buffer). The default copies them into an exact array; implementations on the
   * routing hot path override it.
   */
  default void match(long[] keys, int keyCount, int[] slots, int count, int[] matchedOut) {
    match(exact(keys, keyCount), slots, count, matchedOut);
  }

  /** Records that the prompt with these keys was just routed to {@code slot} (predicted blocks). */
  void recordRouted(long[] keys, int slot, long nowNanos);

  /**
   * {@link #recordRouted(long[], int, long)} for the first {@code keyCount} entries of {@code
   * keys}; the index must not keep a reference to {@code keys}. The default copies.
   */
  default void recordRouted(long[] keys, int keyCount, int slot, long nowNanos) {
    recordRouted(exact(keys, keyCount), slot, nowNanos);
  }

  /**
   * Checks a key count against its buffer, for implementations of the counted methods.
   *
   * @throws IllegalArgumentException if {@code keyCount} is not in {@code [0, keys.length]}
   */
  static void checkKeyCount(long[] keys, int keyCount) {
    if (keyCount < 0 || keyCount > keys.length) {
      throw new IllegalArgumentException(
          "keyCount must be in [0, " + keys.length + "], was " + keyCount);
    }
  }

  private static long[] exact(long[] keys, int keyCount) {
    checkKeyCount(keys, keyCount);
    return keyCount == keys.length ? keys : Arrays.copyOf(keys, keyCount);
  }

  /**
   * How long before {@code nowNanos} the block this index would evict next from {@code slot}'s
   * mirror was last touched, at least 0: the turnover time of that backend's cache, since content
   * reused less often than this does not survive there. {@link Long#MAX_VALUE} when an insert would
   * evict nothing (the mirror has room), for an unknown slot, or when the index does not track
   * recency (the default). Read for every candidate of every route: lock-free and O(1).
   */
  default long lruAgeNanos(int slot, long nowNanos) {
    return Long.MAX_VALUE;
  }

  /** Applies one engine KV event of {@code slot}, recomputing router keys with {@code hasher}. */
  void apply(int slot, KvEvent event, BlockHasher hasher, long nowNanos);

  /** Forgets everything about a slot; the slot may be reused after this returns. */
  void removeBackend(int slot);

  /**
   * Counters. {@code slotNames} maps slot to backend id for the per-backend table ({@code null}
   * entries are skipped).
   */
  IndexStats stats(String[] slotNames);

  /** An index that believes nothing: every match is 0. */
  static PrefixIndex none() {
    return NoPrefixIndex.INSTANCE;
  }
}
