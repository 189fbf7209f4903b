package dev.prefixrouter.bench.jmh;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.GroupThreads;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One reader thread matching 4k-token prompts while one writer thread records new paths on random
 * backends of the same 1M-block, 16-backend index (the 2-core machine's worst case: every write can
 * fail a concurrent match's validation).
 *
 * <pre>java -jar benchmarks/target/benchmarks.jar jmh IndexMixedBenchmark</pre>
 */
@State(Scope.Group)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
    value = 1,
    jvmArgs = {"-Xms4g", "-Xmx4g", "-XX:+AlwaysPreTouch"})
public class IndexMixedBenchmark {
  private IndexFixture fx;
  private long[][] writes;

  @Setup
  public void setup() {
    fx = new IndexFixture(16, 1_000_000, 256, 11);
    SplittableRandom rnd = new SplittableRandom(5);
    writes = new long[1024][256];
    for (long[] w : writes) {
      for (int i = 0; i < w.length; i++) {
        w[i] = rnd.nextLong();
      }
    }
  }

  /** Per-thread cursor. */
  @State(Scope.Thread)
  public static class Cursor {
    int next;
    long now = 1L << 40;
    final int[] out = new int[16];
  }

  @Benchmark
  @Group("mix")
  @GroupThreads(1)
  public int[] read(Cursor c) {
    long[] keys = fx.prompts[c.next++ & 255];
    fx.index.match(keys, keys.length, fx.slots, 16, c.out);
    return c.out;
  }

  @Benchmark
  @Group("mix")
  @GroupThreads(1)
  public void write(Cursor c) {
    long[] w = writes[c.next & 1023];
    w[0] ^= c.now;
    fx.index.recordRouted(w, w.length, c.next++ & 15, c.now++);
  }
}
