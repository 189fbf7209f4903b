package dev.prefixrouter.bench.jmh;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Two-thread scaling of held routes, measured against what this host's two cores reach in the same
 * run. Rounds of five short phases, back to back in one JVM: hashing held prompts on one thread and
 * on two; routing held prompts ({@link RouteFixture}) on one engine from one thread and from two
 * threads; and two threads each on an engine of its own (nothing shared: the ceiling). Each phase
 * counts operations over a fixed wall time; per round it prints the three two-thread to one-thread
 * ratios and the shared case's throughput over the unshared one's, and at the end the medians of
 * each, so that a slow stretch of the shared VM (which slows every phase of its round alike) does
 * not bias the ratios as separate runs would.
 *
 * <pre>java -Xms6g -Xmx6g -XX:+AlwaysPreTouch -jar benchmarks/target/benchmarks.jar scaling-probe
 * [rounds] [phase ms] [tenants]</pre>
 *
 * <p>Route phases use tenant "t" on both threads (the shared case charges one token bucket, as
 * {@code RouteBenchmark.routeHeld2Threads} does); with {@code tenants} each thread routes as a
 * tenant of its own.
 */
public final class ScalingProbe {
  private ScalingProbe() {}

  /** One thread's work: returns operations done until {@code stop}. */
  private interface Work {
    long run(int thread, AtomicBoolean stop);
  }

  /**
   * Runs the probe: {@code args} are {@code [rounds] [phase ms] [tenants]} (defaults 9, 1000);
   * prints a line per round and the medians to {@code out}.
   */
  public static void run(String[] args, PrintStream out) throws Exception {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 9;
    long phaseMs = args.length > 1 ? Long.parseLong(args[1]) : 1000;
    // "tenants": each thread routes as a tenant of its own (no shared token bucket)
    String[] tenants =
        args.length > 2 && args[2].equals("tenants")
            ? new String[] {"t0", "t1"}
            : new String[] {"t", "t"};
    RouteFixture shared = new RouteFixture();
    RouteFixture[] own = {new RouteFixture(), new RouteFixture()};
    long[][] keys = {new long[1024], new long[1024]};
    int[] next = {0, 101};
    Work hash =
        (t, stop) -> {
          long n = 0;
          long sink = 0;
          int i = next[t]; // a local cursor: the shared array would bounce between the threads
          while (!stop.get()) {
            for (int k = 0; k < 64; k++) {
              sink += shared.hasher.keys(shared.held(i++), 0, keys[t]);
            }
            n += 64;
          }
          next[t] = i;
          return n + (sink & 0);
        };
    Work routeShared =
        (t, stop) -> {
          long n = 0;
          int i = next[t];
          while (!stop.get()) {
            for (int k = 0; k < 16; k++) {
              shared.complete(shared.held(i++), tenants[t]);
            }
            n += 16;
          }
          next[t] = i;
          return n;
        };
    Work routeOwn =
        (t, stop) -> {
          long n = 0;
          RouteFixture f = own[t];
          int i = next[t];
          while (!stop.get()) {
            for (int k = 0; k < 16; k++) {
              f.complete(f.held(i++), tenants[t]);
            }
            n += 16;
          }
          next[t] = i;
          return n;
        };
    // warm up every path on both threads
    for (int w = 0; w < 3; w++) {
      phase(hash, 2, phaseMs);
      phase(routeShared, 2, phaseMs);
      phase(routeOwn, 2, phaseMs);
      phase(routeShared, 1, phaseMs);
    }
    double[] hashRatio = new double[rounds];
    double[] sharedRatio = new double[rounds];
    double[] ownRatio = new double[rounds];
    double[] sharedToOwn = new double[rounds];
    for (int r = 0; r < rounds; r++) {
      double h1 = phase(hash, 1, phaseMs);
      double h2 = phase(hash, 2, phaseMs);
      double r1 = phase(routeShared, 1, phaseMs);
      double r2 = phase(routeShared, 2, phaseMs);
      double o2 = phase(routeOwn, 2, phaseMs);
      hashRatio[r] = h2 / h1;
      sharedRatio[r] = r2 / r1;
      ownRatio[r] = o2 / r1;
      sharedToOwn[r] = r2 / o2;
      out.printf(
          "round %2d: hash 1t %.3f 2t %.3f (%.2fx) | route 1t %.3f, 2t shared %.3f (%.2fx),"
              + " 2t unshared %.3f (%.2fx) ops/us; shared/unshared %.2f%n",
          r, h1, h2, h2 / h1, r1, r2, r2 / r1, o2, o2 / r1, r2 / o2);
    }
    out.printf(
        "median of %d rounds: hash 2t/1t %.2fx, route 2t shared/1t %.2fx, 2t unshared/1t %.2fx,"
            + " shared/unshared %.2f%n",
        rounds, median(hashRatio), median(sharedRatio), median(ownRatio), median(sharedToOwn));
  }

  /** Runs {@code work} on {@code threads} threads for {@code ms}; operations per microsecond. */
  private static double phase(Work work, int threads, long ms) throws Exception {
    AtomicBoolean stop = new AtomicBoolean();
    long[] done = new long[threads];
    CyclicBarrier start = new CyclicBarrier(threads + 1);
    Thread[] ts = new Thread[threads];
    for (int t = 0; t < threads; t++) {
      int id = t;
      ts[t] =
          new Thread(
              () -> {
                try {
                  start.await();
                } catch (Exception e) {
                  throw new IllegalStateException(e);
                }
                done[id] = work.run(id, stop);
              });
      ts[t].start();
    }
    start.await();
    long t0 = System.nanoTime();
    Thread.sleep(ms);
    stop.set(true);
    for (Thread t : ts) {
      t.join();
    }
    long elapsed = System.nanoTime() - t0;
    return Arrays.stream(done).sum() / (elapsed / 1e3);
  }

  private static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }
}
