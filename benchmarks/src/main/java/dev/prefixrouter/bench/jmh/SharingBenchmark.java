package dev.prefixrouter.bench.jmh;

import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.spi.PredictionSink;
import dev.prefixrouter.redis.RedisPredictionSharing;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
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
 * What sharing predictions through Redis costs {@code route()}: {@link RouteFixture}'s engine (4k-
 * token prompts, 256 keys each, index warmed to ~1M blocks) routing held prompts with no sink
 * ({@code none}) and with a {@link RedisPredictionSharing} attached to the Redis at {@code
 * 127.0.0.1:6379} ({@code redis}: each route copies its 256 keys into the batch, the publisher
 * thread sends them meanwhile). The stream is capped at 64 entries under a unique prefix deleted at
 * teardown; the teardown prints the sharing's counters (published, dropped).
 *
 * <pre>java -jar benchmarks/target/benchmarks.jar jmh SharingBenchmark -f 1 -wi 3 -i 5</pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
    value = 1,
    jvmArgs = {"-Xms4g", "-Xmx4g", "-XX:+AlwaysPreTouch"})
public class SharingBenchmark {
  @Param({"none", "redis"})
  public String sharing;

  private RouteFixture fixture;
  private RedisPredictionSharing redis;
  private final String prefix = "prefixrouter-jmh:" + UUID.randomUUID() + ":";
  private int next;

  @Setup
  public void setup() {
    if (sharing.equals("redis")) {
      redis =
          RedisPredictionSharing.builder("redis://127.0.0.1:6379")
              .keyPrefix(prefix)
              .maxStreamEntries(64)
              .build();
      fixture = new RouteFixture(redis);
      redis.attach(fixture.engine);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (!redis.redisUp()) {
        if (System.nanoTime() - deadline > 0) {
          throw new IllegalStateException("no Redis at 127.0.0.1:6379");
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
      }
    } else {
      fixture = new RouteFixture(PredictionSink.none());
    }
  }

  @Benchmark
  public Routed routeHeld() {
    return fixture.complete(fixture.held(next++));
  }

  @TearDown
  public void tearDown() {
    if (redis != null) {
      System.out.println("\nsharing: " + redis.stats());
      redis.close();
      RedisClient client = RedisClient.create("redis://127.0.0.1:6379");
      try (StatefulRedisConnection<String, String> c = client.connect()) {
        List<String> keys = c.sync().keys(prefix + "*");
        if (!keys.isEmpty()) {
          c.sync().del(keys.toArray(String[]::new));
        }
      } finally {
        client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
      }
    }
  }
}
