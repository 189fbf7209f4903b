package dev.prefixrouter.redis;

import java.util.concurrent.atomic.AtomicReference;

/**
 * A replica's own token bucket, used while Redis is unreachable. Lock-free: an immutable state
 * swapped by CAS. Refill is continuous; the fraction of a token not yet refilled is kept by
 * advancing the refill time only by the time the whole tokens took.
 */
final class LocalBucket {
  private record State(long tokens, long refilledAtNanos) {}

  private final long capacity;
  private final long refill;
  private final long periodNanos;
  private final AtomicReference<State> state;

  LocalBucket(FleetQuota quota, long nowNanos) {
    this.capacity = quota.capacityTokens();
    this.refill = quota.refillTokens();
    this.periodNanos = quota.period().toNanos();
    this.state = new AtomicReference<>(new State(capacity, nowNanos));
  }

  private State refilled(State s, long now) {
    long elapsed = now - s.refilledAtNanos;
    if (elapsed <= 0 || s.tokens >= capacity) {
      return s.tokens >= capacity ? new State(s.tokens, Math.max(now, s.refilledAtNanos)) : s;
    }
    double add = (double) elapsed * refill / periodNanos;
    if (s.tokens + add >= capacity) {
      return new State(capacity, now);
    }
    long whole = (long) add;
    long used = (long) ((double) whole * periodNanos / refill);
    return new State(s.tokens + whole, s.refilledAtNanos + used);
  }

  /**
   * Takes {@code tokens} if they are there; otherwise nanoseconds until they would be. A request
   * larger than the bucket (a replica's share is smaller than the fleet's burst, which admitted its
   * size) is taken from a full bucket, leaving it in debt: otherwise its retry time would never
   * come.
   */
  long tryTake(long tokens, long now) {
    long need = Math.min(tokens, capacity);
    for (; ; ) {
      State s = state.get();
      State r = refilled(s, now);
      if (r.tokens < need) {
        return Math.max(1, (long) Math.ceil((double) (need - r.tokens) * periodNanos / refill));
      }
      if (state.compareAndSet(s, new State(r.tokens - tokens, r.refilledAtNanos))) {
        return 0;
      }
    }
  }

  /** Adds {@code delta} to the charge: positive may leave debt, negative refunds up to capacity. */
  void adjust(long delta, long now) {
    for (; ; ) {
      State s = state.get();
      State r = refilled(s, now);
      long tokens = Math.min(capacity, Math.max(-(1L << 62), r.tokens - delta));
      if (state.compareAndSet(s, new State(tokens, r.refilledAtNanos))) {
        return;
      }
    }
  }

  /**
   * Draws the bucket down by {@code delta} tokens spent elsewhere (never below zero, nor lower than
   * it is), or gives back {@code -delta} (never above capacity).
   */
  void charge(long delta, long now) {
    if (delta == 0) {
      return;
    }
    for (; ; ) {
      State s = state.get();
      State r = refilled(s, now);
      long tokens =
          delta > 0
              ? Math.max(Math.min(r.tokens, 0), r.tokens - delta)
              : Math.min(capacity, r.tokens - delta);
      if (state.compareAndSet(s, new State(tokens, r.refilledAtNanos))) {
        return;
      }
    }
  }

  /** The bucket's capacity, tokens. */
  long capacity() {
    return capacity;
  }

  long available(long now) {
    return refilled(state.get(), now).tokens;
  }
}
