package dev.prefixrouter.api.spi;

/**
 * A per-backend signal a {@link PrefixIndex} may report through {@link PrefixIndex#signal}: what
 * the index believes about one backend's cache, beyond which prefixes it holds. Each constant
 * states its unit; every value is {@code >= 0}, and {@link #ABSENT} says the index does not know
 * (it does not track the signal, the slot is unknown, or the signal is undefined right now).
 *
 * <p>Scorers read signals through {@link ScoringContext#signal}; {@code inspect()} shows the
 * present ones per backend. An index reports the signals it can and {@link #ABSENT} for the rest,
 * so a scorer must treat every signal as possibly absent.
 */
public enum IndexSignal {
  /**
   * Nanoseconds since the block the index would evict next from the backend's cache was last
   * touched: the cache's turnover time, since content reused less often than this does not survive
   * there. Absent while an insert would evict nothing (the cache has room).
   */
  LRU_AGE_NANOS,
  /** Blocks the index believes the backend holds, predicted and confirmed together. */
  HELD_BLOCKS,
  /** Of {@link #HELD_BLOCKS}, blocks confirmed by the backend's own KV events. */
  CONFIRMED_BLOCKS,
  /**
   * Blocks the backend holds on a slower tier than its GPU (CPU memory, disk), as its KV events
   * report them.
   */
  OFFLOADED_BLOCKS,
  /**
   * The capacity in blocks the index models the backend's cache with: its configured capacity, or
   * less while the engine's own cached counts ({@link PrefixIndex#onEngineCached}) show it keeps
   * less.
   */
  CAPACITY_BLOCKS;

  /** The value of a signal the index does not know. Never a valid value: valid values are >= 0. */
  public static final long ABSENT = Long.MIN_VALUE;

  /**
   * Whether {@code value} (from {@link PrefixIndex#signal}) is a value rather than {@link #ABSENT}.
   */
  public static boolean isPresent(long value) {
    return value != ABSENT;
  }
}
