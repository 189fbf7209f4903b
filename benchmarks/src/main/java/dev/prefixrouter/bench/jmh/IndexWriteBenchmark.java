package dev.prefixrouter.bench.jmh;

import dev.prefixrouter.radix.RadixPrefixIndex;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * {@code recordRouted} throughput in blocks per second on one thread, with the mirror full so that
 * every new block evicts one: paths of 256 new blocks (all inserts + evictions) and re-routing an
 * already held path (all touches).
 *
 * <pre>java -jar benchmarks/target/benchmarks.jar jmh IndexWriteBenchmark -prof gc</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
    value = 1,
    jvmArgs = {"-Xms2g", "-Xmx2g", "-XX:+AlwaysPreTouch"})
public class IndexWriteBenchmark {
  private static final int PATH = 256;
  private RadixPrefixIndex index;
  private long[][] fresh;
  private long[] held;
  private int next;
  private long now;

  @Setup
  public void setup() {
    index = RadixPrefixIndex.builder().predictionTtl(Duration.ZERO).build();
    for (int b = 0; b < 16; b++) {
      index.addBackend(b, 100_000);
    }
    SplittableRandom rnd = new SplittableRandom(3);
    fresh = new long[4096][PATH];
    for (long[] p : fresh) {
      for (int i = 0; i < PATH; i++) {
        p[i] = rnd.nextLong();
      }
    }
    held = fresh[0].clone();
    for (int i = 0; i < 100_000 / PATH + 1; i++) {
      index.recordRouted(fresh[i % fresh.length], fresh[i % fresh.length].length, 0, now++);
    }
    index.recordRouted(held, held.length, 1, now++);
  }

  /** New paths on a full backend: each block is an insert plus an eviction. */
  @Benchmark
  @OperationsPerInvocation(PATH)
  public void insertAndEvict() {
    long[] p = fresh[next++ & 4095];
    p[0] ^= now; // make the path new every time
    index.recordRouted(p, p.length, 0, now++);
  }

  /** A path the backend already holds: each block is a recency touch. */
  @Benchmark
  @OperationsPerInvocation(PATH)
  public void touchHeld() {
    index.recordRouted(held, held.length, 1, now++);
  }
}
