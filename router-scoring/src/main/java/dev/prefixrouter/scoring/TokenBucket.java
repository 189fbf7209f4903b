package dev.prefixrouter.scoring;

import java.util.concurrent.atomic.AtomicReference;

/**
 * A lock-free token bucket: immutable state swapped by CAS, integer arithmetic in nanoseconds.
 * Refill is exact: the remainder of {@code elapsed × refill / period} is carried, so no fraction of
 * a token is ever lost or created. Tokens may go negative (debt) through {@link #adjust}; debt is
 * repaid only by refill at the bucket's rate, never forgiven by idle time. Debt saturates at {@link
 * #MAX_DEBT} tokens.
 *
 * <p>Cost: O(1) and no allocation beyond the new state; a product that exceeds 63 bits (a refill
 * after a very long idle time, a wait with a huge rate) is divided exactly in 128 bits ({@link
 * #divide}, a 64-step loop).
 */
final class TokenBucket {
  /** Deepest debt held: 2^62 tokens (an adjust beyond it saturates). */
  static final long MAX_DEBT = 1L << 62;

  /**
   * Tokens, the last refill time, and the carried refill remainder in {@code [0, period)} (in
   * token·ns units: the exact level is {@code tokens + remainder / period}).
   */
  record State(long tokens, long lastNanos, long remainder) {}

  final long capacity;
  final long refill;
  final long periodNanos;
  final AtomicReference<State> state;

  TokenBucket(long capacity, long refill, long periodNanos, long nowNanos) {
    this.capacity = capacity;
    this.refill = refill;
    this.periodNanos = periodNanos;
    this.state = new AtomicReference<>(new State(capacity, nowNanos, 0));
  }

  /** The state refilled up to {@code now} (time never runs backwards for the bucket). */
  State refilled(State s, long now) {
    long elapsed = now - s.lastNanos;
    if (elapsed <= 0) {
      return s;
    }
    if (s.tokens >= capacity) {
      return new State(s.tokens, now, 0);
    }
    long deficit = capacity - s.tokens; // > 0, at most capacity + MAX_DEBT
    long hi = Math.multiplyHigh(elapsed, refill);
    long lo = elapsed * refill;
    long add;
    long rem;
    if (hi == 0 && lo >= 0 && lo <= Long.MAX_VALUE - s.remainder) {
      long produced = lo + s.remainder;
      add = produced / periodNanos;
      rem = produced % periodNanos;
    } else {
      long sumLo = lo + s.remainder;
      long sumHi = hi + (Long.compareUnsigned(sumLo, lo) < 0 ? 1 : 0);
      add = divide(sumHi, sumLo, periodNanos);
      rem = sumLo - add * periodNanos; // exact unless add saturated, when it is not used
    }
    if (add >= deficit) {
      return new State(capacity, now, 0);
    }
    return new State(s.tokens + add, now, rem);
  }

  /**
   * Nanoseconds from {@code r.lastNanos} until {@code r} holds {@code n} tokens, for {@code n >
   * r.tokens} and {@code n <= capacity}: the least {@code w} with {@code w × refill + remainder >=
   * (n − tokens) × period}; saturates at {@link Long#MAX_VALUE}.
   */
  long nanosUntil(State r, long n) {
    long deficit = n - r.tokens;
    long hi = Math.multiplyHigh(deficit, periodNanos);
    long lo = deficit * periodNanos;
    if (hi == 0 && lo >= 0) {
      return Math.max(1, ceilDiv(lo - r.remainder, refill));
    }
    long neededLo = lo - r.remainder;
    long neededHi = hi - (Long.compareUnsigned(lo, r.remainder) < 0 ? 1 : 0);
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
    while (true) {
      State s = state.get();
      State r = refilled(s, now);
      if (r.tokens >= n) {
        if (state.compareAndSet(s, new State(r.tokens - n, r.lastNanos, r.remainder))) {
          return 0;
        }
        continue;
      }
      if (r != s) {
        state.compareAndSet(s, r); // publish the refill; harmless if it races
      }
      return nanosUntil(r, n);
    }
  }

  /** Nanos until {@code n} tokens would be there without taking them; 0 if they are now. */
  long waitFor(long n, long now) {
    State r = refilled(state.get(), now);
    return r.tokens >= n ? 0 : nanosUntil(r, n);
  }

  /**
   * Nanos from the last update until the bucket would be full again if {@code take} more tokens
   * were taken now (an upper bound for callers that cannot see the next take).
   */
  long nanosUntilFullAfter(long take) {
    State s = state.get();
    State t = new State(s.tokens - take, s.lastNanos, s.remainder);
    return t.tokens >= capacity ? 0 : nanosUntil(t, capacity);
  }

  /**
   * Adds {@code delta} to the charge: positive takes (may go into debt, saturating at {@link
   * #MAX_DEBT}), negative refunds (never above capacity).
   */
  void adjust(long delta, long now) {
    while (true) {
      State s = state.get();
      State r = refilled(s, now);
      long tokens = r.tokens - delta;
      if (((r.tokens ^ delta) & (r.tokens ^ tokens)) < 0) { // overflowed
        tokens = delta > 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
      }
      tokens = Math.max(Math.min(capacity, tokens), -MAX_DEBT);
      if (state.compareAndSet(
          s, new State(tokens, r.lastNanos, tokens >= capacity ? 0 : r.remainder))) {
        return;
      }
    }
  }

  long available(long now) {
    return refilled(state.get(), now).tokens;
  }

  static long ceilDiv(long a, long b) {
    return a <= 0 ? 0 : 1 + (a - 1) / b;
  }
}
