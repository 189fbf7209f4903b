package dev.prefixrouter.redis.archfixture;

import dev.prefixrouter.api.spi.TenantLimiter;
import dev.prefixrouter.scoring.TenantTokenBuckets;

/** Violates: router-redis reaching into router-scoring for its limiter. */
public final class RedisUsingScoring {
  private RedisUsingScoring() {}

  public static TenantLimiter limiter() {
    return TenantTokenBuckets.perMinute(1_000);
  }
}
