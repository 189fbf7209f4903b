package dev.prefixrouter.bench.jmh;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.scoring.CircuitBreakers;
import dev.prefixrouter.scoring.Policies;
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
 * Cost of one decision by scorer and candidate count: {@code route()} + {@code complete()} on an
 * engine without prefix index (so the difference between scorers is the scorer), optionally with
 * circuit breakers (the difference is the breaker overhead).
 *
 * <pre>java -jar benchmarks/target/benchmarks.jar jmh ScoringBenchmark -prof gc</pre>
 *
 * <p>{@code -p scorer=est-ttft/-balance} (any {@link Policies#byName} name) compares a variant
 * built from fewer terms.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class ScoringBenchmark {
  @Param({"8", "64", "256"})
  int candidates;

  @Param({"least-in-flight", "est-ttft", "llmd-3-2-2"})
  String scorer;

  @Param({"false", "true"})
  boolean breakers;

  private RoutingEngine engine;
  private RouteRequest request;
  private final Usage usage = Usage.of(1024, 16);

  @Setup
  public void setup() {
    var b = RoutingEngine.builder().maxBackends(256);
    Scorer s = scorer.equals("least-in-flight") ? Scorer.leastInFlight() : Policies.byName(scorer);
    b.scorer(s);
    if (breakers) {
      b.health(CircuitBreakers.defaults());
    }
    for (int i = 0; i < candidates; i++) {
      b.backend(Backend.of("b" + i, "m"));
    }
    engine = b.build();
    request =
        RouteRequest.builder("t", "m")
            .prompt(Prompt.ofTokens(new int[1024]))
            .maxOutputTokens(16)
            .build();
  }

  @Benchmark
  public Object routeAndComplete() {
    Routed r = (Routed) engine.route(request);
    r.lease().complete(usage);
    return r;
  }
}
