package dev.prefixrouter.scoring;

import java.time.Duration;
import java.util.Objects;

/**
 * A tenant's token budget: a bucket of {@code capacityTokens} that refills {@code refillTokens}
 * every {@code period} (continuously, pro rata), plus an optional request-count bucket.
 *
 * @param capacityTokens burst: the most tokens the bucket holds, {@code >= 1}
 * @param refillTokens tokens added per period, {@code >= 1}
 * @param period refill period, at least 1 ms
 * @param maxRequestsPerPeriod requests allowed per period (same burst), or 0 for no request limit
 */
public record Quota(
    long capacityTokens, long refillTokens, Duration period, long maxRequestsPerPeriod) {

  /** Largest accepted token amount: 2^40 (about 10^12). */
  public static final long MAX_TOKENS = 1L << 40;

  public Quota {
    if (capacityTokens < 1 || capacityTokens > MAX_TOKENS) {
      throw new IllegalArgumentException(
          "capacityTokens must be in [1, 2^40], was " + capacityTokens);
    }
    if (refillTokens < 1 || refillTokens > MAX_TOKENS) {
      throw new IllegalArgumentException("refillTokens must be in [1, 2^40], was " + refillTokens);
    }
    Objects.requireNonNull(period, "period");
    if (period.compareTo(Duration.ofMillis(1)) < 0 || period.compareTo(Duration.ofDays(366)) > 0) {
      throw new IllegalArgumentException("period must be in [1 ms, 366 days], was " + period);
    }
    if (maxRequestsPerPeriod < 0 || maxRequestsPerPeriod > MAX_TOKENS) {
      throw new IllegalArgumentException(
          "maxRequestsPerPeriod must be in [0, 2^40], was " + maxRequestsPerPeriod);
    }
  }

  /** {@code tokens} per minute with a burst of one minute's worth, no request limit. */
  public static Quota perMinute(long tokens) {
    return new Quota(tokens, tokens, Duration.ofMinutes(1), 0);
  }

  /** {@code tokens} per second with a burst of one second's worth, no request limit. */
  public static Quota perSecond(long tokens) {
    return new Quota(tokens, tokens, Duration.ofSeconds(1), 0);
  }

  public Quota withBurst(long capacityTokens) {
    return new Quota(capacityTokens, refillTokens, period, maxRequestsPerPeriod);
  }

  public Quota withMaxRequests(long maxRequestsPerPeriod) {
    return new Quota(capacityTokens, refillTokens, period, maxRequestsPerPeriod);
  }
}
