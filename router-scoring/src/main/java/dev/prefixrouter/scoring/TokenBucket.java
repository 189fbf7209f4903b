package dev.prefixrouter.scoring;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A token bucket: three longs updated in place under a sequence lock held in the bucket itself
 * (writes hold it for a few arithmetic steps; read-only queries read optimistically and retry),
 * integer arithmetic in nanoseconds. Refill is exact: the remainder of {@code elapsed × refill /
 * period} is carried, so no fraction of a token is ever lost or created. Tokens may go negative
 * (debt) through {@link #adjust}; debt is repaid only by refill at the bucket's rate, never
 * forgiven by idle time. Debt saturates at {@link #MAX_DEBT} tokens.
 *
 * <p>Concurrency: every change takes the lock (a compare-and-set that makes {@code seq} odd) and
 * releases it with a release store that makes it even again; a thread that finds it taken spins
 * briefly, then yields. Queries read the three longs between two reads of {@code seq} and retry if
 * a writer ran meanwhile (after {@value #OPTIMISTIC_READS} tries they take the lock). The lock word
 * and the state it guards are fields of one small object, so a take moves one object's line between
 * cores where a separate lock object moved two. Linearizable (Lincheck, {@code
 * ConcurrencyLincheckTest}).
 *
 * <p>Cost: O(1) and no allocation; a product that exceeds 63 bits (a refill after a very long idle
 * time, a wait with a huge rate) is divided exactly in 128 bits ({@link #divide}, a 64-step loop).
 */
final class TokenBucket {
  /** Deepest debt held: 2^62 tokens (an adjust beyond it saturates). */
  static final long MAX_DEBT = 1L << 62;

  /** Optimistic reads a query tries before it takes the lock. */
  static final int OPTIMISTIC_READS = 4;

  /** Spins on a taken lock before each further wait yields the processor. */
  private static final int SPINS = 64;

  private static final VarHandle SEQ;

  static {
    try {
      SEQ = MethodHandles.lookup().findVarHandle(TokenBucket.class, "seq", long.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  final long capacity;
  final long refill;
  final long periodNanos;

  /**
   * {@code nanosUntilFullAfter(capacity)} is at most this while the bucket is not in debt: the time
   * to refill {@code 2 × capacity} tokens.
   */
  private final long burstRefillNanos;

  // the lock word: even while free, odd while a writer holds it; each write adds 2 in all
  private volatile long seq;

  // guarded by seq: the exact level is tokens + remainder / period (remainder in [0, period), in
  // token·ns units), refilled up to lastNanos
  private long tokens;
  private long lastNanos;
  private long remainder;

  TokenBucket(long capacity, long refill, long periodNanos, long nowNanos) {
    this.capacity = capacity;
    this.refill = refill;
    this.periodNanos = periodNanos;
    this.tokens = capacity;
    this.lastNanos = nowNanos;
    this.burstRefillNanos = nanosUntil(-capacity, 0, capacity);
  }

  /**
   * Whole tokens refilled over {@code elapsed > 0} ns with {@code rem} carried: {@code
   * floor((elapsed × refill + rem) / period)}, saturating at {@link Long#MAX_VALUE}. The new
   * remainder is then {@code elapsed × refill + rem − add × period} in wrapping 64-bit arithmetic
   * (exact: it is below the period).
   */
  private long produced(long elapsed, long rem) {
    long hi = Math.multiplyHigh(elapsed, refill);
    long lo = elapsed * refill;
    if (hi == 0 && lo >= 0 && lo <= Long.MAX_VALUE - rem) {
      return (lo + rem) / periodNanos;
    }
    long sumLo = lo + rem;
    long sumHi = hi + (Long.compareUnsigned(sumLo, lo) < 0 ? 1 : 0);
    return divide(sumHi, sumLo, periodNanos);
  }

  /** Refills up to {@code now} in place (time never runs backwards for the bucket); lock held. */
  private void refill(long now) {
    long elapsed = now - lastNanos;
    if (elapsed <= 0) {
      return;
    }
    lastNanos = now;
    if (tokens >= capacity) {
      remainder = 0;
      return;
    }
    long add = produced(elapsed, remainder);
    if (add >= capacity - tokens) { // the deficit: > 0, at most capacity + MAX_DEBT
      tokens = capacity;
      remainder = 0;
      return;
    }
    remainder = elapsed * refill + remainder - add * periodNanos;
    tokens += add;
  }

  /** The level refilled up to {@code now} of a state read as (t, last, rem): tokens. */
  private long tokensAt(long t, long last, long rem, long now) {
    long elapsed = now - last;
    if (elapsed <= 0 || t >= capacity) {
      return t;
    }
    long add = produced(elapsed, rem);
    return add >= capacity - t ? capacity : t + add;
  }

  /** The level refilled up to {@code now} of a state read as (t, last, rem): the remainder. */
  private long remainderAt(long t, long last, long rem, long now) {
    long elapsed = now - last;
    if (elapsed <= 0) {
      return rem;
    }
    if (t >= capacity) {
      return 0;
    }
    long add = produced(elapsed, rem);
    return add >= capacity - t ? 0 : elapsed * refill + rem - add * periodNanos;
  }

  /**
   * Nanoseconds from the last refill until a bucket holding {@code t} tokens and remainder {@code
   * rem} holds {@code n} tokens, for {@code n > t} and {@code n <= capacity}: the least {@code w}
   * with {@code w × refill + rem >= (n − t) × period}; saturates at {@link Long#MAX_VALUE}.
   */
  long nanosUntil(long t, long rem, long n) {
    long deficit = n - t;
    long hi = Math.multiplyHigh(deficit, periodNanos);
    long lo = deficit * periodNanos;
    if (hi == 0 && lo >= 0) {
      return Math.max(1, ceilDiv(lo - rem, refill));
    }
    long neededLo = lo - rem;
    long neededHi = hi - (Long.compareUnsigned(lo, rem) < 0 ? 1 : 0);
    long wait = divide(neededHi, neededLo, refill);
    if (wait != Long.MAX_VALUE && neededLo != wait * refill) {
      wait++; // a remainder: round up
    }
    return Math.max(1, wait);
  }

  /**
   * {@code floor((hi · 2^64 + lo) / d)} for a non-negative 128-bit dividend ({@code hi >= 0},
   * {@code lo} unsigned) and {@code d > 0}, saturating at {@link Long#MAX_VALUE}; exact,
   * allocation-free (restoring division, one quotient bit per step).
   */
  static long divide(long hi, long lo, long d) {
    if (Long.compareUnsigned(hi, d) >= 0) {
      return Long.MAX_VALUE; // the quotient needs more than 64 bits
    }
    long q = 0;
    for (int i = 0; i < 64; i++) {
      boolean top = hi < 0;
      hi = (hi << 1) | (lo >>> 63);
      lo <<= 1;
      q <<= 1;
      if (top || Long.compareUnsigned(hi, d) >= 0) {
        hi -= d;
        q |= 1;
      }
    }
    return q < 0 ? Long.MAX_VALUE : q;
  }

  /** Takes {@code n} tokens if there; otherwise returns the nanos until they would be (> 0). */
  long tryTake(long n, long now) {
    long locked = lock();
    try {
      refill(now); // published whether or not the take succeeds
      if (tokens >= n) {
        tokens -= n;
        return 0;
      }
      return nanosUntil(tokens, remainder, n);
    } finally {
      unlock(locked);
    }
  }

  /** Nanos until {@code n} tokens would be there without taking them; 0 if they are now. */
  long waitFor(long n, long now) {
    long[] state = new long[3];
    read(state);
    long t = tokensAt(state[0], state[1], state[2], now);
    return t >= n ? 0 : nanosUntil(t, remainderAt(state[0], state[1], state[2], now), n);
  }

  /**
   * Nanos from the last update until the bucket would be full again if {@code take} more tokens
   * were taken now (an upper bound for callers that cannot see the next take).
   */
  long nanosUntilFullAfter(long take) {
    long t;
    long rem;
    for (int i = 0; ; i++) {
      long s = seq;
      t = tokens;
      rem = remainder;
      VarHandle.acquireFence(); // the two reads above happen before the check below
      if ((s & 1) == 0 && seq == s) {
        break;
      }
      if (i == OPTIMISTIC_READS) {
        long locked = lock();
        t = tokens;
        rem = remainder;
        unlock(locked);
        break;
      }
      Thread.onSpinWait();
    }
    t -= take;
    return t >= capacity ? 0 : nanosUntil(t, rem, capacity);
  }

  /**
   * {@code max(floor, nanosUntilFullAfter(capacity))}, without its division when the bucket is not
   * in debt and refilling twice its capacity takes at most {@code floor} (then the answer is {@code
   * floor}). One optimistic read.
   */
  long nanosUntilFullAfterBurst(long floor) {
    if (burstRefillNanos <= floor) {
      long s = seq;
      long t = tokens;
      VarHandle.acquireFence(); // the read of tokens happens before the check below
      if ((s & 1) == 0 && seq == s && t >= 0) {
        return floor; // t - capacity >= -capacity: the wait is at most burstRefillNanos
      }
    }
    return Math.max(floor, nanosUntilFullAfter(capacity));
  }

  /**
   * Adds {@code delta} to the charge: positive takes (may go into debt, saturating at {@link
   * #MAX_DEBT}), negative refunds (never above capacity).
   */
  void adjust(long delta, long now) {
    long locked = lock();
    try {
      refill(now);
      long r = tokens;
      long t = r - delta;
      if (((r ^ delta) & (r ^ t)) < 0) { // overflowed
        t = delta > 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
      }
      t = Math.max(Math.min(capacity, t), -MAX_DEBT);
      tokens = t;
      if (t >= capacity) {
        remainder = 0;
      }
    } finally {
      unlock(locked);
    }
  }

  long available(long now) {
    long[] state = new long[3];
    read(state);
    return tokensAt(state[0], state[1], state[2], now);
  }

  /**
   * Takes the lock: returns the odd value written, which {@link #unlock} needs. Spins while another
   * writer holds it ({@value #SPINS} times), then yields between tries.
   */
  private long lock() {
    long s = seq;
    if ((s & 1) == 0 && SEQ.compareAndSet(this, s, s + 1)) {
      return s + 1;
    }
    for (int spins = 0; ; spins++) {
      s = seq;
      if ((s & 1) == 0 && SEQ.compareAndSet(this, s, s + 1)) {
        return s + 1;
      }
      if (spins < SPINS) {
        Thread.onSpinWait();
      } else {
        Thread.yield();
      }
    }
  }

  /** Releases the lock taken as {@code locked}: a release store publishes the writes before it. */
  private void unlock(long locked) {
    SEQ.setRelease(this, locked + 1);
  }

  /**
   * Reads tokens, lastNanos and remainder into {@code out} as one consistent state: optimistically
   * between two reads of the lock word, under the lock after {@value #OPTIMISTIC_READS} tries.
   */
  private void read(long[] out) {
    for (int i = 0; i < OPTIMISTIC_READS; i++) {
      long s = seq;
      out[0] = tokens;
      out[1] = lastNanos;
      out[2] = remainder;
      VarHandle.acquireFence(); // the three reads above happen before the check below
      if ((s & 1) == 0 && seq == s) {
        return;
      }
      Thread.onSpinWait();
    }
    long locked = lock();
    out[0] = tokens;
    out[1] = lastNanos;
    out[2] = remainder;
    unlock(locked);
  }

  static long ceilDiv(long a, long b) {
    return a <= 0 ? 0 : 1 + (a - 1) / b;
  }
}
