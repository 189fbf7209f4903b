package dev.prefixrouter.radix;

/**
 * The rule by which {@link RadixPrefixIndex} follows the engines' own cached counts ({@link
 * RadixPrefixIndex#onEngineCached}): it learns the capacity it models each backend's cache with.
 *
 * <p>A report arrives when the request has completed, and by then the engine has computed its
 * prompt and holds it again: the route's own prefix is believed correctly, and dropping it would
 * make the belief wrong. What a report says is how far the mirror's horizon is off. When the engine
 * held fewer leading blocks than believed, and the requests still prefilling there at routing time
 * cannot account for the difference ({@code stale} blocks), the engine keeps less than the mirror:
 * the modelled capacity becomes {@code min(capacity, held) - stale}, so the mirror at once drops
 * its least recently used beliefs (those the engine has most likely evicted too). When the engine
 * held more than believed, the mirror had evicted what the engine kept: the capacity grows by the
 * difference. The capacity stays within {@code [configured / 8, configured]} (at least one block):
 * the engine's reports never make the router believe more than the backend's configured size, and a
 * host whose counts mislead (e.g. a tokenizer that differs from the engine's) cannot shrink a
 * backend's mirror below an eighth.
 *
 * <p>Confirmed beliefs: on a backend that sends KV events the events are authoritative (a store
 * confirms, a removal evicts), so its reports change nothing; the engine's counters still show the
 * errors, which there measure event lag or loss.
 */
final class CapacityFeedback {
  /** The modelled capacity never goes below the configured capacity divided by this. */
  static final int MIN_SHARE_DIVISOR = 8;

  private CapacityFeedback() {}

  /** The lowest capacity feedback may model for a backend configured with {@code configured}. */
  static long floor(long configured) {
    return Math.max(1, configured / MIN_SHARE_DIVISOR);
  }

  /**
   * The capacity to model after a report, or {@code capacity} unchanged.
   *
   * @param configured the backend's configured capacity in blocks
   * @param capacity the capacity modelled now
   * @param held blocks the mirror holds now
   * @param predictedBlocks leading blocks believed at routing time
   * @param engineBlocks leading blocks the engine held
   * @param inFlightBlocks blocks requests still prefilling at routing time may have been bringing
   */
  static long next(
      long configured,
      long capacity,
      long held,
      int predictedBlocks,
      int engineBlocks,
      int inFlightBlocks) {
    long stale = (long) predictedBlocks - engineBlocks - Math.max(0, inFlightBlocks);
    if (stale > 0) {
      return Math.max(floor(configured), Math.min(capacity, held) - stale);
    }
    if (engineBlocks > predictedBlocks && capacity < configured) {
      return Math.min(configured, capacity + (engineBlocks - predictedBlocks));
    }
    return capacity;
  }
}
