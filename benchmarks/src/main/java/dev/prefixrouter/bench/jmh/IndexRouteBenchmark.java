package dev.prefixrouter.bench.jmh;

import dev.prefixrouter.api.spi.IndexSignal;
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
 * The index's share of a held {@code route()}, without the engine: {@code match} of a held 4k-token
 * prompt against 16 backends, the LRU age of each, then {@code recordRouted} on the backend that
 * holds it (a recency refresh only), on one thread and on two threads sharing the index. The ratio
 * {@code held2Threads / held} is the index's own scaling, apart from the engine's shared state;
 * {@code matchOnly*} and {@code touchOnly*} split it into the lock-free match and the recency
 * refresh of a held path (which takes the backend's mirror lock alone).
 *
 * <pre>java -jar benchmarks/target/benchmarks.jar jmh 'IndexRouteBenchmark' -bm thrpt</pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
    value = 1,
    jvmArgs = {"-Xms4g", "-Xmx4g", "-XX:+AlwaysPreTouch"})
public class IndexRouteBenchmark {
  private IndexFixture fx;

  @Setup
  public void setup() {
    fx = new IndexFixture(16, 1_000_000, 256, 11);
  }

  private static final java.util.concurrent.atomic.AtomicInteger THREADS =
      new java.util.concurrent.atomic.AtomicInteger();

  /** Per-thread cursor (threads apart, not in step). */
  @State(Scope.Thread)
  public static class Cursor {
    int next = (int) (Thread.currentThread().getId() * 101 % 256);
    final int parity = THREADS.getAndIncrement() & 1;
    long now = 1L << 40;
    final int[] out = new int[16];
  }

  private long route(Cursor c) {
    int i = c.next++ & 255;
    long[] keys = fx.prompts[i];
    fx.index.match(keys, keys.length, fx.slots, 16, c.out);
    long age = 0;
    for (int s = 0; s < 16; s++) {
      age += fx.index.signal(s, IndexSignal.LRU_AGE_NANOS, c.now);
    }
    fx.index.recordRouted(keys, keys.length, fx.promptSlots[i], c.now++);
    return age + c.out[fx.promptSlots[i]];
  }

  @Benchmark
  @Threads(1)
  public long matchOnly(Cursor c) {
    int i = c.next++ & 255;
    long[] keys = fx.prompts[i];
    fx.index.match(keys, keys.length, fx.slots, 16, c.out);
    return c.out[fx.promptSlots[i]];
  }

  @Benchmark
  @Threads(2)
  public long matchOnly2(Cursor c) {
    int i = c.next++ & 255;
    long[] keys = fx.prompts[i];
    fx.index.match(keys, keys.length, fx.slots, 16, c.out);
    return c.out[fx.promptSlots[i]];
  }

  @Benchmark
  @Threads(1)
  public long touchOnly(Cursor c) {
    int i = c.next++ & 255;
    long[] keys = fx.prompts[i];
    fx.index.recordRouted(keys, keys.length, fx.promptSlots[i], c.now++);
    return i;
  }

  @Benchmark
  @Threads(2)
  public long touchOnly2(Cursor c) {
    int i = c.next++ & 255;
    long[] keys = fx.prompts[i];
    fx.index.recordRouted(keys, keys.length, fx.promptSlots[i], c.now++);
    return i;
  }

  @Benchmark
  @Threads(1)
  public long held(Cursor c) {
    return route(c);
  }

  @Benchmark
  @Threads(2)
  public long held2Threads(Cursor c) {
    return route(c);
  }

  /**
   * {@link #touchOnly2} with each thread on its own backends (even or odd slots): what two threads
   * reach when they never refresh the same backend's mirror.
   */
  @Benchmark
  @Threads(2)
  public long touchOnly2Disjoint(Cursor c) {
    int i;
    do {
      i = c.next++ & 255;
    } while ((fx.promptSlots[i] & 1) != c.parity);
    long[] keys = fx.prompts[i];
    fx.index.recordRouted(keys, keys.length, fx.promptSlots[i], c.now++);
    return i;
  }

  /** An index of its own per thread. */
  @State(Scope.Thread)
  public static class OwnIndex {
    IndexFixture fx;

    @Setup
    public void setup() {
      fx = new IndexFixture(16, 1_000_000, 256, 11);
    }
  }

  /** {@link #touchOnly2} with an index per thread: nothing shared, the host's ceiling. */
  @Benchmark
  @Threads(2)
  public long touchOnly2Unshared(OwnIndex own, Cursor c) {
    int i = c.next++ & 255;
    long[] keys = own.fx.prompts[i];
    own.fx.index.recordRouted(keys, keys.length, own.fx.promptSlots[i], c.now++);
    return i;
  }
}
