package dev.prefixrouter.bench.jmh;

import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import java.util.concurrent.TimeUnit;
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
import org.openjdk.jmh.annotations.Warmup;

/**
 * Match latency of a 4k-token prompt (256 blocks, fully held by one backend) against a warmed
 * index, with and without hashing the prompt first. Sample mode gives the median.
 *
 * <pre>java -jar benchmarks/target/benchmarks.jar jmh IndexMatchBenchmark -prof gc</pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
    value = 1,
    jvmArgs = {"-Xms4g", "-Xmx4g", "-XX:+AlwaysPreTouch"})
public class IndexMatchBenchmark {
  @Param({"10000", "1000000"})
  long blocks;

  @Param({"8", "16", "64", "256"})
  int backends;

  private IndexFixture fx;
  private int[] out;
  private int next;

  @Setup
  public void setup() {
    fx = new IndexFixture(backends, blocks, 256, 7);
    out = new int[backends];
  }

  @Benchmark
  public int[] match() {
    long[] keys = fx.prompts[next++ & 255];
    fx.index.match(keys, keys.length, fx.slots, fx.slots.length, out);
    return out;
  }

  @Benchmark
  public int[] hashAndMatch() {
    Prompt p = fx.rawPrompts[next++ & 255];
    long[] keys = BlockHasher.keysOf(IndexFixture.HASHER, p, 0);
    fx.index.match(keys, keys.length, fx.slots, fx.slots.length, out);
    return out;
  }
}
