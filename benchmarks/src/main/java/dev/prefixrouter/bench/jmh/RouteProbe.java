package dev.prefixrouter.bench.jmh;

import dev.prefixrouter.api.Prompt;
import java.io.PrintStream;

/**
 * A noise-aware companion of {@link RouteBenchmark}: routes held 4k-token prompts in phases of
 * 40,000 and times, interleaved with every route, hashing the same prompt alone. On a shared VM
 * whole phases can run several times slower for reasons outside the process (the pure hash slows by
 * the same factor); the phase with the fastest hash shows what the code costs, and the route to
 * hash ratio is comparable across machines.
 *
 * <pre>java -Xms4g -Xmx4g -XX:+AlwaysPreTouch -jar benchmarks/target/benchmarks.jar route-probe
 * </pre>
 *
 * <p>Without {@code -XX:+AlwaysPreTouch} the first pass of a growing G1 young generation through
 * never-touched heap pages makes every allocation fault in fresh pages: whole phases, the hash
 * included, run three to four times slower.
 */
public final class RouteProbe {
  private RouteProbe() {}

  public static void run(PrintStream out) {
    RouteFixture f = new RouteFixture();
    int phases = 16;
    int perPhase = 40_000;
    long sink = 0;
    long[] keys = new long[1 << 16]; // a reused buffer, as the engine hashes
    int next = 0;
    double bestHash = Double.MAX_VALUE;
    double routeAtBest = 0;
    for (int phase = 0; phase < phases; phase++) {
      long hashNanos = 0;
      long routeNanos = 0;
      for (int k = 0; k < perPhase; k++) {
        Prompt p = f.held(next++);
        long t0 = System.nanoTime();
        sink += f.hasher.keys(p, 0, keys);
        long t1 = System.nanoTime();
        sink += f.complete(p).matchedTokens();
        long t2 = System.nanoTime();
        hashNanos += t1 - t0;
        routeNanos += t2 - t1;
      }
      double hash = hashNanos / 1e3 / perPhase;
      double route = routeNanos / 1e3 / perPhase;
      out.printf(
          "phase %2d: hash alone %5.1f us, route (held 4k prompt) %5.1f us, ratio %.2f%n",
          phase, hash, route, route / hash);
      if (hash < bestHash) {
        bestHash = hash;
        routeAtBest = route;
      }
    }
    out.printf(
        "quietest phase: hash %.1f us, route %.1f us mean (%d)%n", bestHash, routeAtBest, sink & 1);
  }
}
