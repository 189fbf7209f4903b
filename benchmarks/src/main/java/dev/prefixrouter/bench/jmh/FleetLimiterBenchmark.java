package dev.prefixrouter.bench.jmh;

import dev.prefixrouter.api.spi.Admission;
import dev.prefixrouter.api.spi.TenantLimiter;
import dev.prefixrouter.bench.Bucket4jFleetLimiter;
import dev.prefixrouter.redis.FleetQuota;
import dev.prefixrouter.redis.RedisTenantLimiter;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The hot-path cost of a fleet quota on the Redis at {@code 127.0.0.1:6379}: one reservation of
 * 1,000 tokens and its true-up (-200) per operation on one tenant whose quota never runs out, with
 * {@link RedisTenantLimiter} ({@code leased}: allowance leased in chunks by a worker thread) and
 * with Bucket4j's Lettuce proxy ({@link Bucket4jFleetLimiter}: {@code bucket4j}, a Redis call per
 * operation; {@code bucket4j-delaying}, Bucket4j's delaying optimization with a 1,000,000-token
 * unsynchronized allowance). Keys under a unique prefix, deleted at teardown.
 *
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar jmh FleetLimiterBenchmark -f 1 -wi 2 -i 3 -w 1 -r 1
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(1)
public class FleetLimiterBenchmark {
  private static final String URI = "redis://127.0.0.1:6379";
  private static final long BIG = 1L << 50;

  /** Bucket4j refills at most one token per nanosecond; still far more than the load here. */
  private static final long BUCKET4J_REFILL_PER_SECOND = 1_000_000_000L;

  @Param({"leased", "bucket4j", "bucket4j-delaying"})
  public String limiter;

  private TenantLimiter l;
  private final String prefix = "prefixrouter-jmh:" + UUID.randomUUID() + ":";

  @Setup
  public void setup() throws InterruptedException {
    l =
        switch (limiter) {
          case "leased" ->
              RedisTenantLimiter.builder(URI)
                  .keyPrefix(prefix)
                  .defaultQuota(new FleetQuota(BIG, BIG, Duration.ofSeconds(1)))
                  .build();
          case "bucket4j" ->
              new Bucket4jFleetLimiter(
                  URI,
                  prefix,
                  BIG,
                  BUCKET4J_REFILL_PER_SECOND,
                  Duration.ofSeconds(1),
                  System::nanoTime,
                  0);
          case "bucket4j-delaying" ->
              new Bucket4jFleetLimiter(
                  URI,
                  prefix,
                  BIG,
                  BUCKET4J_REFILL_PER_SECOND,
                  Duration.ofSeconds(1),
                  System::nanoTime,
                  1_000_000);
          default -> throw new IllegalArgumentException(limiter);
        };
    if (l instanceof RedisTenantLimiter r) {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (!r.redisUp() && System.nanoTime() < deadline) {
        Thread.sleep(10); // the worker connects in the background
      }
    }
  }

  @Benchmark
  public Admission reserveAndTrueUp() {
    long now = System.nanoTime();
    Admission a = l.tryAcquire("acme", 1_000, now);
    l.adjust("acme", -200, now);
    return a;
  }

  @TearDown(Level.Trial)
  public void tearDown() throws Exception {
    if (l instanceof RedisTenantLimiter r) {
      System.out.printf(
          "%nleased: %d leases, %d fallback admissions%n", r.leases(), r.fallbackAdmissions());
    }
    ((AutoCloseable) l).close();
    RedisClient client = RedisClient.create(URI);
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
