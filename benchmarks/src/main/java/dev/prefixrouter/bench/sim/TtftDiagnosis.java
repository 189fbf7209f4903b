package dev.prefixrouter.bench.sim;

import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.scoring.CalibrationScope;
import dev.prefixrouter.scoring.Candidates;
import dev.prefixrouter.scoring.CostTerm;
import dev.prefixrouter.scoring.EstimatedTtftScorer;
import dev.prefixrouter.scoring.Policies;
import dev.prefixrouter.scoring.TtftCoefficients;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Research tool (issue #18): runs policies on an issue workload with a {@link DecisionProbe} and
 * prints, per run, how each decision compares with the oracle TTFTs. {@code java -cp
 * benchmarks/target/benchmarks.jar dev.prefixrouter.bench.sim.TtftDiagnosis WORKLOAD SEEDS RATES
 * POLICY... [--csv DIR]}; policies: any {@link Policies} name, the est-ttft variants below, {@link
 * ScorerProbe#parsed} {@code x:...} variants, or {@code oracle} (greedy lowest oracle TTFT).
 * Columns: TTFT p95 / mean ms (hit %); {@code oracle|actual}: mean absolute difference of the
 * chosen backend's oracle TTFT and its actual one (how far later arrivals move a TTFT); {@code
 * regret}: mean oracle TTFT of the choice minus the lowest, and the share of decisions with more
 * than 1 ms of it; {@code gw-regret}: the same for the backends the calibrated gateway rule would
 * have tied on, on this run's states; for est-ttft variants {@code est-oracle}: mean signed and
 * absolute error of the queue-prefill estimate against the oracle over all candidates, and of the
 * chosen one against the actual TTFT.
 */
final class TtftDiagnosis {
  private TtftDiagnosis() {}

  /** est-ttft variants by name (the probe adds its recording term). */
  static Map<String, Supplier<EstimatedTtftScorer.Builder>> estVariants() {
    Map<String, Supplier<EstimatedTtftScorer.Builder>> v = new LinkedHashMap<>();
    v.put("est-ttft", EstimatedTtftScorer::builder);
    v.put("sticky", () -> EstimatedTtftScorer.builder().balance(0, 0, 1));
    v.put("pinhold", () -> EstimatedTtftScorer.builder().balanceMovesSessions(false));
    v.put("nocal", () -> EstimatedTtftScorer.builder().calibrate(false));
    v.put("nocal-sticky", () -> EstimatedTtftScorer.builder().calibrate(false).balance(0, 0, 1));
    v.put("fleet", () -> EstimatedTtftScorer.builder().calibrationScope(CalibrationScope.FLEET));
    v.put(
        "hier",
        () -> EstimatedTtftScorer.builder().calibrationScope(CalibrationScope.HIERARCHICAL));
    v.put(
        "hier-adv0",
        () ->
            EstimatedTtftScorer.builder()
                .calibrationScope(CalibrationScope.HIERARCHICAL)
                .calibrationAdvantage(0));
    v.put(
        "hier-sticky",
        () ->
            EstimatedTtftScorer.builder()
                .calibrationScope(CalibrationScope.HIERARCHICAL)
                .balance(0, 0, 1));
    for (double ms : new double[] {0.25, 0.5, 1.0}) {
      v.put("cal-spread" + ms, () -> EstimatedTtftScorer.builder().addTerm(spread(ms)));
      v.put(
          "sticky-spread" + ms,
          () -> EstimatedTtftScorer.builder().balance(0, 0, 1).addTerm(spread(ms)));
      v.put(
          "fleet-spread" + ms,
          () ->
              EstimatedTtftScorer.builder()
                  .calibrationScope(CalibrationScope.FLEET)
                  .addTerm(spread(ms)));
    }
    TtftCoefficients d = TtftCoefficients.DEFAULTS;
    TtftCoefficients noDecode =
        new TtftCoefficients(
            d.alphaMs(), d.betaMsPerToken(), d.gammaMsPerToken2(), 0, d.waitingMs());
    v.put(
        "nocal-decode0",
        () -> EstimatedTtftScorer.builder().calibrate(false).coefficients(noDecode));
    v.put(
        "nocal-sticky-decode0",
        () ->
            EstimatedTtftScorer.builder().calibrate(false).balance(0, 0, 1).coefficients(noDecode));
    return v;
  }

  /** A research term: {@code ms} per running request (the router's leases or the report). */
  static CostTerm spread(double ms) {
    return new CostTerm() {
      @Override
      public String name() {
        return "spread";
      }

      @Override
      public void costs(Candidates c, double[] out) {
        for (int i = 0, n = c.size(); i < n; i++) {
          out[i] = ms * c.running(i) / c.weight(i);
        }
      }
    };
  }

  public static void main(String[] args) throws IOException {
    String workload = args[0];
    List<Long> seeds = new ArrayList<>();
    for (String s : args[1].split(",")) {
      seeds.add(Long.parseLong(s));
    }
    List<Double> rates = new ArrayList<>();
    for (String s : args[2].split(",")) {
      rates.add(Double.parseDouble(s));
    }
    List<String> policies = new ArrayList<>();
    Path csv = null;
    for (int a = 3; a < args.length; a++) {
      if (args[a].equals("--csv")) {
        csv = Path.of(args[++a]);
        Files.createDirectories(csv);
      } else {
        policies.add(args[a]);
      }
    }
    Map<String, Supplier<EstimatedTtftScorer.Builder>> est = estVariants();
    for (String p : policies) {
      if (p.contains(":")) {
        est.put(p, () -> ScorerProbe.parsed(p)); // ScorerProbe's x:... variants
      }
    }
    for (long seed : seeds) {
      for (double rate : rates) {
        List<SimRequest> reqs = ScorerProbe.requests(workload, rate, seed);
        SimConfig config = ScorerProbe.config(workload);
        for (String p : policies) {
          DecisionProbe probe = new DecisionProbe(config.backends(), reqs.size());
          Supplier<Scorer> scorer;
          EstimatedTtftScorer[] built = new EstimatedTtftScorer[1];
          if (p.equals("oracle")) {
            scorer = () -> probe.wrap(probe.oracle());
          } else if (est.containsKey(p)) {
            scorer =
                () -> {
                  built[0] = est.get(p).get().name(p).addTerm(probe.recorder()).build();
                  return probe.wrap(built[0]);
                };
          } else {
            Policies.byName(p); // fails early on an unknown name
            scorer = () -> probe.wrap(Policies.byName(p));
          }
          FleetSimulator sim =
              new FleetSimulator(workload, config, reqs, null)
                  .scorers(Map.of(p, scorer))
                  .tap(probe);
          PolicyResult r = sim.run(p);
          System.out.println(
              String.format(
                      Locale.ROOT,
                      "seed %d rate %.0fx %-14s %.1f/%.1f (%.1f) %s ",
                      seed,
                      rate,
                      p,
                      r.ttftP95(),
                      r.ttftMean(),
                      100 * r.tokenHitRate(),
                      java.util.Arrays.toString(r.routedPerBackend()))
                  + summary(probe));
          if (built[0] != null) {
            StringBuilder k = new StringBuilder("   coefficients at the end:");
            for (int b = 0; b < config.backends(); b++) {
              var c = built[0].coefficients(b);
              k.append(
                  String.format(
                      Locale.ROOT,
                      " b%d %.1f/%.4f/%.1e/%.2f",
                      b,
                      c.alphaMs(),
                      c.betaMsPerToken(),
                      c.gammaMsPerToken2(),
                      c.decodeMsPerRunning()));
            }
            System.out.println(k);
          }
          if (csv != null) {
            Path f =
                csv.resolve(
                    String.format(Locale.ROOT, "%s-s%d-r%.0f-%s.csv", workload, seed, rate, p));
            try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(f))) {
              probe.writeCsv(w);
            }
          }
        }
      }
    }
  }

  static String summary(DecisionProbe probe) {
    int n = 0;
    double oa = 0;
    double regret = 0;
    int regretful = 0;
    double gwRegret = 0;
    int gwN = 0;
    double estSigned = 0;
    double estAbs = 0;
    int estN = 0;
    double chosenSigned = 0;
    double chosenAbs = 0;
    int chosenN = 0;
    for (DecisionProbe.Row r : probe.rows()) {
      double min = Double.POSITIVE_INFINITY;
      for (int b = 0; b < r.oracle.length; b++) {
        if (!Double.isNaN(r.cost[b])) {
          min = Math.min(min, r.oracle[b]);
        }
      }
      if (r.chosen < 0 || !Double.isFinite(min)) {
        continue;
      }
      n++;
      double act = probe.actual(r.request);
      if (!Double.isNaN(act)) {
        oa += Math.abs(r.oracle[r.chosen] - act);
      }
      double reg = r.oracle[r.chosen] - min;
      regret += reg;
      if (reg > 1) {
        regretful++;
      }
      double gs = 0;
      int gc = 0;
      for (int b = 0; b < r.oracle.length; b++) {
        if (r.gatewayTied[b]) {
          gs += r.oracle[b];
          gc++;
        }
      }
      if (gc > 0) {
        gwRegret += gs / gc - min;
        gwN++;
      }
      for (int b = 0; b < r.oracle.length; b++) {
        if (!Double.isNaN(r.estimate[b]) && Double.isFinite(r.oracle[b])) {
          estSigned += r.estimate[b] - r.oracle[b];
          estAbs += Math.abs(r.estimate[b] - r.oracle[b]);
          estN++;
        }
      }
      if (!Double.isNaN(r.estimate[r.chosen]) && !Double.isNaN(act)) {
        chosenSigned += r.estimate[r.chosen] - act;
        chosenAbs += Math.abs(r.estimate[r.chosen] - act);
        chosenN++;
      }
    }
    StringBuilder s =
        new StringBuilder(
            String.format(
                Locale.ROOT,
                "| oracle|actual %.2f | regret %.2f (%.1f %% > 1 ms) | gw-regret %.2f",
                oa / Math.max(1, n),
                regret / Math.max(1, n),
                100.0 * regretful / Math.max(1, n),
                gwRegret / Math.max(1, gwN)));
    if (estN > 0) {
      s.append(
          String.format(
              Locale.ROOT,
              " | est-oracle %+.2f/%.2f | est-actual(chosen) %+.2f/%.2f",
              estSigned / estN,
              estAbs / estN,
              chosenSigned / Math.max(1, chosenN),
              chosenAbs / Math.max(1, chosenN)));
    }
    return s.toString();
  }
}
