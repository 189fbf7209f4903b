package dev.prefixrouter.bench;

import dev.prefixrouter.api.spi.Admission;
import dev.prefixrouter.api.spi.TenantLimiter;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.TimeMeter;
import io.github.bucket4j.distributed.BucketProxy;
import io.github.bucket4j.distributed.ExpirationAfterWriteStrategy;
import io.github.bucket4j.distributed.proxy.RemoteBucketBuilder;
import io.github.bucket4j.distributed.proxy.optimization.DelayParameters;
import io.github.bucket4j.distributed.proxy.optimization.Optimizations;
import io.github.bucket4j.redis.lettuce.Bucket4jLettuce;
import io.github.bucket4j.redis.lettuce.cas.LettuceBasedProxyManager;
import io.lettuce.core.RedisClient;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The alternative for fleet tenant quotas, for comparison only (benchmarks/README): one
 * Bucket4j bucket per tenant in Redis through Bucket4j's Lettuce proxy manager (compare-and-swap),
 * with prefix-router's reserve-then-true-up mapped onto Bucket4j's calls: {@code tryAcquire} is
 * {@code tryConsume(tokens)}; a refund is {@code addTokens} (capped at the capacity), an extra
 * charge {@code consumeIgnoringRateLimits} (the bucket may go into debt). Without optimization
 * every call is a Redis round trip on the calling thread; with {@code delaying(chunk)} Bucket4j
 * keeps up to {@code chunk} tokens unsynchronized per replica and syncs on the calling thread when
 * they are used up. Not part of the library: it blocks the routing thread on Redis, which the
 * engine's limiter contract forbids.
 */
public final class Bucket4jFleetLimiter implements TenantLimiter, AutoCloseable {
  private final RedisClient client;
  private final LettuceBasedProxyManager<byte[]> proxies;
  private final BucketConfiguration configuration;
  private final String keyPrefix;
  private final @Nullable DelayParameters delay;
  private final ConcurrentHashMap<String, BucketProxy> buckets = new ConcurrentHashMap<>();

  /**
   * @param uri the Redis
   * @param keyPrefix prefix of the bucket keys
   * @param capacity burst, tokens
   * @param refillTokens tokens refilled per {@code period}, greedily
   * @param clockNanos the fleet's clock (Bucket4j's client-side clock): one timeline shared by the
   *     replicas (a wall clock across processes; a simulated clock in tests)
   * @param delayChunk 0 for a Redis call per operation, else Bucket4j's delaying optimization with
   *     at most this many unsynchronized tokens (and 100 ms of clock)
   */
  public Bucket4jFleetLimiter(
      String uri,
      String keyPrefix,
      long capacity,
      long refillTokens,
      Duration period,
      LongSupplier clockNanos,
      long delayChunk) {
    this.client = RedisClient.create(uri);
    this.keyPrefix = Objects.requireNonNull(keyPrefix, "keyPrefix");
    TimeMeter clock =
        new TimeMeter() {
          @Override
          public long currentTimeNanos() {
            return clockNanos.getAsLong();
          }

          @Override
          public boolean isWallClockBased() {
            return true; // one timeline for every replica, as Bucket4j requires across processes
          }
        };
    this.proxies =
        Bucket4jLettuce.casBasedBuilder(client)
            .clientClock(clock)
            .expirationAfterWrite(
                ExpirationAfterWriteStrategy.basedOnTimeForRefillingBucketUpToMax(
                    Duration.ofMinutes(5)))
            .build();
    this.configuration =
        BucketConfiguration.builder()
            .addLimit(l -> l.capacity(capacity).refillGreedy(refillTokens, period))
            .build();
    this.delay = delayChunk == 0 ? null : new DelayParameters(delayChunk, Duration.ofMillis(100));
  }

  private BucketProxy bucket(String tenant) {
    return buckets.computeIfAbsent(
        tenant,
        t -> {
          RemoteBucketBuilder<byte[]> b = proxies.builder();
          if (delay != null) {
            b = b.withOptimization(Optimizations.delaying(delay));
          }
          return b.build((keyPrefix + t).getBytes(StandardCharsets.UTF_8), () -> configuration);
        });
  }

  @Override
  public Admission tryAcquire(String tenant, long tokens, long nowNanos) {
    return bucket(tenant).tryConsume(tokens)
        ? Admission.GRANTED
        : Admission.denied(1_000_000, "over the Bucket4j fleet quota");
  }

  @Override
  public void adjust(String tenant, long deltaTokens, long nowNanos) {
    if (deltaTokens > 0) {
      bucket(tenant).consumeIgnoringRateLimits(deltaTokens);
    } else if (deltaTokens < 0) {
      bucket(tenant).addTokens(-deltaTokens);
    }
  }

  @Override
  public void close() {
    client.shutdown();
  }
}
