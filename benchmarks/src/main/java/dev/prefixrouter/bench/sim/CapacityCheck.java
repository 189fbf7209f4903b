package dev.prefixrouter.bench.sim;

import dev.prefixrouter.api.CapacityObjective;
import dev.prefixrouter.api.CapacityPlan;
import dev.prefixrouter.api.ErlangC;
import dev.prefixrouter.scoring.Policies;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Checks the capacity planner against the simulator: one run on the configured fleet measures the
 * arrival rate and calibrates the prefill time, and yields the planner's recommended count c (the
 * last plan before arrivals end, over a window as long as the run); then the same arrivals run on c
 * − 1, c and c + 1 backends and the measured TTFT at the objective's percentile is set beside the
 * objective and the M/M/c prediction. The objective should hold at c and fail at c − 1.
 */
final class CapacityCheck {
  private CapacityCheck() {}

  static List<PolicyResult> run(
      Compare.Options o, SimConfig base, PrintStream out, PrintStream err) {
    List<SimRequest> requests = Workloads.capacity(o.rateScale, o.seed, o.perGroup());
    long span = requests.get(requests.size() - 1).arrivalNanos();
    Duration window =
        Duration.ofNanos(
            Math.max(
                Duration.ofSeconds(1).toNanos(), Math.min(span, Duration.ofHours(24).toNanos())));
    CapacityObjective objective =
        CapacityObjective.ttft(Duration.ofNanos((long) (o.sloTtftMs * 1e6)), o.sloPercentile)
            .withWindow(window);
    String policy = o.policies.size() == Policies.NAMES.size() ? "est-ttft" : o.policies.get(0);
    List<PolicyResult> results = new ArrayList<>();
    String name =
        String.format(
            Locale.ROOT,
            "(h) capacity: p%s TTFT <= %.0f ms at %.0f req/s",
            pct(o.sloPercentile),
            o.sloTtftMs,
            100 * o.rateScale);
    err.printf(
        Locale.ROOT,
        "%s: %d requests, planning on %d backends%n",
        name,
        requests.size(),
        base.backends());
    FleetSimulator.CapacityRun planned =
        new FleetSimulator(name + " plan on " + base.backends(), base, requests, err)
            .runWithPlanner(policy, objective);
    results.add(planned.result());
    CapacityPlan plan = planned.plan();
    out.printf(Locale.ROOT, "%n%s (%s)%n", name, policy);
    if (plan == null) {
      out.println("  no plan: the run ended before the first scrape");
      return results;
    }
    out.printf(
        Locale.ROOT,
        "  plan from %d backends: λ %.2f req/s, mean prefill S %.2f ms, %s, recommended %d"
            + " (measured p%s on %d: %.1f ms)%n",
        base.backends(),
        plan.arrivalsPerSecond(),
        plan.meanServiceMillis(),
        plan.status(),
        plan.recommendedBackends(),
        pct(o.sloPercentile),
        base.backends(),
        PolicyResult.percentile(planned.sortedTtft(), o.sloPercentile));
    if (plan.status() != CapacityPlan.Status.OK) {
      return results;
    }
    out.printf(
        Locale.ROOT,
        "  %-9s %14s %14s %10s %9s%n",
        "backends",
        "measured ms",
        "M/M/c ms",
        "objective",
        "hit rate");
    int c = plan.recommendedBackends();
    for (int n = Math.max(1, c - 1); n <= c + 1; n++) {
      FleetSimulator.CapacityRun r =
          new FleetSimulator(
                  name + " on " + n + (n == c ? " (recommended)" : ""),
                  base.withBackends(n),
                  requests,
                  err)
              .runWithPlanner(policy, objective);
      results.add(r.result());
      double measured = PolicyResult.percentile(r.sortedTtft(), o.sloPercentile);
      double s = plan.meanServiceMillis() / 1e3;
      double q = ErlangC.waitQuantile(n, plan.arrivalsPerSecond(), s, o.sloPercentile);
      out.printf(
          Locale.ROOT,
          "  %-9s %14.1f %14s %10s %8.1f%%%n",
          n + (n == c ? " (rec)" : ""),
          measured,
          Double.isInfinite(q) ? "unstable" : String.format(Locale.ROOT, "%.1f", (s + q) * 1e3),
          measured <= o.sloTtftMs ? "met" : "missed",
          100 * r.result().tokenHitRate());
    }
    return results;
  }

  private static String pct(double p) {
    return String.format(Locale.ROOT, "%.4f", p * 100).replaceAll("0+$", "").replaceAll("\\.$", "");
  }
}
