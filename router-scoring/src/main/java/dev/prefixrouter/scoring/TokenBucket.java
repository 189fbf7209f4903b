package dev.prefixrouter.scoring;

import java.math.BigInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A lock-free token bucket: immutable state swapped by CAS, integer arithmetic in nanoseconds.
 * Refill is exact: the remainder of {@code elapsed × refill / period} is carried, so no fraction of
 * a token is ever lost or created. Tokens may go negative (debt) through {@link #adjust}; debt is
 * repaid only by refill at the bucket's rate, never forgiven by idle time. Debt saturates at {@link
 * #MAX_DEBT} tokens.
 *
 * <p>Cost: O(1); a refill whose {@code elapsed × refill} exceeds 63 bits (only after very long idle
 * times or with huge rates) takes a {@link BigInteger} slow path.
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
      BigInteger[] qr =
          BigInteger.valueOf(elapsed)
              .multiply(BigInteger.valueOf(refill))
              .add(BigInteger.valueOf(s.remainder))
              .divideAndRemainder(BigInteger.valueOf(periodNanos));
      add = qr[0].bitLength() < 63 ? qr[0].longValue() : Long.MAX_VALUE;
      rem = qr[1].longValue();
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
    BigInteger needed =
        BigInteger.valueOf(deficit)
            .multiply(BigInteger.valueOf(periodNanos))
            .subtract(BigInteger.valueOf(r.remainder));
    BigInteger[] qr = needed.divideAndRemainder(BigInteger.valueOf(refill));
    BigInteger wait = qr[1].signum() > 0 ? qr[0].add(BigInteger.ONE) : qr[0];
    return wait.bitLength() < 63 ? Math.max(1, wait.longValue()) : Long.MAX_VALUE;
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
