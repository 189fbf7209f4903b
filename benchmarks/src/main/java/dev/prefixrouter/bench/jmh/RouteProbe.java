package dev.prefixrouter.bench.jmh;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.spi.PredictionSink;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import dev.prefixrouter.scoring.Policies;
import java.io.PrintStream;
import java.util.Arrays;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A noise-aware companion of {@link RouteBenchmark}: the ratio of {@code route()} to hashing the
 * same kind of prompt alone, from paired slices in one JVM. Each slice pair hashes {@value
 * #PER_SLICE} prompts alone, then routes {@value #PER_SLICE} prompts drawn the same way (route,
 * first token, completion, as {@link RouteFixture#complete}); the ratio of the pair's mean times is
 * one sample. On a shared VM whole phases of a run can be two to three times slower for reasons
 * outside the process, and both halves of a pair, tens of milliseconds apart, slow alike: the
 * paired ratio stays put where JMH's per-fork medians of the two benchmarks, taken seconds or
 * minutes apart, do not. The first quarter of the slices is warm-up and dropped.
 *
 * <pre>
 * java -Xms4g -Xmx4g -XX:+AlwaysPreTouch -jar benchmarks/target/benchmarks.jar \
 *     route-probe [held|session|cold|new|mix] [est-ttft|match|POLICY] [slices]
 * </pre>
 *
 * <p>Cases as in {@link RouteBenchmark}: {@code held} = {@code routeHeld} / {@code hashHot} (the
 * 256 most recently warmed prompts), {@code session} = {@code routeHeldSession} (the same, each
 * prompt in a session of its own), {@code cold} = {@code routeHeldCold} / {@code hashCold} (drawn
 * at random from {@link RouteFixture#COLD_HELD}), {@code new} = {@code routeNew} (prompts cycled in
 * order, their 3k-token tails evicted since), {@code mix} = {@code route1Thread} / {@code hashAny}
 * (drawn at random from all 8,192). The scorer: {@code est-ttft} (the default), {@code match} (the
 * candidate holding the longest prefix first, ties rotated: a cache-aware placement at next to no
 * scoring cost, so the index fills as under the real policies and the figure is what the engine and
 * the index cost) or any name {@link Policies#byName} knows (e.g. {@code least-request}, {@code
 * est-ttft/-balance}). The line also gives the share of the routed prompts' tokens the index
 * matched, so the cases' hit mix can be compared across scorers.
 *
 * <p>Without {@code -XX:+AlwaysPreTouch} the first pass of a growing G1 young generation through
 * never-touched heap pages makes every allocation fault in fresh pages: whole phases, the hash
 * included, run three to four times slower.
 */
public final class RouteProbe {
  /** Prompts per half slice: about 50–100 ms of routes on this machine. */
  static final int PER_SLICE = 20_000;

  private RouteProbe() {}

  /** Runs the probe; {@code args} as in the class javadoc, all optional. */
  public static void run(String[] args, PrintStream out) {
    String kind = args.length > 0 ? args[0] : "held";
    String scorerName = args.length > 1 ? args[1] : "est-ttft";
    int slices = args.length > 2 ? Integer.parseInt(args[2]) : 80;
    if (slices < 4) {
      throw new IllegalArgumentException("slices must be at least 4, was " + slices);
    }
    Draw draw = draw(kind);
    boolean session = kind.equals("session"); // held prompts, each in a session of its own
    RouteFixture f = new RouteFixture(PredictionSink.none(), scorer(scorerName), null);
    long[] keys = new long[1 << 16]; // a reused buffer, as the engine hashes
    SplittableRandom rnd = new SplittableRandom(17);
    double[] hash = new double[slices];
    double[] route = new double[slices];
    double[] ratio = new double[slices];
    long sink = 0;
    long matched = 0;
    long routed = 0;
    int next = 0;
    for (int s = 0; s < slices; s++) {
      int from = next;
      long t0 = System.nanoTime();
      for (int k = 0; k < PER_SLICE; k++) {
        sink += f.hasher.keys(draw.prompt(f, from + k, rnd), 0, keys);
      }
      long t1 = System.nanoTime();
      for (int k = 0; k < PER_SLICE; k++) {
        Prompt p = draw.prompt(f, from + k, rnd);
        Routed r = session ? f.complete(p, "t", f.heldSession(from + k)) : f.complete(p);
        matched += r.matchedTokens();
        routed += r.promptTokens();
      }
      long t2 = System.nanoTime();
      next = from + PER_SLICE;
      hash[s] = (t1 - t0) / 1e3 / PER_SLICE;
      route[s] = (t2 - t1) / 1e3 / PER_SLICE;
      ratio[s] = route[s] / hash[s];
    }
    int warm = slices / 4;
    out.printf(
        Locale.ROOT,
        "route-probe %s %s, %d slice pairs of %d (first %d dropped): hash alone %.2f us,"
            + " route %.2f us (medians); route / hash paired: median %.3f, quartiles %.3f-%.3f"
            + "; matched %.1f %% of the routed tokens (%d)%n",
        kind,
        scorerName,
        slices,
        PER_SLICE,
        warm,
        quantile(hash, warm, 0.5),
        quantile(route, warm, 0.5),
        quantile(ratio, warm, 0.5),
        quantile(ratio, warm, 0.25),
        quantile(ratio, warm, 0.75),
        100.0 * matched / Math.max(1, routed),
        sink & 1);
  }

  /** The {@code q}-quantile (nearest rank) of {@code v} without its first {@code skip} values. */
  static double quantile(double[] v, int skip, double q) {
    double[] s = Arrays.copyOfRange(v, skip, v.length);
    Arrays.sort(s);
    return s[Math.min(s.length - 1, (int) (q * s.length))];
  }

  /** Which prompt the {@code i}-th draw of a case is; random cases use {@code rnd}. */
  @FunctionalInterface
  interface Draw {
    Prompt prompt(RouteFixture f, int i, SplittableRandom rnd);
  }

  static Draw draw(String kind) {
    return switch (kind) {
      case "held", "session" -> (f, i, rnd) -> f.held(i);
      case "cold" -> (f, i, rnd) -> f.heldCold(rnd.nextInt());
      case "new" -> (f, i, rnd) -> f.prompts[Math.floorMod(i, f.prompts.length)];
      case "mix" -> (f, i, rnd) -> f.prompts[rnd.nextInt(f.prompts.length)];
      default ->
          throw new IllegalArgumentException(
              "unknown case '" + kind + "': held, session, cold, new or mix");
    };
  }

  static Scorer scorer(String name) {
    return name.equals("match") ? new LongestMatchScorer() : Policies.byName(name);
  }

  /**
   * The candidate with the most matched blocks first (ties rotated by a counter), the rest in the
   * engine's order: one pass over the candidates, no per-backend state.
   */
  static final class LongestMatchScorer implements Scorer {
    private final AtomicInteger rotation = new AtomicInteger();

    @Override
    public String name() {
      return "match";
    }

    @Override
    public void score(ScoringContext ctx) {
      int n = ctx.size();
      if (n == 0) {
        return;
      }
      int start = Math.floorMod(rotation.getAndIncrement(), n);
      int best = start;
      for (int k = 1; k < n; k++) {
        int i = (start + k) % n;
        if (ctx.matchedBlocks(i) > ctx.matchedBlocks(best)) {
          best = i;
        }
      }
      int[] order = ctx.order();
      for (int r = 0; r < n; r++) {
        if (order[r] == best) {
          order[r] = order[0];
          order[0] = best;
          break;
        }
      }
      ctx.setReason("longest match");
    }

    @Override
    public void addBackend(int slot, Backend backend) {}

    @Override
    public void removeBackend(int slot) {}
  }
}
