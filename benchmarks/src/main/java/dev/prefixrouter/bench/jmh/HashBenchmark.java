package dev.prefixrouter.bench.jmh;

import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.radix.BlockHashers;
import java.util.SplittableRandom;
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
 * Block hashing throughput: chained keys of a token prompt (16-token blocks) and of a text prompt
 * (64-char blocks), written into a reused buffer as the engine does.
 *
 * <pre>java -jar benchmarks/target/benchmarks.jar jmh HashBenchmark -prof gc</pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class HashBenchmark {
  @Param({"1024", "8192", "32768"})
  int tokens;

  private final BlockHasher tokenHasher = BlockHashers.tokens(16);
  private final BlockHasher charHasher = BlockHashers.chars(64);
  private Prompt tokenPrompt;
  private Prompt textPrompt;
  private long[] out;

  @Setup
  public void setup() {
    SplittableRandom rnd = new SplittableRandom(42);
    int[] ids = new int[tokens];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = rnd.nextInt(150_000);
    }
    tokenPrompt = Prompt.ofTokens(ids);
    StringBuilder sb = new StringBuilder(tokens * 4);
    for (int i = 0; i < tokens * 4; i++) {
      sb.append((char) ('a' + rnd.nextInt(26)));
    }
    textPrompt = Prompt.ofText(sb.toString());
    out = new long[tokens]; // at least one slot per block of either hasher
  }

  @Benchmark
  public long tokenBlocks() {
    int n = tokenHasher.keys(tokenPrompt, 0, out);
    return out[n - 1];
  }

  @Benchmark
  public long textBlocks() {
    int n = charHasher.keys(textPrompt, 0, out);
    return out[n - 1];
  }
}
