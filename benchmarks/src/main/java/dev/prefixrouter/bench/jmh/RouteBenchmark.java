package dev.prefixrouter.bench.jmh;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.radix.BlockHashers;
import dev.prefixrouter.radix.RadixPrefixIndex;
import dev.prefixrouter.scoring.CircuitBreakers;
import dev.prefixrouter.scoring.EstimatedTtftScorer;
import dev.prefixrouter.scoring.TenantTokenBuckets;
import java.time.Duration;
import java.util.SplittableRandom;
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
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * End to end: {@code route()} of a 4k-token prompt with the default parts (xxh3 16-token blocks,
 * radix index warmed to ~1M blocks over 16 backends, est-TTFT scorer, tenant buckets, circuit
 * breakers), then {@code firstToken()} and {@code complete()}; 1 and 2 threads. Half the prompts
 * repeat a warmed prefix, half are new.
 *
 * <pre>java -jar benchmarks/target/benchmarks.jar jmh RouteBenchmark -prof gc</pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode({Mode.SampleTime, Mode.Throughput})
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
    value = 1,
    jvmArgs = {"-Xms4g", "-Xmx4g"})
public class RouteBenchmark {
  private RoutingEngine engine;
  private Prompt[] prompts;

  @Setup
  public void setup() {
    var b =
        RoutingEngine.builder()
            .hasher(BlockHashers.tokens(16))
            .prefixIndex(RadixPrefixIndex.builder().predictionTtl(Duration.ZERO).build())
            .scorer(EstimatedTtftScorer.defaults())
            .limiter(TenantTokenBuckets.perMinute(Long.MAX_VALUE >> 30))
            .health(CircuitBreakers.defaults());
    for (int i = 0; i < 16; i++) {
      b.backend(Backend.of("b" + i, "m").withCapacityBlocks(62_500));
    }
    engine = b.build();
    SplittableRandom rnd = new SplittableRandom(9);
    int[][] system = new int[64][1024];
    for (int[] s : system) {
      for (int i = 0; i < s.length; i++) {
        s[i] = rnd.nextInt(150_000);
      }
    }
    prompts = new Prompt[8192];
    for (int p = 0; p < prompts.length; p++) {
      int[] ids = new int[4096];
      System.arraycopy(system[p % 64], 0, ids, 0, 1024);
      for (int i = 1024; i < ids.length; i++) {
        ids[i] = rnd.nextInt(150_000);
      }
      prompts[p] = Prompt.ofTokens(ids);
    }
    // warm: route every prompt once, plus filler to reach ~1M held blocks
    for (int round = 0; round < 4; round++) {
      for (Prompt p : prompts) {
        complete(p);
      }
    }
  }

  /** Per-thread cursor. */
  @State(Scope.Thread)
  public static class Cursor {
    final SplittableRandom rnd = new SplittableRandom(Thread.currentThread().getId());
    int next;
    long fullyMatched;

    @TearDown
    public void report() {
      if (next > 0 && fullyMatched > 0) {
        System.out.printf("%n[%d of %d routes fully matched]%n", fullyMatched, next);
      }
    }
  }

  private Routed complete(Prompt p) {
    Routed r =
        (Routed) engine.route(RouteRequest.builder("t", "m").prompt(p).maxOutputTokens(64).build());
    r.lease().firstToken();
    r.lease().complete(Usage.of(4096, 64));
    return r;
  }

  @Benchmark
  @Threads(1)
  public Routed route1Thread(Cursor c) {
    return complete(prompts[c.rnd.nextInt(prompts.length)]);
  }

  /** Only prompts whose whole path is held (the 256 most recently warmed, routed in a loop). */
  @Benchmark
  @Threads(1)
  public Routed routeHeld(Cursor c) {
    Routed r = complete(prompts[prompts.length - 1 - (c.next++ & 255)]);
    if (r.matchedTokens() == r.promptTokens()) {
      c.fullyMatched++;
    }
    return r;
  }

  /**
   * Only prompts whose 3k-token tail is not held: the prompts are cycled in order, and the cycle
   * (1.6M distinct blocks) is longer than the fleet's capacity (1M), so LRU never keeps a tail.
   */
  @Benchmark
  @Threads(1)
  public Routed routeNew(Cursor c) {
    int i = c.next++;
    if (c.next == prompts.length) {
      c.next = 0;
    }
    return complete(prompts[i]);
  }

  @Benchmark
  @Threads(2)
  public Routed route2Threads(Cursor c) {
    return complete(prompts[c.rnd.nextInt(prompts.length)]);
  }
}
