package dev.prefixrouter.redis;

import java.time.Duration;
import java.util.Objects;

/**
 * A tenant's quota for the whole fleet of replicas: a bucket of {@code capacityTokens} that refills
 * {@code refillTokens} every {@code period}, continuously.
 *
 * <p>Bounds: capacity and refill in {@code [1, 2^50]} (the fleet bucket is kept in a Lua double,
 * exact below 2^53), period in {@code [1 ms, 1 day]}.
 *
 * @param capacityTokens the burst: most tokens the bucket holds
 * @param refillTokens tokens added per {@code period}
 * @param period the refill period
 */
public record FleetQuota(long capacityTokens, long refillTokens, Duration period) {

  /** Largest capacity or refill: the Lua script's doubles stay exact below 2^53. */
  public static final long MAX_TOKENS = 1L << 50;

  public FleetQuota {
    Objects.requireNonNull(period, "period");
    if (capacityTokens < 1 || capacityTokens > MAX_TOKENS) {
      throw new IllegalArgumentException(
          "capacityTokens must be in [1, 2^50], was " + capacityTokens);
    }
    if (refillTokens < 1 || refillTokens > MAX_TOKENS) {
      throw new IllegalArgumentException("refillTokens must be in [1, 2^50], was " + refillTokens);
    }
    if (period.compareTo(Duration.ofMillis(1)) < 0 || period.compareTo(Duration.ofDays(1)) > 0) {
      throw new IllegalArgumentException("period must be in [1 ms, 1 day], was " + period);
    }
  }

  /** {@code tokensPerMinute} per minute with a one-minute burst. */
  public static FleetQuota perMinute(long tokensPerMinute) {
    return new FleetQuota(tokensPerMinute, tokensPerMinute, Duration.ofMinutes(1));
  }

  /** Nanoseconds the bucket needs to refill {@code tokens} (saturating). */
  long nanosToRefill(long tokens) {
    if (tokens <= 0) {
      return 0;
    }
    double nanos = (double) tokens * period.toNanos() / refillTokens;
    return nanos >= Long.MAX_VALUE / 2.0 ? Long.MAX_VALUE / 2 : (long) Math.ceil(nanos);
  }

  /** This quota divided among {@code replicas} (each part at least one token). */
  FleetQuota share(int replicas) {
    return new FleetQuota(
        Math.max(1, capacityTokens / replicas), Math.max(1, refillTokens / replicas), period);
  }
}
