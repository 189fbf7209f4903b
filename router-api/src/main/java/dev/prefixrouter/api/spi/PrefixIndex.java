package dev.prefixrouter.api.spi;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.IndexStats;
import dev.prefixrouter.api.KvEvent;
import java.util.Arrays;

/**
 * Believes which backends hold which prompt prefixes, keyed by chained block keys (see {@link
 * BlockHasher}).
 *
 * <p><b>Call sites:</b> {@link #match} and {@link #recordRouted} once per {@code route()} on the
 * caller's thread, concurrently from many threads; {@link #signal} for each signal a scorer reads,
 * per candidate per {@code route()}; {@link #apply} from the host's event thread(s); membership
 * methods rarely. <b>Budget:</b> {@code match} a few µs for a 4k-token prompt against a million
 * blocks; it must not block behind writes to unrelated prefixes. Thread-safe.
 *
 * <p>Keys arrive as the first {@code keyCount} entries of a buffer the caller reuses: the index
 * must not keep a reference to it. Backends are dense slots (see the package documentation). Index
 * memory must be bounded by the sum of the backends' capacities.
 */
public interface PrefixIndex extends SlotLifecycle {

  /**
   * Starts tracking a slot with the backend's {@link Backend#capacityBlocks()} ({@code 0} means
   * unknown: the index uses its default).
   */
  @Override
  void addBackend(int slot, Backend backend);

  /** Follows a change of {@link Backend#capacityBlocks()}; shrinking evicts at once. */
  @Override
  void updateBackend(int slot, Backend before, Backend after);

  /**
   * For each of the first {@code count} entries of {@code slots}, writes into {@code matchedOut} at
   * the same position the number of leading blocks of {@code keys[0..keyCount)} believed held by
   * that slot (the longest contiguous run from block 0). Allocates nothing per call.
   *
   * @throws IllegalArgumentException if {@code keyCount} is not in {@code [0, keys.length]} (see
   *     {@link #checkKeyCount})
   */
  void match(long[] keys, int keyCount, int[] slots, int count, int[] matchedOut);

  /**
   * For each of the first {@code count} entries of {@code slots}, writes into {@code lowerOut} at
   * the same position how many blocks of {@code keys} right after that slot's GPU match ({@code
   * matched[i]} leading blocks, as {@link #match} answered) the slot's backend is believed to hold
   * on a lower tier (CPU memory, disk): the longest run {@code keys[matched[i] .. matched[i] + n)}
   * its KV events reported stored on a non-GPU medium. The engine calls it only when a scorer asks
   * ({@link ScoringContext#offloadedBlocks}), after {@code match}, with the same keys.
   *
   * <p>The default writes 0 everywhere (an index that keeps no lower tier). Allocates nothing per
   * call; must not block behind writes to unrelated backends.
   *
   * @throws IllegalArgumentException if {@code keyCount} is not in {@code [0, keys.length]}
   */
  default void matchOffloaded(
      long[] keys, int keyCount, int[] slots, int count, int[] matched, int[] lowerOut) {
    checkKeyCount(keys, keyCount);
    Arrays.fill(lowerOut, 0, count, 0);
  }

  /**
   * Records that the prompt with keys {@code keys[0..keyCount)} was just routed to {@code slot}
   * (predicted blocks).
   *
   * @throws IllegalArgumentException if {@code keyCount} is not in {@code [0, keys.length]}
   */
  void recordRouted(long[] keys, int keyCount, int slot, long nowNanos);

  /**
   * Checks a key count against its buffer, for implementations of the methods above.
   *
   * @throws IllegalArgumentException if {@code keyCount} is not in {@code [0, keys.length]}
   */
  static void checkKeyCount(long[] keys, int keyCount) {
    if (keyCount < 0 || keyCount > keys.length) {
      throw new IllegalArgumentException(
          "keyCount must be in [0, " + keys.length + "], was " + keyCount);
    }
  }

  /**
   * What the index believes about {@code slot}'s cache at {@code nowNanos}, in the unit {@code
   * signal} documents, or {@link IndexSignal#ABSENT} when it does not know (an unknown slot, a
   * signal it does not track: the default for every signal). Read per candidate on the routing hot
   * path: O(1), no allocation, and for {@link IndexSignal#LRU_AGE_NANOS} lock-free.
   */
  default long signal(int slot, IndexSignal signal, long nowNanos) {
    return IndexSignal.ABSENT;
  }

  /**
   * The engine's own account of a request routed to {@code slot} (its {@link
   * dev.prefixrouter.api.Usage#cachedTokens()}): when it served the prompt it held {@code
   * engineBlocks} leading blocks where this index had believed {@code predictedBlocks} at routing
   * time; the two differ. Both are capped at the blocks an engine can serve from cache (the full
   * blocks before the prompt's last token). {@code inFlightBlocks} bounds the prompt blocks that
   * requests still prefilling on the backend at routing time may have been bringing: when {@code
   * predictedBlocks - engineBlocks} exceeds it, the index believed blocks the engine had evicted or
   * never kept.
   *
   * <p>By the time this arrives the engine has computed the prompt and holds it again, so the
   * route's own prefix is believed correctly now; what the report shows is how far the index's
   * model of the backend's cache is off (see the implementation's rule).
   *
   * <p><b>Call site:</b> the thread that completes the lease, once per completion whose usage
   * carried the engine's count, never on the routing path; the engine catches and logs a {@link
   * RuntimeException}. Implementations must be thread-safe and short. The default ignores the
   * report.
   */
  default void onEngineCached(
      int slot, int predictedBlocks, int engineBlocks, int inFlightBlocks, long nowNanos) {}

  /** Applies one engine KV event of {@code slot}, recomputing router keys with {@code hasher}. */
  void apply(int slot, KvEvent event, BlockHasher hasher, long nowNanos);

  /**
   * Applies one engine KV event of {@code slot} whose blocks without a parent are keyed from {@code
   * seed}: the isolation seed of the requests that stored them (the engine derives it from a {@link
   * dev.prefixrouter.api.BlockStored#cacheSalt()}), so the keys are those the requests used. The
   * default ignores the seed and applies the event as {@link #apply(int, KvEvent, BlockHasher,
   * long)} does (unseeded keys): an index that keys events must override it.
   */
  default void apply(int slot, KvEvent event, BlockHasher hasher, long seed, long nowNanos) {
    apply(slot, event, hasher, nowNanos);
  }

  /** Forgets everything about a slot; the slot may be reused after this returns. */
  @Override
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
