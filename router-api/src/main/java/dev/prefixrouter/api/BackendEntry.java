package dev.prefixrouter.api;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.jspecify.annotations.Nullable;

/** 64 bytes before the hot counters, so that no other object's fields share their cache line. */
@SuppressWarnings("unused")
abstract class BackendEntryPadBefore {
  int p0; // fills the gap after the object header, where a counter would otherwise be placed
  long p00, p01, p02, p03, p04, p05, p06, p07;
}

/**
 * The counters every route writes (on the chosen backend) and every decision reads (on all
 * candidates), together and apart from anything else: one miss reads them all, and a write to one
 * backend's counters never invalidates another backend's. The measurement behind the layout is in
 * {@code benchmarks/README.md} (RouteBenchmark, two threads).
 */
abstract class BackendEntryCounters extends BackendEntryPadBefore {
  volatile int claims;
  volatile int inFlight;
  volatile int runningDecodes;
  volatile long pendingPrefillTokens;
  volatile long activeTokens;
  // statistics: the prompt and matched tokens of the placements here, requests placed here by their
  // first attempt (the engine's routed count is their sum over backends) and placements of
  // failovers (placements in all: their sum, so a first attempt adds to three counters, not four)
  volatile long promptTokens;
  volatile long matchedTokens;
  volatile long requests;
  volatile long failoverPlacements;
}

/** 64 bytes after the hot counters (the entry's own fields follow, and are mostly read). */
@SuppressWarnings("unused")
abstract class BackendEntryPadAfter extends BackendEntryCounters {
  int p1; // fills the counters' alignment gap, where a field of the entry would otherwise go
  long p10, p11, p12, p13, p14, p15, p16, p17;
}

/**
 * The engine's mutable state of one registered backend. Counters are volatile fields updated
 * atomically through {@link VarHandle}s, padded onto their own cache line (see {@link
 * BackendEntryCounters}); the descriptor, the draining flag and the last load report are volatile.
 *
 * <p>Removal protocol: writers that touch slot-keyed SPI state ({@code recordRouted}, KV events,
 * lease feedback) {@link #claim()} the entry first and {@link #release()} it after. {@code remove}
 * marks the entry removed and then waits until no claim is held before it clears the slot in the
 * SPIs and frees it for reuse, so no stale write ever lands on a reused slot. Claims last
 * microseconds; the wait is a short spin.
 */
final class BackendEntry extends BackendEntryPadAfter {
  private static final VarHandle CLAIMS;
  private static final VarHandle IN_FLIGHT;
  private static final VarHandle RUNNING_DECODES;
  private static final VarHandle PENDING_PREFILL_TOKENS;
  private static final VarHandle ACTIVE_TOKENS;
  private static final VarHandle PROMPT_TOKENS;
  private static final VarHandle MATCHED_TOKENS;
  private static final VarHandle REQUESTS;
  private static final VarHandle FAILOVER_PLACEMENTS;

  static {
    try {
      MethodHandles.Lookup l = MethodHandles.lookup();
      Class<?> c = BackendEntryCounters.class;
      CLAIMS = l.findVarHandle(c, "claims", int.class);
      IN_FLIGHT = l.findVarHandle(c, "inFlight", int.class);
      RUNNING_DECODES = l.findVarHandle(c, "runningDecodes", int.class);
      PENDING_PREFILL_TOKENS = l.findVarHandle(c, "pendingPrefillTokens", long.class);
      ACTIVE_TOKENS = l.findVarHandle(c, "activeTokens", long.class);
      PROMPT_TOKENS = l.findVarHandle(c, "promptTokens", long.class);
      MATCHED_TOKENS = l.findVarHandle(c, "matchedTokens", long.class);
      REQUESTS = l.findVarHandle(c, "requests", long.class);
      FAILOVER_PLACEMENTS = l.findVarHandle(c, "failoverPlacements", long.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  final int slot;
  volatile Backend backend;
  volatile boolean draining;
  volatile boolean removed;

  /** The last load report and the engine time it was measured at, published together. */
  record TimedLoad(LoadReport report, long measuredAt) {
    /** The report's age at {@code now}: at least 0, {@link Long#MAX_VALUE} at most. */
    long ageNanos(long now) {
      return Math.max(0, Bounds.saturatedMinus(now, measuredAt));
    }
  }

  volatile @Nullable TimedLoad load;

  /** The engine's cached counts against the router's predictions (cold: written at completion). */
  final CacheFeedback cacheFeedback = new CacheFeedback();

  BackendEntry(int slot, Backend backend) {
    this.slot = slot;
    this.backend = backend;
  }

  int inFlight() {
    return inFlight;
  }

  void addInFlight(int delta) {
    IN_FLIGHT.getAndAdd(this, delta);
  }

  int runningDecodes() {
    return runningDecodes;
  }

  void addRunningDecodes(int delta) {
    RUNNING_DECODES.getAndAdd(this, delta);
  }

  long pendingPrefillTokens() {
    return pendingPrefillTokens;
  }

  /** Adds {@code delta} and returns the value before. */
  long addPendingPrefillTokens(long delta) {
    return (long) PENDING_PREFILL_TOKENS.getAndAdd(this, delta);
  }

  long activeTokens() {
    return activeTokens;
  }

  void addActiveTokens(long delta) {
    ACTIVE_TOKENS.getAndAdd(this, delta);
  }

  /**
   * Counts a placement here ({@code firstAttempt}: of a request's first attempt, not a failover)
   * with the index's match on this backend ({@link Routed#indexMatchedTokens}, not a scorer's
   * discounted {@link Routed#matchedTokens}). Claim held.
   */
  void countPlacement(int promptTokens, int matchedTokens, boolean firstAttempt) {
    PROMPT_TOKENS.getAndAdd(this, (long) promptTokens);
    MATCHED_TOKENS.getAndAdd(this, (long) matchedTokens);
    if (firstAttempt) {
      REQUESTS.getAndAdd(this, 1L);
    } else {
      FAILOVER_PLACEMENTS.getAndAdd(this, 1L);
    }
  }

  /** Placements here, failovers included. */
  long routed() {
    return requests + failoverPlacements;
  }

  long promptTokens() {
    return promptTokens;
  }

  long matchedTokens() {
    return matchedTokens;
  }

  long requests() {
    return requests;
  }

  /** Takes a claim; false (and no claim held) if the entry is removed. */
  boolean claim() {
    CLAIMS.getAndAdd(this, 1);
    if (removed) {
      CLAIMS.getAndAdd(this, -1);
      return false;
    }
    return true;
  }

  void release() {
    CLAIMS.getAndAdd(this, -1);
  }

  /** After {@code removed} is set: waits until every claim taken before is released. */
  void awaitNoClaims() {
    int spins = 0;
    while (claims != 0) {
      if (++spins < 1_000) {
        Thread.onSpinWait();
      } else {
        Thread.yield();
      }
    }
  }
}
