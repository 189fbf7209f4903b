package dev.prefixrouter.bench.jmh;

import dev.prefixrouter.api.spi.Admission;
import dev.prefixrouter.scoring.Quota;
import dev.prefixrouter.scoring.TenantTokenBuckets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * {@code TenantTokenBuckets.tryAcquire} + true-up throughput, one hot tenant (worst contention) or
 * a thread-private tenant, with 1 and 2 threads.
 *
 * <pre>java -jar benchmarks/target/benchmarks.jar jmh LimiterBenchmark -prof gc</pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class LimiterBenchmark {
  private TenantTokenBuckets limiter;

  @Setup
  public void setup() {
    limiter =
        TenantTokenBuckets.builder()
            .defaultQuota(new Quota(Quota.MAX_TOKENS, Quota.MAX_TOKENS, Duration.ofSeconds(1), 0))
            .build();
  }

  /** A per-thread tenant name and clock. */
  @State(Scope.Thread)
  public static class Local {
    final String tenant = "tenant-" + Thread.currentThread().getId();
    long now;
  }

  @Benchmark
  @Threads(1)
  public Admission sharedTenant1Thread(Local l) {
    return acquire("shared", l);
  }

  @Benchmark
  @Threads(2)
  public Admission sharedTenant2Threads(Local l) {
    return acquire("shared", l);
  }

  @Benchmark
  @Threads(2)
  public Admission ownTenant2Threads(Local l) {
    return acquire(l.tenant, l);
  }

  private Admission acquire(String tenant, Local l) {
    long now = l.now += 1_000;
    Admission a = limiter.tryAcquire(tenant, 1_000, now);
    limiter.adjust(tenant, -200, now);
    return a;
  }
}
