package dev.prefixrouter.api;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.jspecify.annotations.Nullable;

/**
 * The engine's mutable state of one registered backend. Counters are atomics; the descriptor, the
 * draining flag and the last load report are volatile.
 *
 * <p>Removal protocol: writers that touch slot-keyed SPI state ({@code recordRouted}, KV events,
 * lease feedback) {@link #claim()} the entry first and {@link #release()} it after. {@code remove}
 * marks the entry removed and then waits until no claim is held before it clears the slot in the
 * SPIs and frees it for reuse, so no stale write ever lands on a reused slot. Claims last
 * microseconds; the wait is a short spin.
 */
final class BackendEntry {
  final int slot;
  volatile Backend backend;
  volatile boolean draining;
  volatile boolean removed;

  /** The last load report and the engine time it was measured at, published together. */
  record TimedLoad(LoadReport report, long measuredAt) {}

  volatile @Nullable TimedLoad load;

  private final AtomicInteger claims = new AtomicInteger();
  final AtomicInteger inFlight = new AtomicInteger();
  final AtomicLong pendingPrefillTokens = new AtomicLong();
  final AtomicInteger runningDecodes = new AtomicInteger();
  final AtomicLong activeTokens = new AtomicLong();
  final LongAdder routed = new LongAdder();
  final LongAdder promptTokens = new LongAdder();
  final LongAdder matchedTokens = new LongAdder();

  BackendEntry(int slot, Backend backend) {
    this.slot = slot;
    this.backend = backend;
  }

  /** Takes a claim; false (and no claim held) if the entry is removed. */
  boolean claim() {
    claims.incrementAndGet();
    if (removed) {
      claims.decrementAndGet();
      return false;
    }
    return true;
  }

  void release() {
    claims.decrementAndGet();
  }

  /** After {@code removed} is set: waits until every claim taken before is released. */
  void awaitNoClaims() {
    int spins = 0;
    while (claims.get() != 0) {
      if (++spins < 1_000) {
        Thread.onSpinWait();
      } else {
        Thread.yield();
      }
    }
  }
}
