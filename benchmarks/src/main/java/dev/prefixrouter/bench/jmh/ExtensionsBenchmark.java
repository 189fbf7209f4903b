package dev.prefixrouter.bench.jmh;

import dev.prefixrouter.api.CapacityObjective;
import dev.prefixrouter.api.DisaggregatedRouter;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.api.WorkflowRouter;
import dev.prefixrouter.api.spi.PredictionSink;
import dev.prefixrouter.scoring.EstimatedTtftScorer;
import dev.prefixrouter.scoring.MediaAffinityTerm;
import java.time.Duration;
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
 * Issue #21's "{@code route()} of a request that uses none of the extensions costs nothing extra",
 * in JMH: a held 4k-token prompt routed (then first token and completion) on a {@link RouteFixture}
 * engine that is either plain est-ttft ({@code plain}) or has every opt-in extension configured
 * ({@code extensions}: est-ttft with the {@link MediaAffinityTerm}, a capacity objective, and a
 * {@link WorkflowRouter} and a {@link DisaggregatedRouter} built over the engine), the request
 * using none of them. Both cases run in one JMH invocation, one fork each; {@link ExtensionsProbe}
 * is the paired figure that cancels the host's drift.
 *
 * <pre>java -jar benchmarks/target/benchmarks.jar jmh ExtensionsBenchmark -bm sample -prof gc</pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
    value = 1,
    jvmArgs = {"-Xms4g", "-Xmx4g", "-XX:+AlwaysPreTouch"})
public class ExtensionsBenchmark {
  @Param({"plain", "perRequest", "extensions"})
  public String engine;

  private static final Usage USAGE = Usage.of(4096, 64);

  private RouteFixture fixture;
  private RouteRequest[] requests;
  private int next;
  // kept reachable so the routers over the engine exist for the whole run, as in a host
  private Object[] routers;

  @Setup
  public void setup() {
    if (engine.equals("plain")) {
      fixture = new RouteFixture();
      routers = new Object[0];
    } else {
      fixture =
          new RouteFixture(
              PredictionSink.none(),
              EstimatedTtftScorer.builder().addTerm(MediaAffinityTerm.builder().build()).build(),
              engine.equals("extensions")
                  ? CapacityObjective.ttft(Duration.ofMillis(500), 0.95)
                  : null);
      routers =
          new Object[] {
            WorkflowRouter.builder(fixture.engine).build(),
            DisaggregatedRouter.builder(fixture.engine).build()
          };
    }
    requests = new RouteRequest[256]; // the prompts RouteFixture#held cycles through
    for (int i = 0; i < requests.length; i++) {
      requests[i] =
          RouteRequest.builder("t", "m").prompt(fixture.held(i)).maxOutputTokens(64).build();
    }
  }

  /**
   * A held prompt through {@code engine.route}, no media, no workflow step, no P/D role; then its
   * first token and completion. The host's objects (the request, the usage) are built in setup, so
   * what is allocated per operation is the engine's alone.
   */
  @Benchmark
  public Routed routeHeld() {
    Routed r = (Routed) fixture.engine.route(requests[next++ & (requests.length - 1)]);
    r.lease().firstToken();
    r.lease().complete(USAGE);
    return r;
  }
}
