package dev.prefixrouter.bench.sim;

import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.scoring.CalibrationScope;
import dev.prefixrouter.scoring.Candidates;
import dev.prefixrouter.scoring.CostTerm;
import dev.prefixrouter.scoring.EstimatedTtftScorer;
import dev.prefixrouter.scoring.PendingPrefixScope;
import dev.prefixrouter.scoring.Policies;
import dev.prefixrouter.scoring.TtftCoefficients;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * Research probe: est-ttft variants with settings the command line cannot express, on one issue
 * workload over seeds and rates. {@code java -cp benchmarks/target/benchmarks.jar
 * dev.prefixrouter.bench.sim.ScorerProbe WORKLOAD SEEDS RATES VARIANT...} (e.g. {@code agentic
 * 1,2,3 1,2,4 est-ttft decode0.05 gateway-calibrated}); prints TTFT p95 / mean ms and hit % per
 * run. With {@code -Dprobe.fits=true} each {@code x:} variant's run is followed by the coefficients
 * its scorer ends the run with, per backend ({@link EstimatedTtftScorer#coefficients}).
 */
final class ScorerProbe {
  private ScorerProbe() {}

  static Map<String, Supplier<Scorer>> variants() {
    Map<String, Supplier<Scorer>> v = new LinkedHashMap<>();
    TtftCoefficients d = TtftCoefficients.DEFAULTS;
    for (double dec : new double[] {0, 0.006, 0.05, 0.1, 0.25}) {
      TtftCoefficients k =
          new TtftCoefficients(
              d.alphaMs(), d.betaMsPerToken(), d.gammaMsPerToken2(), dec, d.waitingMs());
      v.put("decode" + dec, () -> EstimatedTtftScorer.builder().coefficients(k).build());
      v.put(
          "decode" + dec + "-nocal",
          () -> EstimatedTtftScorer.builder().calibrate(false).coefficients(k).build());
    }
    v.put("nocal", () -> EstimatedTtftScorer.builder().calibrate(false).build());
    v.put(
        "nocal-sticky",
        () -> EstimatedTtftScorer.builder().calibrate(false).balance(0, 0, 1).build());
    v.put(
        "nocal-sticky-nosession",
        () ->
            EstimatedTtftScorer.builder()
                .calibrate(false)
                .balance(0, 0, 1)
                .without("session-affinity")
                .build());
    for (double adv : new double[] {0, 0.05, 0.1, 0.2}) {
      v.put("gate" + adv, () -> EstimatedTtftScorer.builder().calibrationAdvantage(adv).build());
      v.put(
          "gate" + adv + "-noalpha",
          () ->
              EstimatedTtftScorer.builder()
                  .calibrationAdvantage(adv)
                  .calibrateIntercept(false)
                  .build());
    }
    for (CalibrationScope scope : CalibrationScope.values()) {
      String n = scope.name().toLowerCase(Locale.ROOT);
      v.put(n, () -> EstimatedTtftScorer.builder().calibrationScope(scope).build());
      v.put(
          n + "-noalpha",
          () ->
              EstimatedTtftScorer.builder()
                  .calibrationScope(scope)
                  .calibrateIntercept(false)
                  .build());
    }
    for (double k : new double[] {0, 5, 100}) {
      v.put(
          "scaled-k" + (int) k,
          () ->
              EstimatedTtftScorer.builder()
                  .calibrationScope(CalibrationScope.FLEET_SCALED)
                  .speedShrinkage(k)
                  .build());
    }
    // balance places new work but never moves a pinned session (issue #18, session 14)
    v.put("pinhold", () -> EstimatedTtftScorer.builder().balanceMovesSessions(false).build());
    v.put(
        "pinhold-nocal",
        () -> EstimatedTtftScorer.builder().balanceMovesSessions(false).calibrate(false).build());
    for (CalibrationScope scope : CalibrationScope.values()) {
      v.put(
          "pinhold-" + scope.name().toLowerCase(Locale.ROOT),
          () ->
              EstimatedTtftScorer.builder()
                  .balanceMovesSessions(false)
                  .calibrationScope(scope)
                  .build());
    }
    for (double k : new double[] {5, 50, 200}) {
      for (boolean hold : new boolean[] {false, true}) {
        v.put(
            (hold ? "pinhold-" : "") + "shrunk-k" + (int) k,
            () ->
                EstimatedTtftScorer.builder()
                    .balanceMovesSessions(!hold)
                    .calibrationScope(CalibrationScope.SHRUNK)
                    .backendShrinkage(k)
                    .build());
      }
    }
    // per-backend speed only where idle-start first tokens show one (issue #18, session 15)
    for (double m : new double[] {0.1, 0.5}) {
      v.put(
          "idle-m" + m,
          () ->
              EstimatedTtftScorer.builder()
                  .calibrationScope(CalibrationScope.IDLE_SPEED)
                  .speedMargin(m)
                  .build());
    }
    for (long q : new long[] {4096, Long.MAX_VALUE}) {
      v.put(
          q == Long.MAX_VALUE ? "idle-all" : "idle-q" + q,
          () ->
              EstimatedTtftScorer.builder()
                  .calibrationScope(CalibrationScope.IDLE_SPEED)
                  .speedEvidenceMaxQueued(q)
                  .build());
    }
    v.put("noalpha", () -> EstimatedTtftScorer.builder().calibrateIntercept(false).build());
    // the default without the pending-prefix view (issue #18, session 33; without a built-in term
    // or rule: the policy name est-ttft/-NAME)
    v.put(
        "wo-pending-prefix",
        () -> EstimatedTtftScorer.builder().pendingPrefix(PendingPrefixScope.OFF).build());
    for (double band : new double[] {4, 8}) {
      v.put(
          "nocal-band" + band,
          () -> EstimatedTtftScorer.builder().calibrate(false).band(band, 0.02).build());
    }
    return v;
  }

  /**
   * An est-ttft variant spelled as options after a colon, comma-separated: {@code
   * x:fw=W,tau=T,scope=S,pinhold} (future-wait weight and time constant in seconds, calibration
   * scope, balance never moves sessions, nocal, nobal, {@code nudge=MS}: {@link #nudge}, {@code
   * k=K}: the SHRUNK scope's backend shrinkage, {@code bal=T/M/H}: balance tolerance, ms per share
   * and half-life in routes, {@code ps=W}: parallel-start weight, {@code rel}: release parallel
   * siblings; both off unless given, the default has {@code ps=1,rel} since issue #18 session 18;
   * {@code relidle}: release them only to a best candidate with no prefill queued, the default of
   * sessions 18–31, so their {@code rel} is {@code rel,relidle} now), {@code rvt=H}: the
   * replica-value term with horizon H seconds (off unless given; the default has {@code rvt=10}
   * since issue #18 session 19), {@code rvload=L} its load guard (default 0.05), {@code cg=W}:
   * congestion weight; research prototypes of the replica value (session 19): {@code rv=H}
   * (holders' busy share averaged over decisions), {@code rvi=H} (busy now), {@code rvage=S} (least
   * age of a prefix, default 1 s), with {@code rvload} 0 unless given. So {@code
   * x:fw=64,tau=0,ps=1,rel,rvt=10} is the default. Research terms of issue #18 session 19, added
   * only when given: {@code imp=W} (and {@code imptau=S}): {@link #imposedWait}; {@code live=W}
   * (and {@code liveh=H}): {@link #liveWait}; {@code coldguard=MS}: {@link #coldGuard}; {@code pp}:
   * {@code pendingPrefix(ALL)} (issue #18 session 21), {@code pps}: {@code pendingPrefix(SESSION)}
   * (the default in sessions 26–32), {@code ppoff}: {@code pendingPrefix(OFF)} (the default before
   * and since session 33); {@code xw=W,xwg=H}: the extra-work term ({@code extraWork(W, H)}, off
   * unless given; the default has {@code xw=2,xwg=1} since issue #18 session 24, the research term
   * {@code ext=W,extg=H} it was measured as; {@code xwall}: every candidate priced ({@code
   * xwidle=0}), {@code xwidle=S}: {@code extraWorkIdleShare(S)}, {@code xwiw=W}: {@code
   * extraWorkIdleWeight(W)}, {@code xwirho=U}: {@code extraWorkIdleMinUtilisation(U)}; the
   * builder's defaults 0.75 / 0.5 / 0.5 in sessions 25–32 and 0.75 / 0.5 / 0 since session 33, so
   * {@code xwidle=Infinity} is session 24's default and {@code xwall,xwiw=1,xwirho=0} its ungated
   * term). Since issue #18 session 17 the future-wait term includes its {@code kept} and {@code
   * open} factors; session 16's figures are the term without them (commit ee1cc58). Calibration:
   * {@code cb=B}: {@code calibrationBand(B)} (default 8), {@code adv=A}: {@code
   * calibrationAdvantage(A)} (off by default), {@code fb=K}, {@code fbe=E}: the fleet band and its
   * evidence, {@code noint}: no fitted intercept, {@code prior=F}: the priors times F; {@code
   * pa=R/W}: {@code prefixAffinity(R, W)} (default 1.5/1, {@code 0/1} off); {@code
   * adm=W[,admtau=S]}: {@link #admissionWait} (session 28; worse on every overload cell); {@code
   * dec=D}: the decode prior alone, D ms per running sequence (session 34); {@code bkh} / {@code
   * nobkh}: {@code bandKeepsIdenticalCopies(true / false)} (the default since session 34 is true,
   * and {@code x:} variants start from the builder's defaults, so the default spec needs nothing).
   */
  static EstimatedTtftScorer.Builder parsed(String spec) {
    // without ps / rel / rvt a variant routes as before issue #18 sessions 18 and 19
    EstimatedTtftScorer.Builder b =
        EstimatedTtftScorer.builder()
            .parallelStart(0)
            .releaseParallelSiblings(false)
            .replicaValue(0, 0.05)
            .extraWork(0, 0);
    double xw = 0;
    double xwg = 0;
    double fw = 0;
    double tau = 4;
    double imp = 0;
    double impTau = 2;
    double ext = 0;
    double extTau = 2;
    double extG = 0;
    double extGt = 10;
    double live = 0;
    double liveH = 1.5;
    double age = 1;
    double load = 0; // the prototypes' (rv, rvi) default: no load guard
    boolean loadGiven = false;
    double rvt = 0;
    double rv = 0;
    double rvi = 0;
    double adm = 0;
    double admTau = 2;
    for (String o : spec.substring(spec.indexOf(':') + 1).split(",")) {
      String[] kv = o.split("=");
      switch (kv[0]) {
        case "fw" -> fw = Double.parseDouble(kv[1]);
        case "tau" -> tau = Double.parseDouble(kv[1]);
        case "new" -> {} // the term prices new sessions only (the first probe's spelling)
        case "scope" ->
            b.calibrationScope(CalibrationScope.valueOf(kv[1].toUpperCase(Locale.ROOT)));
        case "pinhold" -> b.balanceMovesSessions(false);
        case "nocal" -> b.calibrate(false);
        case "nobal" -> b.balance(0, 0, 1);
        case "bkh" -> b.bandKeepsIdenticalCopies(true);
        case "nobkh" -> b.bandKeepsIdenticalCopies(false);
        case "nudge" -> b.addTerm(nudge(Double.parseDouble(kv[1])));
        case "sw" -> b.addTerm(stepWait(Double.parseDouble(kv[1])));
        case "k" -> b.backendShrinkage(Double.parseDouble(kv[1]));
        case "bal" -> { // tolerance/msPerShare/halfLifeRoutes
          String[] t = kv[1].split("/");
          b.balance(Double.parseDouble(t[0]), Double.parseDouble(t[1]), Integer.parseInt(t[2]));
        }
        case "imp" -> imp = Double.parseDouble(kv[1]);
        case "imptau" -> impTau = Double.parseDouble(kv[1]);
        case "ext" -> ext = Double.parseDouble(kv[1]);
        case "xw" -> xw = Double.parseDouble(kv[1]);
        case "xwg" -> xwg = Double.parseDouble(kv[1]);
        case "xwall" -> b.extraWorkIdleShare(0);
        case "xwidle" -> b.extraWorkIdleShare(Double.parseDouble(kv[1]));
        case "xwiw" -> b.extraWorkIdleWeight(Double.parseDouble(kv[1]));
        case "xwirho" -> b.extraWorkIdleMinUtilisation(Double.parseDouble(kv[1]));
        case "wp" -> b.addTerm(workPrice(Double.parseDouble(kv[1]), 0));
        case "wpl" -> b.addTerm(workPrice(Double.parseDouble(kv[1]), 1));
        case "wpmin" -> b.addTerm(workPrice(Double.parseDouble(kv[1]), 2));
        case "exttau" -> extTau = Double.parseDouble(kv[1]);
        case "extg" -> extG = Double.parseDouble(kv[1]);
        case "extgt" -> extGt = Double.parseDouble(kv[1]);
        case "live" -> live = Double.parseDouble(kv[1]);
        case "liveh" -> liveH = Double.parseDouble(kv[1]);
        case "coldguard" -> b.addTerm(coldGuard(Double.parseDouble(kv[1])));
        case "ps" -> b.parallelStart(Double.parseDouble(kv[1]));
        case "rel" -> b.releaseParallelSiblings(true);
        case "relidle" -> b.releaseSiblingsOnlyToIdle(true);
        case "cg" -> b.congestionWeight(Double.parseDouble(kv[1]));
        case "rv" -> rv = Double.parseDouble(kv[1]);
        case "rvi" -> rvi = Double.parseDouble(kv[1]);
        case "rvload" -> {
          load = Double.parseDouble(kv[1]);
          loadGiven = true;
        }
        case "rvt" -> rvt = Double.parseDouble(kv[1]);
        case "rvage" -> age = Double.parseDouble(kv[1]);
        case "pp" -> b.pendingPrefix(PendingPrefixScope.ALL);
        case "pps" -> b.pendingPrefix(PendingPrefixScope.SESSION);
        case "ppoff" -> b.pendingPrefix(PendingPrefixScope.OFF);
        case "noint" -> b.calibrateIntercept(false);
        case "prior" -> { // the priors times a factor (an engine slower than the H100 defaults)
          double f = Double.parseDouble(kv[1]);
          TtftCoefficients d = TtftCoefficients.DEFAULTS;
          b.coefficients(
              new TtftCoefficients(
                  d.alphaMs() * f,
                  d.betaMsPerToken() * f,
                  d.gammaMsPerToken2() * f,
                  d.decodeMsPerRunning() * f,
                  d.waitingMs() * f));
        }
        case "dec" -> { // the decode prior alone (ms per running sequence; its band scales along)
          TtftCoefficients d = TtftCoefficients.DEFAULTS;
          b.coefficients(
              new TtftCoefficients(
                  d.alphaMs(),
                  d.betaMsPerToken(),
                  d.gammaMsPerToken2(),
                  Double.parseDouble(kv[1]),
                  d.waitingMs()));
        }
        case "fbe" -> b.fleetBandEvidence(Double.parseDouble(kv[1]));
        case "fb" -> b.fleetBand(Double.parseDouble(kv[1])); // "Infinity" turns it off
        case "cb" -> b.calibrationBand(Double.parseDouble(kv[1]));
        case "pa" -> { // prefix affinity ratio/maxWaiting
          String[] v = kv[1].split("/");
          b.prefixAffinity(Double.parseDouble(v[0]), Integer.parseInt(v[1]));
        }
        case "adv" -> b.calibrationAdvantage(Double.parseDouble(kv[1]));
        case "adm" -> adm = Double.parseDouble(kv[1]);
        case "admtau" -> admTau = Double.parseDouble(kv[1]);
        case "" -> {}
        default -> throw new IllegalArgumentException("option " + o);
      }
    }
    // after every option, so the order of rvload / rvage and the term does not matter
    if (rvt > 0) {
      b.replicaValue(rvt, loadGiven ? load : 0.05);
    }
    b.extraWork(xw, xwg);
    if (rv > 0) {
      b.addTerm(replicaValue(rv, false, age, load));
    }
    if (rvi > 0) {
      b.addTerm(replicaValue(rvi, true, age, load));
    }
    if (imp > 0) {
      b.addTerm(imposedWait(imp, impTau * 1e3));
    }
    if (ext > 0) {
      b.addTerm(extraWork(ext, extTau * 1e3, extG, extGt));
    }
    if (live > 0) {
      b.addTerm(liveWait(live, liveH));
    }
    if (adm > 0) {
      b.addTerm(admissionWait(adm, admTau * 1e9));
    }
    return b.futureWait(fw, java.time.Duration.ofMillis((long) (tau * 1000)));
  }

  /**
   * Research probe (issue #18, session 28), not a proposal: the engine's admission wait by Little's
   * law. A backend reporting {@code W} requests waiting (raw, faded; in a fleet fed by one router
   * these are the router's own requests not yet admitted) while this router sends it {@code λ}
   * requests per second (decaying over {@code tauNanos}) holds a new request about {@code W / λ} in
   * its queue; the queue-prefill term already charges {@code β·pendingPrefill} of it, so the term
   * adds {@code w × max(0, W / λ − β·pendingPrefill) / weight}. Zero wherever nothing is reported
   * waiting. Single-threaded (the simulator's). Measured worse than without it on the overload
   * cells it was meant for ({@code benchmarks/README.md}, issue #18 session 28).
   */
  static CostTerm admissionWait(double w, double tauNanos) {
    return new CostTerm() {
      private final double[] rate = new double[256]; // decayed routes per slot
      private final long[] at = new long[256];

      @Override
      public String name() {
        return "admission-wait";
      }

      private double perSecond(int slot, long now) {
        double r = rate[slot] * Math.exp(-(now - at[slot]) / tauNanos);
        return r / (tauNanos / 1e9);
      }

      @Override
      public void costs(Candidates c, double[] out) {
        dev.prefixrouter.api.spi.ScoringContext ctx = c.ctx();
        long now = ctx.nowNanos();
        for (int i = 0, n = c.size(); i < n; i++) {
          dev.prefixrouter.api.LoadReport load = ctx.load(i);
          double waiting = load == null ? 0 : c.fade(i) * load.waiting();
          if (waiting < 0.5) {
            out[i] = 0;
            continue;
          }
          double lambda = Math.max(perSecond(ctx.slot(i), now), 1.0);
          double waitMs = waiting / lambda * 1e3;
          double queued = c.betaMsPerToken(i) * ctx.pendingPrefillTokens(i);
          out[i] = w * Math.max(0, waitMs - queued) / c.weight(i);
        }
      }

      @Override
      public void onRouted(dev.prefixrouter.api.spi.ScoringContext ctx, int candidate) {
        int slot = ctx.slot(candidate);
        long now = ctx.nowNanos();
        rate[slot] = rate[slot] * Math.exp(-(now - at[slot]) / tauNanos) + 1;
        at[slot] = now;
      }
    };
  }

  /**
   * Research probe (issue #18, session 19), not a proposal: a session's first request pays {@code
   * ms} on a candidate holding less than {@code 1/2} of the best-matched candidate's cached tokens
   * (a cold start where a holder exists), to measure what avoiding those starts is worth.
   * Single-threaded (the simulator's), like the other research terms here.
   */
  static CostTerm coldGuard(double ms) {
    return new CostTerm() {
      private final java.util.HashSet<String> seen = new java.util.HashSet<>();

      @Override
      public String name() {
        return "cold-guard";
      }

      @Override
      public void costs(Candidates c, double[] out) {
        String session = c.ctx().request().sessionId();
        boolean first = session != null && !seen.contains(session);
        double max = 0;
        for (int i = 0, n = c.size(); i < n; i++) {
          max = Math.max(max, c.cachedTokens(i));
        }
        for (int i = 0, n = c.size(); i < n; i++) {
          out[i] = first && c.cachedTokens(i) < 0.5 * max ? ms : 0;
        }
      }

      @Override
      public void onRouted(dev.prefixrouter.api.spi.ScoringContext ctx, int candidate) {
        String session = ctx.request().sessionId();
        if (session != null) {
          seen.add(session);
        }
      }
    };
  }

  /**
   * Research term (issue #18, session 19): future-wait priced from the sessions that will still
   * send requests to a backend rather than from its recent prefill work. {@code L(b)} = sessions
   * whose last request went to b less than {@code h} mean gaps ago; b's next-gap load is {@code
   * lambda = L(b) / gap} requests per ms of later-request prefills (mean {@code S}, mean square
   * {@code S2}, decayed over later session requests): a session's first request pays {@code w × m ×
   * lambda S2 / (2 (1 - lambda S))} (M/G/1 wait, {@code m} further requests per session), 0
   * otherwise. Single-threaded; backend slots below 64 (the probe's fleets have 8).
   */
  static CostTerm liveWait(double w, double h) {
    return new CostTerm() {
      private final Map<String, long[]> last = new java.util.HashMap<>(); // slot, at
      private double gapSum;
      private double gaps;
      private double sSum;
      private double s2Sum;
      private double laters;
      private double requests;
      private double sessions;
      private final int[] live = new int[64];

      @Override
      public String name() {
        return "live-wait";
      }

      @Override
      public void costs(Candidates c, double[] out) {
        String session = c.ctx().request().sessionId();
        int n = c.size();
        if (session == null || last.containsKey(session) || gaps < 1 || laters < 1) {
          java.util.Arrays.fill(out, 0, n, 0.0);
          return;
        }
        long now = c.ctx().nowNanos();
        double gap = gapSum / gaps;
        java.util.Arrays.fill(live, 0);
        for (long[] v : last.values()) {
          if (now - v[1] < h * gap) {
            live[(int) v[0]]++;
          }
        }
        double m = Math.max(0, requests / sessions - 1);
        double meanS = sSum / laters;
        double meanS2 = s2Sum / laters;
        for (int i = 0; i < n; i++) {
          double lambda = live[c.ctx().slot(i)] / (gap / 1e6);
          double rho = Math.min(0.9, lambda * meanS);
          out[i] = w * m * lambda * meanS2 / (2 * (1 - rho)) / c.weight(i);
        }
      }

      @Override
      public void onRouted(dev.prefixrouter.api.spi.ScoringContext ctx, int candidate) {
        String session = ctx.request().sessionId();
        if (session == null) {
          return;
        }
        long now = ctx.nowNanos();
        long[] prev = last.get(session);
        requests = requests * 0.999 + 1;
        if (prev == null) {
          sessions = sessions * 0.999 + 1;
        } else {
          gapSum = gapSum * 0.999 + (now - prev[1]);
          gaps = gaps * 0.999 + 1;
          double matched = ctx.matchedTokens(candidate);
          double ms =
              TtftCoefficients.DEFAULTS.prefillMs(
                  Math.max(0, ctx.promptTokens() - matched), matched);
          sSum = sSum * 0.999 + ms;
          s2Sum = s2Sum * 0.999 + ms * ms;
          laters = laters * 0.999 + 1;
        }
        last.put(session, new long[] {ctx.slot(candidate), now});
        if (last.size() > 4096) {
          double gap = gaps < 1 ? 4e9 : gapSum / gaps;
          last.values().removeIf(v -> now - v[1] > 10 * gap);
        }
      }
    };
  }

  /**
   * Research term (issue #18, session 19): the wait a new session's first prefill imposes on the
   * requests already bound to a backend. A prefill of {@code S} ms started on b meets b's arrivals
   * during it: M/G/1, they wait {@code lambda S^2 / (2 (1 - rho))} in all ({@code lambda} b's
   * routed requests per ms, {@code rho} its prefill utilisation, both decayed over {@code tauMs}).
   * Charged {@code w} times that, to a session's first request only (as future-wait); 0 otherwise.
   * Single-threaded.
   */
  static CostTerm imposedWait(double w, double tauMs) {
    return new CostTerm() {
      private final java.util.HashSet<String> seen = new java.util.HashSet<>();
      private final DecayedLoad load = new DecayedLoad(tauMs);

      @Override
      public String name() {
        return "imposed-wait";
      }

      @Override
      public void costs(Candidates c, double[] out) {
        String session = c.ctx().request().sessionId();
        boolean first = session != null && !seen.contains(session);
        long now = c.ctx().nowNanos();
        for (int i = 0, n = c.size(); i < n; i++) {
          if (!first) {
            out[i] = 0;
            continue;
          }
          double sMs = c.prefillMs(i, c.uncachedTokens(i), c.cachedTokens(i)) / c.weight(i);
          out[i] = w * load.imposedWait(c.ctx().slot(i), now, sMs);
        }
      }

      @Override
      public void onRouted(dev.prefixrouter.api.spi.ScoringContext ctx, int candidate) {
        String session = ctx.request().sessionId();
        if (session != null) {
          seen.add(session);
        }
        load.routed(ctx, candidate);
      }
    };
  }

  /**
   * Research term (issue #18, session 23): the wait a placement's extra prefill imposes on the
   * backend's later arrivals. {@code ΔS(b)} = b's prefill of this request minus the cheapest
   * candidate's (the best holder's): the work the choice adds to the fleet. A backend receiving
   * {@code λ(b)} requests per ms at prefill utilisation {@code ρ(b)} makes its later arrivals wait
   * about {@code w × λ(b) ΔS(b)² / (2 (1 − ρ(b)))} ms more in total (the M/G/1 wait of the added
   * work). Zero for the cheapest candidate and wherever the request is cold everywhere.
   */
  static CostTerm extraWork(double w, double tauMs) {
    return extraWork(w, tauMs, 0, 10);
  }

  /**
   * {@link #extraWork(double, double)} divided by {@code 1 + λ_g × h}: {@code λ_g} the decayed
   * request rate (per s, 10 s) of the longest prefix any candidate holds, so a copy of a hot prefix
   * (a replica later requests reuse) pays less than one of a cold prefix (session 24 probe).
   */
  static CostTerm extraWork(double w, double tauMs, double h, double gTauS) {
    return new CostTerm() {
      private final DecayedLoad load = new DecayedLoad(tauMs);
      private final java.util.HashMap<Long, double[]> groups = new java.util.HashMap<>();

      private double rate(dev.prefixrouter.api.spi.ScoringContext ctx) {
        int most = 0;
        for (int i = 0, n = ctx.size(); i < n; i++) {
          most = Math.max(most, ctx.matchedBlocks(i));
        }
        if (most == 0) {
          return 0;
        }
        double[] r = groups.get(ctx.key(most - 1));
        long now = ctx.nowNanos();
        return r == null ? 0 : r[0] * Math.exp(-(now - r[1]) / 1e9 / gTauS) / gTauS;
      }

      @Override
      public String name() {
        return "extra-work";
      }

      @Override
      public void costs(Candidates c, double[] out) {
        long now = c.ctx().nowNanos();
        int n = c.size();
        double min = Double.POSITIVE_INFINITY;
        for (int i = 0; i < n; i++) {
          out[i] = c.prefillMs(i, c.uncachedTokens(i), c.cachedTokens(i)) / c.weight(i);
          min = Math.min(min, out[i]);
        }
        for (int i = 0; i < n; i++) {
          double ds = out[i] - min;
          if (ds <= 0) {
            out[i] = 0;
            continue;
          }
          out[i] = w * load.imposedWait(c.ctx().slot(i), now, ds);
        }
        if (h > 0) {
          double f = 1 / (1 + h * rate(c.ctx()));
          for (int i = 0; i < n; i++) {
            out[i] *= f;
          }
        }
      }

      @Override
      public void onRouted(dev.prefixrouter.api.spi.ScoringContext ctx, int candidate) {
        load.routed(ctx, candidate);
        int m = ctx.matchedBlocks(candidate);
        if (h > 0 && m > 0) {
          long now = ctx.nowNanos();
          double[] e = groups.computeIfAbsent(ctx.key(m - 1), x -> new double[] {0, now});
          e[0] = e[0] * Math.exp(-(now - e[1]) / 1e9 / gTauS) + 1;
          e[1] = now;
        }
      }
    };
  }

  /**
   * Research term (issue #18, session 24): a price on prefill work from the fleet's congestion.
   * Work {@code w} added anywhere delays the requests that will queue behind it; with the router
   * spreading arrivals, about as many as are queued now (Little), so each candidate pays {@code W ×
   * q × w_i}: {@code w_i} its prefill ms (over weight), {@code q} the mean requests queued per
   * candidate (the router's own not past first token plus the reported waiting) for mode 0, the
   * candidate's own for mode 1, the least for mode 2. Single-threaded.
   */
  static CostTerm workPrice(double w, int mode) {
    return new CostTerm() {
      @Override
      public String name() {
        return "work-price";
      }

      @Override
      public void costs(Candidates c, double[] out) {
        int n = c.size();
        double sum = 0;
        double min = Double.POSITIVE_INFINITY;
        for (int i = 0; i < n; i++) {
          double q = c.ownQueued(i) + c.waiting(i);
          sum += q;
          min = Math.min(min, q);
        }
        double mean = n == 0 ? 0 : sum / n;
        for (int i = 0; i < n; i++) {
          double q = mode == 0 ? mean : mode == 1 ? c.ownQueued(i) + c.waiting(i) : min;
          out[i] = w * q * c.prefillMs(i, c.uncachedTokens(i), c.cachedTokens(i)) / c.weight(i);
        }
      }
    };
  }

  /**
   * Per backend, the requests routed and their prefill ms (at the default coefficients), decayed
   * exponentially over {@code tauMs}: an arrival rate λ (per ms) and a prefill utilisation ρ for
   * the research terms above. Single-threaded (the simulator's).
   */
  private static final class DecayedLoad {
    private final double tauMs;
    private final Map<Integer, double[]> load = new java.util.HashMap<>(); // count, sum, at

    DecayedLoad(double tauMs) {
      this.tauMs = tauMs;
    }

    private double[] decayed(int slot, long now) {
      double[] l = load.computeIfAbsent(slot, k -> new double[] {0, 0, now});
      double f = Math.exp(-Math.max(0, now - l[2]) / 1e6 / tauMs);
      l[0] *= f;
      l[1] *= f;
      l[2] = now;
      return l;
    }

    /** The M/G/1 wait {@code λ S² / (2 (1 − ρ))} that {@code sMs} of work imposes on the slot. */
    double imposedWait(int slot, long now, double sMs) {
      double[] l = decayed(slot, now);
      double lambda = l[0] / tauMs;
      double rho = Math.min(0.9, l[1] / tauMs);
      return lambda * sMs * sMs / (2 * (1 - rho));
    }

    /** Counts a request routed to the candidate, with its prefill there. */
    void routed(dev.prefixrouter.api.spi.ScoringContext ctx, int candidate) {
      double matched = ctx.matchedTokens(candidate);
      double ms =
          TtftCoefficients.DEFAULTS.prefillMs(Math.max(0, ctx.promptTokens() - matched), matched)
              / ctx.backend(candidate).weight();
      double[] l = decayed(ctx.slot(candidate), ctx.nowNanos());
      l[0] += 1;
      l[1] += ms;
    }
  }

  /**
   * The TTFT no router can beat, per request: its own prefill alone on an idle backend of the
   * profile (chunks of the token budget, one step each), with every whole block it shares as a
   * prefix with any earlier request already cached (an unbounded cache, every earlier prompt on the
   * backend it goes to). Prints {@code floor P95/MEAN (ideal hit %, p50 P50)}: a p95 target below
   * this floor's p95 is out of reach of any placement. A bound for this probe's fleets only: with
   * blended chunk reuse ({@code --blend}) or disaggregated decode legs, which the comparison can
   * turn on, a request prefills less than its uncached prefix and the floor does not hold.
   */
  static String floor(List<SimRequest> reqs, BackendProfile profile) {
    return floor(reqs, profile, false);
  }

  /**
   * {@link #floor(List, BackendProfile)}, or with {@code busy} the {@code floor-busy} bound (issue
   * #18, session 19): each request's floor TTFT plus the rest of a decode step already running when
   * it arrives (uniform in [0, one step with 4 decodes], drawn per request id): what an arrival
   * meets on a backend that is always decoding and where no other prefill collides. Where the
   * fleet's backends are rarely idle (agentic traffic, ~3 running sequences per backend at 1x) this
   * is the tighter bound; it is not a lower bound in general (an idle backend starts at once).
   * Prints {@code floor-busy P95/MEAN (ideal hit %, p50 P50)}.
   */
  static String floor(List<SimRequest> reqs, BackendProfile profile, boolean busy) {
    java.util.HashSet<Long> seen = new java.util.HashSet<>();
    double[] ttft = new double[reqs.size()];
    long hit = 0;
    long total = 0;
    int at = 0;
    int block = BackendProfile.BLOCK;
    for (SimRequest q : reqs) { // in arrival order
      int[] t = q.tokens();
      int blocks = t.length / block;
      long h = 0x9E3779B97F4A7C15L;
      int cachedBlocks = 0;
      boolean prefix = true;
      for (int b = 0; b < blocks; b++) {
        for (int i = b * block; i < (b + 1) * block; i++) {
          h = (h ^ t[i]) * 0x100000001B3L;
          h ^= h >>> 29;
        }
        if (prefix && seen.contains(h)) {
          cachedBlocks++;
        } else {
          prefix = false;
        }
        seen.add(h);
      }
      int uncached = Math.max(1, t.length - cachedBlocks * block); // the last token is computed
      double ms = 0;
      for (int left = uncached; left > 0; left -= profile.tokenBudget()) {
        ms += profile.stepNanos(Math.min(left, profile.tokenBudget()), 0, 1.0) / 1e6;
      }
      if (busy) {
        ms +=
            new java.util.SplittableRandom(q.id()).nextDouble()
                * profile.stepNanos(0, 4, 1.0)
                / 1e6;
      }
      ttft[at++] = ms;
      hit += t.length - uncached;
      total += t.length;
    }
    double[] sorted = java.util.Arrays.copyOf(ttft, at);
    java.util.Arrays.sort(sorted);
    return String.format(
        Locale.ROOT,
        " | %s %.1f/%.1f (%.2f, p50 %.1f)",
        busy ? "floor-busy" : "floor",
        PolicyResult.percentile(sorted, 0.95),
        PolicyResult.mean(sorted),
        100.0 * hit / total,
        PolicyResult.percentile(sorted, 0.5));
  }

  /**
   * {@code floor-time}: {@link TtftFloor}'s bound (causal: a block serves as a hit only once some
   * request has computed it), which no policy can go below for any request. Prints {@code
   * floor-time P95/MEAN (0, p50 P50)}.
   */
  static String floorTime(List<SimRequest> reqs, BackendProfile profile) {
    double[] sorted = TtftFloor.floorsMs(reqs, profile);
    java.util.Arrays.sort(sorted);
    return String.format(
        Locale.ROOT,
        " | floor-time %.1f/%.1f (0, p50 %.1f)",
        PolicyResult.percentile(sorted, 0.95),
        PolicyResult.mean(sorted),
        PolicyResult.percentile(sorted, 0.5));
  }

  /**
   * Research term (session 18): a candidate with a prefill queued (the router's pending prefill
   * tokens or a reported waiting request) pays {@code w × alpha} more: a request arriving there
   * waits for the step in progress, whose fixed cost the queue term does not count.
   */
  static CostTerm stepWait(double w) {
    return new CostTerm() {
      @Override
      public String name() {
        return "step-wait";
      }

      @Override
      public void costs(Candidates c, double[] out) {
        for (int i = 0, n = c.size(); i < n; i++) {
          boolean busy = c.ctx().pendingPrefillTokens(i) > 0 || c.waiting(i) > 0;
          out[i] = busy ? w * c.prefillMs(i, 0, 0) / c.weight(i) : 0;
        }
      }
    };
  }

  /**
   * Research term {@code rv=H} (issue #18 session 19): the value of one more holder of a hot prefix
   * group. A request that finds every holder of its group with a prefill step in progress waits for
   * it (the hot-prefix tail); a new replica takes part of those collisions. A non-holder is
   * credited {@code H × λ_g × Π_holders ρ_b × (1 − ρ_i) × r}: {@code λ_g} the group's decayed
   * arrival rate (requests/s, 10 s), {@code ρ_b} the share of decisions at which a backend had
   * prefill queued (arrivals see time averages), {@code r} half the best holder's own prefill, and
   * {@code H} a horizon in seconds. Self-limiting: {@code ρ^h} falls with every holder, and in
   * overload {@code 1 − ρ_i} goes to 0. Single-threaded (the simulator's).
   */
  static CostTerm replicaValue(double horizon, boolean instant, double minAgeS, double minLoad) {
    return new CostTerm() {
      // prefix key -> decayed count, last update, first seen (simulated ns)
      final java.util.HashMap<Long, double[]> groups = new java.util.HashMap<>();
      double[] busy = new double[64];
      static final double TAU_S = 10;
      static final double BUSY_WEIGHT = 1.0 / 256;

      @Override
      public String name() {
        return "rv-proto";
      }

      private double rate(long g, long now) {
        double[] r = groups.get(g);
        if (r == null || (now - r[2]) / 1e9 < minAgeS) {
          return 0;
        }
        return r[0] * Math.exp(-(now - r[1]) / 1e9 / TAU_S) / TAU_S;
      }

      @Override
      public void costs(Candidates c, double[] out) {
        dev.prefixrouter.api.spi.ScoringContext ctx = c.ctx();
        int n = c.size();
        int most = 0;
        for (int i = 0; i < n; i++) {
          int s = ctx.slot(i);
          if (s >= busy.length) {
            busy = java.util.Arrays.copyOf(busy, 2 * s + 2);
          }
          boolean b = ctx.pendingPrefillTokens(i) > 0 || c.waiting(i) > 0;
          busy[s] = instant ? (b ? 1 : 0) : busy[s] + ((b ? 1 : 0) - busy[s]) * BUSY_WEIGHT;
          most = Math.max(most, ctx.matchedBlocks(i));
          out[i] = 0;
        }
        if (most == 0) {
          return;
        }
        double lambda = rate(ctx.key(most - 1), ctx.nowNanos());
        if (lambda == 0) {
          return;
        }
        double allBusy = 1;
        double r = Double.POSITIVE_INFINITY;
        int holders = 0;
        for (int i = 0; i < n; i++) {
          if (ctx.matchedBlocks(i) >= most) {
            holders++;
            allBusy *= busy[ctx.slot(i)];
            r = Math.min(r, 0.5 * c.prefillMs(i, c.uncachedTokens(i), c.cachedTokens(i)));
          }
        }
        if (holders == n || lambda * 2 * r / 1000 / holders < minLoad) {
          return;
        }
        double base = horizon * lambda * allBusy * r;
        for (int i = 0; i < n; i++) {
          if (ctx.matchedBlocks(i) < most) {
            out[i] = -base * (1 - busy[ctx.slot(i)]);
          }
        }
      }

      @Override
      public void onRouted(dev.prefixrouter.api.spi.ScoringContext ctx, int candidate) {
        int m = ctx.matchedBlocks(candidate);
        if (m == 0) {
          return;
        }
        long g = ctx.key(m - 1); // the prefix this request reused
        long now = ctx.nowNanos();
        double[] e = groups.computeIfAbsent(g, x -> new double[] {0, now, now});
        e[0] = e[0] * Math.exp(-(now - e[1]) / 1e9 / TAU_S) + 1;
        e[1] = now;
      }
    };
  }

  /**
   * A null perturbation for noise bands: {@code ms × slot} on each candidate. With {@code ms} far
   * below any cost difference that means something (1e-6 ms), it only breaks exact ties another
   * way, so a run with it differs from one without only by its trajectory.
   */
  static CostTerm nudge(double ms) {
    return new CostTerm() {
      @Override
      public String name() {
        return "nudge";
      }

      @Override
      public void costs(Candidates c, double[] out) {
        for (int i = 0, n = c.size(); i < n; i++) {
          out[i] = ms * c.ctx().slot(i);
        }
      }
    };
  }

  /**
   * {@code requests} with every request of one prompt (the same token array) in one session: the RL
   * rollouts as a client that sends a problem's samples under one session id would (best-of-n under
   * a session; a held-out check of the session-scoped pending-prefix view, session 26).
   */
  static List<SimRequest> withSessionPerPrompt(List<SimRequest> requests) {
    Map<int[], String> ids = new IdentityHashMap<>();
    List<SimRequest> out = new ArrayList<>(requests.size());
    for (SimRequest q : requests) {
      String session = ids.computeIfAbsent(q.tokens(), k -> "prompt-" + ids.size());
      out.add(
          new SimRequest(
              q.id(), q.arrivalNanos(), q.tenant(), session, q.tokens(), q.outputTokens()));
    }
    return out;
  }

  /**
   * The requests of an issue #18 workload at a rate and seed; also the standard {@code multi-turn}
   * (c) run's chats and the {@code fanout} run's jobs with a session per job, as {@code --workload
   * multi-turn} and {@code --workload fanout} generate them.
   */
  static List<SimRequest> requests(String workload, double rate, long seed) {
    return switch (workload) {
      case "agentic" -> Workloads.agentic(rate, seed, 300);
      case "multi-turn" -> Workloads.multiTurn(rate, seed);
      case "fanout" -> FanoutCheck.workload(rate, seed, FanoutCheck.DEFAULT_JOBS, true);
      case "high-cache", "hetero", "faults" -> Workloads.highCache(rate, seed, 16);
      case "low-cache" -> Workloads.lowCache(rate, seed, 16);
      case "long-chat" -> Workloads.longChat(1200, rate, seed);
      case "rl-rollout" -> Workloads.rlRollout(32, rate, seed);
      case "rl-rollout-sessions" -> withSessionPerPrompt(Workloads.rlRollout(32, rate, seed));
      case "varying-load" -> Workloads.varyingLoad(rate, seed, 16);
      case "mooncake", "mooncake-noevents" -> mooncake(rate);
      case "mixed-lengths" -> Workloads.mixedLengths(rate, seed);
      case "hot-prefix" -> Workloads.hotPrefix(rate, seed);
      case "chat-over-batch" -> Workloads.chatOverBatch(rate, seed);
      default -> throw new IllegalArgumentException("workload " + workload);
    };
  }

  /** The bundled Mooncake trace at a rate scale (the seed plays no part). */
  private static List<SimRequest> mooncake(double rate) {
    try {
      return Workloads.mooncake(Compare.defaultTrace(), rate, Integer.MAX_VALUE);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /**
   * The fleet of an issue #18 workload: 8 H100 backends, half of them 2x slow for hetero; mooncake
   * as the standard run {@code --workload mooncake --kv-events} (events 50 ms late, none dropped),
   * {@code mooncake-noevents} as the default comparison's (d); {@code faults} as the standard (f)
   * run, {@code high-cache} and {@code low-cache} as (b).
   */
  static SimConfig config(String workload) {
    SimConfig config = probeFleet(SimConfig.defaults(8, 29_205));
    if (workload.equals("mooncake")) {
      return config.withKvEvents(true, 50_000_000L, 0);
    }
    if (workload.equals("faults")) { // the standard (f) run: b0 dies at 30 %, b1 slows 3x at 50 %
      return config.withFaults(
          List.of(
              new SimConfig.Fault(SimConfig.Fault.Kind.CRASH, 0, 0.3),
              new SimConfig.Fault(SimConfig.Fault.Kind.SLOW_3X, 1, 0.5)));
    }
    if (workload.equals("hetero")) {
      List<SimConfig.Fault> slow = new ArrayList<>();
      for (int b = 0; b < config.backends() / 2; b++) {
        slow.add(new SimConfig.Fault(SimConfig.Fault.Kind.SLOW_2X, b, 0.0));
      }
      config = config.withFaults(slow);
    }
    return config;
  }

  /**
   * Held-out fleets (research only): {@code -Dprobe.backends=N} replaces the 8 backends, {@code
   * -Dprobe.speed=F} multiplies every step time of the H100 profile by F (the scorer's priors stay
   * the H100's, so calibration must find the difference), {@code -Dprobe.kv=F} multiplies the KV
   * capacity. Scale the rate by backends / 8 / F to keep the load per backend.
   */
  static SimConfig probeFleet(SimConfig config) {
    int n = Integer.getInteger("probe.backends", config.backends());
    double speed = Double.parseDouble(System.getProperty("probe.speed", "1"));
    double kv = Double.parseDouble(System.getProperty("probe.kv", "1"));
    BackendProfile p = config.profile();
    BackendProfile q =
        new BackendProfile(
            p.stepBaseMs() * speed,
            p.prefillMsPerToken() * speed,
            p.decodeMsPerToken() * speed,
            p.tokenBudget(),
            p.maxSeqs(),
            (int) Math.round(p.capacityBlocks() * kv),
            p.encodeMs(),
            p.encoderItems());
    SimConfig c = config.withBackends(n).withProfile(q);
    String scrape = System.getProperty("probe.scrapeMs");
    return scrape == null ? c : c.withScrapeInterval((long) (Double.parseDouble(scrape) * 1e6));
  }

  /** The scorer an {@code x:} variant built last ({@code -Dprobe.fits}: its fits are printed). */
  private static final AtomicReference<EstimatedTtftScorer> LAST = new AtomicReference<>();

  public static void main(String[] args) {
    if (args.length < 4) {
      System.err.println(
          "usage: ScorerProbe WORKLOAD SEEDS RATES POLICY... (e.g. hot-prefix 1,2 1,2,4 est-ttft"
              + " x:fw=64,tau=0,ps=1,rel sglang-cache-aware); see the class javadoc");
      System.exit(2);
    }
    String workload = args[0];
    List<Long> seeds = new ArrayList<>();
    for (String s : args[1].split(",")) {
      seeds.add(Long.parseLong(s));
    }
    List<Double> rates = new ArrayList<>();
    for (String s : args[2].split(",")) {
      rates.add(Double.parseDouble(s));
    }
    List<String> policies = List.of(args).subList(3, args.length);
    Map<String, Supplier<Scorer>> v = variants();
    for (String p : policies) {
      if (p.contains(":")) {
        v.put(
            p,
            () -> {
              EstimatedTtftScorer e = parsed(p).name(p).build();
              LAST.set(e);
              return e;
            });
      }
      if (!v.containsKey(p)
          && !p.equals("floor")
          && !p.equals("floor-busy")
          && !p.equals("floor-time")) {
        Policies.byName(p); // fails early on an unknown name
      }
    }
    for (long seed : seeds) {
      for (double rate : rates) {
        List<SimRequest> reqs = requests(workload, rate, seed);
        SimConfig config = config(workload);
        FleetSimulator sim = new FleetSimulator(workload, config, reqs, null).scorers(v);
        StringBuilder line =
            new StringBuilder(String.format(Locale.ROOT, "seed %d rate %sx", seed, rate));
        for (String p : policies) {
          if (p.equals("floor-time")) {
            line.append(floorTime(reqs, config.profile()));
            continue;
          }
          if (p.equals("floor") || p.equals("floor-busy")) {
            line.append(floor(reqs, config.profile(), p.equals("floor-busy")));
            continue;
          }
          PolicyResult r = sim.run(p);
          if (Boolean.getBoolean("probe.fits") && LAST.get() != null) {
            EstimatedTtftScorer e = LAST.getAndSet(null);
            StringBuilder fits = new StringBuilder("  fits " + p + ":");
            for (int b = 0; b < config.backends(); b++) {
              fits.append("\n    b").append(b).append(' ').append(e.coefficients(b));
            }
            System.out.println(fits);
          }
          line.append(
              String.format(
                  Locale.ROOT,
                  " | %s %.1f/%.1f (%.2f, p50 %.1f)",
                  p,
                  r.ttftP95(),
                  r.ttftMean(),
                  100 * r.tokenHitRate(),
                  r.ttftP50()));
        }
        System.out.println(line);
      }
    }
  }
}
