package dev.prefixrouter.bench;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.spi.Admission;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The comparison of issue #19's quota target on the shared Redis: the scenario of
 * RedisTenantLimiterTest.fourReplicasHoldTheTenantWithinFivePercentOfItsRate (four replicas, each
 * trying 20 reservations of 100 tokens every 20 ms of simulated time, true-ups of -30..+70, a
 * 20,000-token burst refilled at 10,000 tokens/s, 80 s) run through {@link Bucket4jFleetLimiter},
 * with a Redis call per operation and with Bucket4j's delaying optimization (1,000 tokens, the
 * leased limiter's chunk). Prints the charged/rate ratio over [20 s, 80 s) and the Redis calls per
 * admission for benchmarks/README.
 */
@Tag("stress")
class Bucket4jFleetLimiterTest {
  private static final long MS = 1_000_000L;
  private static final long SECOND = 1_000 * MS;

  @Test
  void perCallBucketHoldsTheFleetRate() {
    assertThat(run(0)).isBetween(0.95, 1.05);
  }

  @Test
  void delayingOptimization() {
    double ratio = run(1_000);
    assertThat(ratio).isPositive(); // reported, not a target of this variant
  }

  private static double run(long delayChunk) {
    String prefix = "prefixrouter-test:" + UUID.randomUUID() + ":";
    AtomicLong clock = new AtomicLong(1_000 * SECOND);
    List<Bucket4jFleetLimiter> replicas = new ArrayList<>();
    try {
      for (int i = 0; i < 4; i++) {
        replicas.add(
            new Bucket4jFleetLimiter(
                "redis://127.0.0.1:6379",
                prefix,
                20_000,
                600_000,
                Duration.ofMinutes(1),
                clock::get,
                delayChunk));
      }
      SplittableRandom random = new SplittableRandom(7);
      long start = clock.get();
      long chargedInWindow = 0;
      long admitted = 0;
      long calls = 0;
      long begin = System.nanoTime();
      for (long t = 0; t < 80 * SECOND; t += 20 * MS) {
        clock.set(start + t);
        for (Bucket4jFleetLimiter r : replicas) {
          for (int i = 0; i < 20; i++) {
            Admission a = r.tryAcquire("acme", 100, clock.get());
            calls++;
            if (!a.granted()) {
              break;
            }
            admitted++;
            long trueUp = random.nextLong(-30, 71);
            r.adjust("acme", trueUp, clock.get());
            calls += trueUp == 0 ? 0 : 1;
            if (t >= 20 * SECOND) {
              chargedInWindow += 100 + trueUp;
            }
          }
        }
      }
      double wallMs = (System.nanoTime() - begin) / 1e6;
      double ratio = chargedInWindow / 600_000.0;
      System.out.printf(
          "bucket4j delay=%d: charged/rate over [20 s, 80 s) = %.4f; %d admitted, %d limiter calls"
              + " (%.2f per admission), %.0f ms wall, %.1f us per call%n",
          delayChunk,
          ratio,
          admitted,
          calls,
          (double) calls / admitted,
          wallMs,
          wallMs * 1_000 / calls);
      return ratio;
    } finally {
      replicas.forEach(Bucket4jFleetLimiter::close);
      RedisClient client = RedisClient.create("redis://127.0.0.1:6379");
      try (StatefulRedisConnection<String, String> c = client.connect()) {
        List<String> keys = c.sync().keys(prefix + "*");
        if (!keys.isEmpty()) {
          c.sync().del(keys.toArray(String[]::new));
        }
      } finally {
        client.shutdown();
      }
    }
  }
}
