package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.Scorer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

/**
 * Computes the {@link CapacityPlan}s of {@link RoutingEngine#inspect()} from the backends' own
 * counters (requests, prompt and matched tokens routed), so routing pays nothing for it. Each plan
 * call records a sample of the counters; the rate is measured against the oldest retained sample,
 * which spans about the objective's window. At most {@link #MAX_SAMPLES} samples are kept (one per
 * window/64 at most), each holding one entry per backend: memory O(64 × backends).
 *
 * <p>Thread-safe: {@link #plan} is synchronized (it runs at inspection, never while routing).
 */
final class CapacityPlanner {
  static final int MAX_SAMPLES = 64;
  private static final String ALPHA = "alphaMs";
  private static final String BETA = "betaMsPerToken";
  private static final String GAMMA = "gammaMsPerToken2";

  /** Counters of every backend at one time: id → {routed, promptTokens, matchedTokens}. */
  private record Sample(long atNanos, Map<String, long[]> counters) {}

  private final CapacityObjective objective;
  private final long windowNanos;
  private final long minSpacingNanos;
  private final ArrayDeque<Sample> samples = new ArrayDeque<>();

  CapacityPlanner(CapacityObjective objective, long startNanos) {
    this.objective = objective;
    this.windowNanos = objective.window().toNanos();
    this.minSpacingNanos = windowNanos / MAX_SAMPLES;
    samples.add(new Sample(startNanos, Map.of()));
  }

  synchronized List<CapacityPlan> plan(long now, BackendEntry[] entries, Scorer scorer) {
    Map<String, long[]> counters = new HashMap<>();
    for (BackendEntry e : entries) {
      counters.put(e.backend.id(), new long[] {e.routed(), e.promptTokens(), e.matchedTokens()});
    }
    // drop samples no longer needed: keep the newest one at least a window old as the baseline
    while (samples.size() > 1) {
      Sample second = samples.stream().skip(1).findFirst().orElseThrow();
      if (now - second.atNanos() >= windowNanos) {
        samples.removeFirst();
      } else {
        break;
      }
    }
    Sample base = samples.peekFirst();
    double seconds = Math.max(0, now - base.atNanos()) / 1e9;

    Map<String, double[]> perModel = new LinkedHashMap<>(); // backends, requests, Σ requests·S
    for (BackendEntry e : entries) {
      Backend b = e.backend;
      double[] m = perModel.computeIfAbsent(pool(b), k -> new double[3]);
      if (!e.draining) {
        m[0]++;
      }
      long[] c = counters.get(b.id());
      long[] old = base.counters().get(b.id());
      if (old == null || old[0] > c[0]) {
        old = new long[3]; // added (or re-added) within the window
      }
      long requests = c[0] - old[0];
      if (requests <= 0) {
        continue;
      }
      double cached = (double) (c[2] - old[2]) / requests;
      double uncached = Math.max(0, (double) (c[1] - old[1]) / requests - cached);
      m[1] += requests;
      m[2] += requests * prefillMs(scorer.describe(e.slot), uncached, cached);
    }

    Sample last = samples.peekLast();
    if (now - last.atNanos() >= minSpacingNanos) {
      if (samples.size() >= MAX_SAMPLES) {
        samples.removeFirst();
      }
      samples.addLast(new Sample(now, counters));
    }

    List<CapacityPlan> plans = new ArrayList<>(perModel.size());
    double t = objective.ttft().toNanos() / 1e9;
    double p = objective.percentile();
    perModel.forEach(
        (model, m) -> {
          int backends = (int) m[0];
          if (m[1] == 0 || seconds == 0) {
            plans.add(
                new CapacityPlan(
                    model, backends, 0, 0, seconds, CapacityPlan.Status.NO_TRAFFIC, 0, -1, -1));
            return;
          }
          double lambda = m[1] / seconds;
          double serviceMs = m[2] / m[1];
          double s = serviceMs / 1e3;
          OptionalInt need = ErlangC.serversFor(lambda, s, t, p);
          double now1 = backends == 0 ? -1 : quantileMs(backends, lambda, s, p);
          plans.add(
              need.isPresent()
                  ? new CapacityPlan(
                      model,
                      backends,
                      lambda,
                      serviceMs,
                      seconds,
                      CapacityPlan.Status.OK,
                      need.getAsInt(),
                      now1,
                      quantileMs(need.getAsInt(), lambda, s, p))
                  : new CapacityPlan(
                      model,
                      backends,
                      lambda,
                      serviceMs,
                      seconds,
                      CapacityPlan.Status.UNREACHABLE,
                      -1,
                      now1,
                      -1));
        });
    return plans;
  }

  /** A backend's model, or its sorted models joined by ',' when it serves several. */
  static String pool(Backend b) {
    return b.models().size() == 1
        ? b.models().iterator().next()
        : String.join(",", new java.util.TreeSet<>(b.models()));
  }

  private static double quantileMs(int servers, double lambda, double s, double p) {
    double q = ErlangC.waitQuantile(servers, lambda, s, p);
    return Double.isInfinite(q) ? -1 : (s + q) * 1e3;
  }

  /** Prefill time from the scorer's published coefficients, or the objective's fallback. */
  private double prefillMs(Map<String, Double> k, double uncached, double cached) {
    Double alpha = k.get(ALPHA);
    Double beta = k.get(BETA);
    if (alpha == null || beta == null || !(alpha >= 0) || !(beta > 0)) {
      return Math.max(
          1e-3, objective.fallbackAlphaMs() + objective.fallbackBetaMsPerToken() * uncached);
    }
    Double gamma = k.get(GAMMA);
    double g = gamma == null || !(gamma >= 0) ? 0 : gamma;
    double ms = alpha + beta * uncached + g * uncached * (uncached + cached);
    return Double.isFinite(ms) ? Math.max(1e-3, ms) : objective.fallbackAlphaMs();
  }
}
