package dev.prefixrouter.scoring;

import java.util.concurrent.atomic.AtomicReference;

/**
 * A lock-free token bucket: immutable state swapped by CAS, integer arithmetic in nanoseconds.
 * Refill is exact: the remainder of {@code elapsed × refill / period} is carried, so no fraction of
 * a token is ever lost or created. Tokens may go negative (debt) through {@link #adjust}.
 */
final class TokenBucket {
  /**
   * Tokens, the last refill time, and the carried refill remainder (in token·ns / period units).
   */
  record State(long tokens, long lastNanos, long remainder) {}

  final long capacity;
  final long refill;
  final long periodNanos;
  private final long fillNanos; // time to refill from empty: beyond it the bucket is full
  final AtomicReference<State> state;

  TokenBucket(long capacity, long refill, long periodNanos, long nowNanos) {
    this.capacity = capacity;
    this.refill = refill;
    this.periodNanos = periodNanos;
    this.fillNanos = ceilDiv(multiplyCapped(capacity, periodNanos), refill) + periodNanos;
    this.state = new AtomicReference<>(new State(capacity, nowNanos, 0));
  }

  /** The state refilled up to {@code now} (time never runs backwards for the bucket). */
  State refilled(State s, long now) {
    long elapsed = now - s.lastNanos;
    if (elapsed <= 0) {
      return s;
    }
    if (elapsed >= fillNanos || s.tokens >= capacity) {
      return new State(Math.max(s.tokens, capacity), now, 0);
    }
    long product = multiplyCapped(elapsed, refill);
    if (product >= Long.MAX_VALUE / 4) {
      return new State(capacity, now, 0); // more than any bucket can hold
    }
    long produced = product + s.remainder;
    long add = produced / periodNanos;
    long rem = produced % periodNanos;
    long tokens = s.tokens + add;
    if (tokens >= capacity) {
      return new State(capacity, now, 0);
    }
    return new State(tokens, now, rem);
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
      long deficit = n - r.tokens;
      // produced needed: deficit * period - remainder, at `refill` per ns
      long needed = multiplyCapped(deficit, periodNanos) - r.remainder;
      return Math.max(1, ceilDiv(needed, refill));
    }
  }

  /** Adds {@code delta} to the charge: positive takes (may go into debt), negative refunds. */
  void adjust(long delta, long now) {
    while (true) {
      State s = state.get();
      State r = refilled(s, now);
      long tokens = r.tokens - delta;
      if (delta < 0) {
        tokens = Math.min(capacity, tokens);
      }
      tokens = Math.max(tokens, -Quota.MAX_TOKENS); // bounded debt
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

  static long multiplyCapped(long a, long b) {
    long hi = Math.multiplyHigh(a, b);
    long lo = a * b;
    if (hi != 0 || lo < 0) {
      return Long.MAX_VALUE / 4;
    }
    return lo;
  }
}
