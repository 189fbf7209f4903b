package dev.prefixrouter.bench.jmh;

import dev.prefixrouter.api.Routed;
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
 * End to end: {@code route()} of a 4k-token prompt with the default parts ({@link RouteFixture}:
 * index warmed to ~1M blocks over 16 backends), then {@code firstToken()} and {@code complete()}.
 * {@code route1Thread} / {@code route2Threads} pick prompts at random (about 40 % of them have
 * their 3k-token tail evicted by then on one thread; on two, the other thread's open lease makes
 * the load-aware scorer spread more prompts, and far fewer are held: the teardown prints the
 * fraction); {@code routeHeld*} only prompts held in full, {@code routeNew} only prompts whose tail
 * is not held. {@code routeHeld2ThreadsUnshared} (an engine per thread) and {@code
 * routeHeld2ThreadsTenantPerThread} are the references that tell the cost of sharing one engine
 * from what the host's two cores can do. {@code routeHeldCold} draws a held prompt at random from
 * the 4,096 most recent (the index is not hot in CPU caches); {@code hashHot} and {@code hashCold}
 * hash the same prompts alone, the baselines of the route-to-hash ratios in {@code
 * benchmarks/README.md}. See {@link RouteProbe} for a noise-aware figure.
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
    jvmArgs = {"-Xms4g", "-Xmx4g", "-XX:+AlwaysPreTouch"})
public class RouteBenchmark {
  private RouteFixture fixture;

  @Setup
  public void setup() {
    fixture = new RouteFixture();
  }

  /** Per-thread cursor. */
  @State(Scope.Thread)
  public static class Cursor {
    final SplittableRandom rnd = new SplittableRandom(Thread.currentThread().getId());
    final String tenant = "t" + Thread.currentThread().getId();
    int next = (int) (Thread.currentThread().getId() * 101 % 256); // threads apart, not in step
    long routes;
    long fullyMatched;
    final long[] keys = new long[1024];

    long hash(RouteFixture f, dev.prefixrouter.api.Prompt p) {
      int n = f.hasher.keys(p, 0, keys);
      return keys[n - 1];
    }

    Routed count(Routed r) {
      routes++;
      if (r.matchedTokens() == r.promptTokens()) {
        fullyMatched++;
      }
      return r;
    }

    @TearDown
    public void report() {
      if (routes > 0) {
        System.out.printf("%n[%d of %d routes fully matched]%n", fullyMatched, routes);
      }
    }
  }

  @Benchmark
  @Threads(1)
  public Routed route1Thread(Cursor c) {
    return c.count(fixture.complete(fixture.prompts[c.rnd.nextInt(fixture.prompts.length)]));
  }

  @Benchmark
  @Threads(2)
  public Routed route2Threads(Cursor c) {
    return c.count(fixture.complete(fixture.prompts[c.rnd.nextInt(fixture.prompts.length)]));
  }

  /** Only prompts whose whole path is held (the 256 most recently warmed, routed in a loop). */
  @Benchmark
  @Threads(1)
  public Routed routeHeld(Cursor c) {
    return c.count(fixture.complete(fixture.held(c.next++)));
  }

  /**
   * As {@link #routeHeld}, each prompt in a session of its own (the session rules and terms run:
   * pins, the future-wait term's visits).
   */
  @Benchmark
  @Threads(1)
  public Routed routeHeldSession(Cursor c) {
    int i = c.next++;
    return c.count(fixture.complete(fixture.held(i), "t", fixture.heldSession(i)));
  }

  /** A held prompt drawn at random from {@link RouteFixture#COLD_HELD}: the index is cold. */
  @Benchmark
  @Threads(1)
  public Routed routeHeldCold(Cursor c) {
    return c.count(fixture.complete(fixture.heldCold(c.rnd.nextInt())));
  }

  /** Hashing alone the prompts of {@link #routeHeld}, into a reused buffer as the engine does. */
  @Benchmark
  @Threads(1)
  public long hashHot(Cursor c) {
    return c.hash(fixture, fixture.held(c.next++));
  }

  /** Hashing alone the prompts of {@link #routeHeldCold}. */
  @Benchmark
  @Threads(1)
  public long hashCold(Cursor c) {
    return c.hash(fixture, fixture.heldCold(c.rnd.nextInt()));
  }

  /** Hashing alone the prompts of {@link #route1Thread} and {@link #routeNew}. */
  @Benchmark
  @Threads(1)
  public long hashAny(Cursor c) {
    return c.hash(fixture, fixture.prompts[c.rnd.nextInt(fixture.prompts.length)]);
  }

  /**
   * {@link #hashHot} on two threads: no shared writes at all (the prompts are read-only), so with
   * {@link #hashHot} it tells what two threads of pure computation reach on this host.
   */
  @Benchmark
  @Threads(2)
  public long hashHot2Threads(Cursor c) {
    return c.hash(fixture, fixture.held(c.next++));
  }

  /** {@link #routeHeldCold} on two threads of one engine. */
  @Benchmark
  @Threads(2)
  public Routed routeHeldCold2Threads(Cursor c) {
    return c.count(fixture.complete(fixture.heldCold(c.rnd.nextInt())));
  }

  /** {@link #routeHeld} on two threads: the hit path's scaling (shared counters, monitors). */
  @Benchmark
  @Threads(2)
  public Routed routeHeld2Threads(Cursor c) {
    return c.count(fixture.complete(fixture.held(c.next++)));
  }

  /**
   * {@link #routeHeld2Threads} with a tenant per thread: without the one tenant's token bucket,
   * which every route of the shared case charges by CAS (what an exact shared quota costs).
   */
  @Benchmark
  @Threads(2)
  public Routed routeHeld2ThreadsTenantPerThread(Cursor c) {
    return c.count(fixture.complete(fixture.held(c.next++), c.tenant));
  }

  /** A fixture of its own per thread (its engine, index and prompts): nothing is shared. */
  @State(Scope.Thread)
  public static class OwnFixture {
    RouteFixture fixture;

    @Setup
    public void setup() {
      fixture = new RouteFixture();
    }
  }

  /**
   * {@link #routeHeld2Threads} with an engine per thread: no shared state at all, so this is what
   * two threads can do on this host (its cores, caches and memory), the ceiling for the shared
   * case.
   */
  @Benchmark
  @Threads(2)
  public Routed routeHeld2ThreadsUnshared(OwnFixture own, Cursor c) {
    return c.count(own.fixture.complete(own.fixture.held(c.next++)));
  }

  /**
   * Only prompts whose 3k-token tail is not held: the prompts are cycled in order, and the cycle
   * (1.6M distinct blocks) is longer than the fleet's capacity (1M), so LRU keeps almost no tail
   * (about 4 %: the cache pressure sends new prompts to the stalest caches, which then turn over
   * more slowly than the cycle; the teardown prints the fraction).
   */
  @Benchmark
  @Threads(1)
  public Routed routeNew(Cursor c) {
    int i = c.next++;
    if (c.next == fixture.prompts.length) {
      c.next = 0;
    }
    return c.count(fixture.complete(fixture.prompts[i]));
  }
}
