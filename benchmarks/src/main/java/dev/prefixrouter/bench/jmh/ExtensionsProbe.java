package dev.prefixrouter.bench.jmh;

import dev.prefixrouter.api.CapacityObjective;
import dev.prefixrouter.api.DisaggregatedRouter;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.WorkflowRouter;
import dev.prefixrouter.api.spi.PredictionSink;
import dev.prefixrouter.scoring.EstimatedTtftScorer;
import dev.prefixrouter.scoring.MediaAffinityTerm;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;

/**
 * Issue #21's "a request that uses none of the extensions costs nothing extra", measured so that a
 * noisy shared host cannot hide a difference: two {@link RouteFixture} engines in one JVM, the same
 * prompts, one plain (est-ttft) and one with every opt-in extension configured (est-ttft with the
 * {@link MediaAffinityTerm}, a capacity objective, a {@link WorkflowRouter} and a {@link
 * DisaggregatedRouter} built over it), both routing plain requests (no media, no step) through
 * {@code engine.route}. Blocks of routes alternate between the two (ABBA order, so drift cancels),
 * each block timed; the result is the distribution of per-pair time ratios (extensions / plain)
 * and, from the JVM's per-thread allocation counter, the bytes allocated per route on each.
 *
 * <pre>java -Xms4g -Xmx4g -XX:+AlwaysPreTouch -jar benchmarks/target/benchmarks.jar ext-probe
 * </pre>
 */
public final class ExtensionsProbe {
  private ExtensionsProbe() {}

  public static void run(PrintStream out, int pairs, int perBlock) {
    RouteFixture plain = new RouteFixture();
    RouteFixture ext =
        new RouteFixture(
            PredictionSink.none(),
            EstimatedTtftScorer.builder().addTerm(MediaAffinityTerm.builder().build()).build(),
            CapacityObjective.ttft(Duration.ofMillis(500), 0.95));
    WorkflowRouter workflows = WorkflowRouter.builder(ext.engine).build();
    DisaggregatedRouter pd = DisaggregatedRouter.builder(ext.engine).build();
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long tid = Thread.currentThread().getId();
    long sink = 0;
    // warm both (JIT), then measure
    for (int i = 0; i < 3 * perBlock; i++) {
      sink += block(plain, i, 1) + block(ext, i, 1);
    }
    double[] ratio = new double[pairs];
    long plainNanos = 0;
    long extNanos = 0;
    long plainBytes = 0;
    long extBytes = 0;
    int next = 0;
    for (int p = 0; p < pairs; p++) {
      boolean plainFirst = (p & 1) == 0;
      long[] t = new long[2];
      long[] bytes = new long[2];
      for (int k = 0; k < 2; k++) {
        int which = (k == 0) == plainFirst ? 0 : 1;
        RouteFixture f = which == 0 ? plain : ext;
        long b0 = threads.getThreadAllocatedBytes(tid);
        long t0 = System.nanoTime();
        sink += block(f, next, perBlock);
        t[which] = System.nanoTime() - t0;
        bytes[which] = threads.getThreadAllocatedBytes(tid) - b0;
      }
      next += perBlock;
      ratio[p] = (double) t[1] / t[0];
      plainNanos += t[0];
      extNanos += t[1];
      plainBytes += bytes[0];
      extBytes += bytes[1];
    }
    double[] sorted = ratio.clone();
    Arrays.sort(sorted);
    long routes = (long) pairs * perBlock;
    out.printf(
        Locale.ROOT,
        "%d pairs of %d routes each (held 4k prompts, 16 backends, 1M blocks)%n",
        pairs,
        perBlock);
    out.printf(
        Locale.ROOT,
        "plain:      %.2f us/route, %.0f B/route%n",
        plainNanos / 1e3 / routes,
        (double) plainBytes / routes);
    out.printf(
        Locale.ROOT,
        "extensions: %.2f us/route, %.0f B/route%n",
        extNanos / 1e3 / routes,
        (double) extBytes / routes);
    out.printf(
        Locale.ROOT,
        "time ratio extensions/plain per pair: median %.3f, p10 %.3f, p90 %.3f, min %.3f, max %.3f"
            + " (%s, %s, %d)%n",
        sorted[pairs / 2],
        sorted[pairs / 10],
        sorted[pairs * 9 / 10],
        sorted[0],
        sorted[pairs - 1],
        workflows.stats().groups(),
        pd,
        sink & 1);
  }

  private static long block(RouteFixture f, int from, int n) {
    long s = 0;
    for (int i = 0; i < n; i++) {
      Prompt p = f.held(from + i);
      s += f.complete(p).matchedTokens();
    }
    return s;
  }
}
