package dev.prefixrouter.bench.jmh;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.scoring.EstimatedTtftScorer;
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
 * What the threads routing on one engine share in the scorer: one engine of 16 backends without a
 * prefix index, the default est-TTFT scorer (route shares, calibration), every decision followed by
 * its first token and completion, routed by all the benchmark's threads. Run with one thread and
 * with two and compare the throughputs (the host's ceiling: {@code scaling-probe}'s hashing ratio):
 *
 * <pre>java -jar benchmarks/target/benchmarks.jar jmh 'SharedScorerBenchmark' -t 1  (then -t 2)
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class SharedScorerBenchmark {
  @Param({"16"})
  int candidates;

  private RoutingEngine engine;
  private final RouteRequest[] requests = new RouteRequest[64];
  private final Usage usage = Usage.of(1024, 16);

  @Setup
  public void setup() {
    // a clock that never moves: every first token is observed at 0 ms, so the fit sees no signal
    // and keeps the priors (the observations are still fitted), and no run differs from another
    // by what the host's clock made the fit publish
    var b = RoutingEngine.builder().scorer(EstimatedTtftScorer.defaults()).ticker(() -> 0L);
    for (int i = 0; i < candidates; i++) {
      b.backend(Backend.of("b" + i, "m"));
    }
    engine = b.build();
    for (int i = 0; i < requests.length; i++) {
      int[] tokens = new int[1024];
      tokens[0] = i; // 64 prefix groups
      requests[i] =
          RouteRequest.builder("t", "m")
              .prompt(Prompt.ofTokens(tokens))
              .maxOutputTokens(16)
              .build();
    }
  }

  /** Per thread: which request is next. */
  @State(Scope.Thread)
  public static class Cursor {
    int next;
  }

  @Benchmark
  public Object routeFirstTokenComplete(Cursor cursor) {
    Routed r = (Routed) engine.route(requests[cursor.next++ & 63]);
    r.lease().firstToken();
    r.lease().complete(usage);
    return r;
  }
}
