package dev.prefixrouter.bench.sim;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.spi.FirstTokenObservation;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import dev.prefixrouter.scoring.Candidates;
import dev.prefixrouter.scoring.CostTerm;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;
import org.jspecify.annotations.Nullable;

/**
 * Research instrument (issue #18): what a policy's estimate says per decision against what would
 * have happened. Before each route the probe asks every backend for its {@link
 * SimBackend#shadowTtftMs oracle TTFT} of the request (its scheduler replayed with no later
 * arrivals); a {@link #wrap wrapped} scorer then records, per candidate, the policy's cost, the
 * inputs it saw (matched tokens, in flight, pending prefill, running decodes), for est-ttft the
 * queue-prefill estimate as its {@code queue-prefill} term computes it (a recording term that adds
 * 0 to every cost, so decisions are unchanged), which backends the calibrated gateway rule would
 * have tied on, and the request's actual TTFT on the backend chosen. {@link #oracle()} is a policy
 * that routes every request to the lowest oracle TTFT (greedy: it ignores what the choice does to
 * later requests).
 *
 * <p>Single-threaded, like the simulator. One probe per run.
 */
final class DecisionProbe implements FleetSimulator.DecisionTap {
  private final int backends;
  private double[] oracle;
  private final List<Row> rows = new ArrayList<>();
  private Row current;
  private final double[] actual;
  private final int[] chosenBackend;

  /** One decision: per backend (by index), NaN where not a candidate. */
  static final class Row {
    final int request;
    final double[] oracle;
    final double[] cost;
    final double[] estimate; // est-ttft's queue-prefill term, NaN for other scorers
    final double[] matched;
    final double[] inFlight;
    final double[] pending;
    final double[] decodes; // the router's decoding leases
    final double[] running; // est-ttft's running input (leases or report, the larger)
    final double[] waiting; // est-ttft's waiting input beyond its own queued leases
    final double[] ownQueued;
    final boolean[] gatewayTied;
    final int[] aheadSame = new int[64]; // prefilling there now, same task (session up to '-')
    final int[] aheadOther = new int[64];
    int prompt;
    String session = "";
    double arrivalMs;
    int chosen = -1;

    Row(int request, double[] oracle, int n) {
      this.request = request;
      this.oracle = oracle.clone();
      cost = nan(n);
      estimate = nan(n);
      matched = nan(n);
      inFlight = nan(n);
      pending = nan(n);
      decodes = nan(n);
      running = nan(n);
      waiting = nan(n);
      ownQueued = nan(n);
      gatewayTied = new boolean[n];
    }

    private static double[] nan(int n) {
      double[] a = new double[n];
      Arrays.fill(a, Double.NaN);
      return a;
    }
  }

  DecisionProbe(int backends, int requests) {
    this.backends = backends;
    this.oracle = new double[backends];
    this.actual = new double[requests];
    this.chosenBackend = new int[requests];
    Arrays.fill(actual, Double.NaN);
    Arrays.fill(chosenBackend, -1);
  }

  @Override
  public void beforeRoute(int request, SimRequest r, long[] keys, SimBackend[] bs, long now) {
    for (int b = 0; b < backends; b++) {
      oracle[b] =
          bs[b].dead ? Double.POSITIVE_INFINITY : bs[b].shadowTtftMs(keys, r.tokens().length, now);
    }
    current = new Row(request, oracle, backends);
    current.prompt = r.tokens().length;
    current.session = r.session() == null ? "" : r.session();
    current.arrivalMs = r.arrivalNanos() / 1e6;
    String task = task(r.session());
    for (int b = 0; b < backends; b++) {
      for (SimBackend.Seq s : bs[b].running) {
        if (s.prefilled < s.prefillTarget()) {
          count(current, b, task, s);
        }
      }
      for (SimBackend.Seq s : bs[b].waiting) {
        count(current, b, task, s);
      }
    }
  }

  private static String task(String session) {
    if (session == null) {
      return null;
    }
    int cut = session.lastIndexOf('-');
    return cut > 0 ? session.substring(0, cut) : session;
  }

  private static void count(Row row, int b, String task, SimBackend.Seq s) {
    if (task != null && task.equals(task(s.request.session()))) {
      row.aheadSame[b]++;
    } else {
      row.aheadOther[b]++;
    }
  }

  @Override
  public void routed(int request, int backend) {
    if (chosenBackend[request] < 0) {
      chosenBackend[request] = backend;
      if (current != null && current.request == request) {
        current.chosen = backend;
        rows.add(current);
        current = null;
      }
    }
  }

  @Override
  public void firstToken(int request, double ttftMs) {
    actual[request] = ttftMs;
  }

  List<Row> rows() {
    return rows;
  }

  double actual(int request) {
    return actual[request];
  }

  private static int index(Backend b) {
    return Integer.parseInt(b.id().substring(1));
  }

  /** A term that adds 0 to every candidate and records est-ttft's inputs and estimate. */
  CostTerm recorder() {
    return new CostTerm() {
      @Override
      public String name() {
        return "probe-recorder";
      }

      @Override
      public void costs(Candidates c, double[] out) {
        ScoringContext ctx = c.ctx();
        for (int i = 0, n = c.size(); i < n; i++) {
          out[i] = 0;
          if (current == null) {
            continue;
          }
          int b = index(ctx.backend(i));
          double prefill = c.prefillMs(i, c.uncachedTokens(i), c.cachedTokens(i));
          double queue =
              c.betaMsPerToken(i) * ctx.pendingPrefillTokens(i)
                  + c.decodeMsPerRunning(i) * c.running(i)
                  + c.waitingMs(i) * c.waiting(i);
          current.estimate[b] = (queue + prefill) / c.weight(i);
          current.running[b] = c.running(i);
          current.waiting[b] = c.waiting(i);
          current.ownQueued[b] = c.ownQueued(i);
        }
      }
    };
  }

  /** {@code delegate} with each decision's candidates recorded after it scores. */
  Scorer wrap(Scorer delegate) {
    return new Scorer() {
      @Override
      public String name() {
        return delegate.name();
      }

      @Override
      public void score(ScoringContext ctx) {
        delegate.score(ctx);
        Row row = current;
        if (row == null) {
          return;
        }
        int n = ctx.size();
        double best = Double.POSITIVE_INFINITY;
        double[] gw = new double[n];
        for (int i = 0; i < n; i++) {
          int b = index(ctx.backend(i));
          row.cost[b] = ctx.cost(i);
          row.matched[b] = ctx.matchedTokens(i);
          row.inFlight[b] = ctx.inFlight(i);
          row.pending[b] = ctx.pendingPrefillTokens(i);
          row.decodes[b] = ctx.runningDecodes(i);
          // the calibrated gateway rule (GatewayEstTtft.calibrated(): 0.05, 1, 24, 2)
          gw[i] =
              ctx.inFlight(i) > 24
                  ? Double.POSITIVE_INFINITY
                  : 0.05 * Math.max(0, ctx.promptTokens() - ctx.matchedTokens(i)) + ctx.inFlight(i);
          best = Math.min(best, gw[i]);
        }
        int minLoad = Integer.MAX_VALUE;
        for (int i = 0; i < n; i++) {
          if (gw[i] <= best + 2) {
            minLoad = Math.min(minLoad, ctx.inFlight(i));
          }
        }
        for (int i = 0; i < n; i++) {
          if (gw[i] <= best + 2 && ctx.inFlight(i) == minLoad) {
            row.gatewayTied[index(ctx.backend(i))] = true;
          }
        }
      }

      @Override
      public OptionalLong estimatedTtftNanos(ScoringContext ctx, int candidate) {
        return delegate.estimatedTtftNanos(ctx, candidate);
      }

      @Override
      public int cachedTokens(ScoringContext ctx, int candidate) {
        return delegate.cachedTokens(ctx, candidate);
      }

      @Override
      public void onRouted(ScoringContext ctx, int candidate) {
        delegate.onRouted(ctx, candidate);
      }

      @Override
      public @Nullable Object onRoutedLease(ScoringContext ctx, int candidate) {
        return delegate.onRoutedLease(ctx, candidate);
      }

      @Override
      public void onFirstToken(FirstTokenObservation o) {
        delegate.onFirstToken(o);
      }

      @Override
      public void onFirstToken(
          int slot,
          long ttftNanos,
          int promptTokens,
          int matchedTokens,
          long queuedPrefillTokens,
          int runningDecodes,
          double estimatedCost) {
        delegate.onFirstToken(
            slot,
            ttftNanos,
            promptTokens,
            matchedTokens,
            queuedPrefillTokens,
            runningDecodes,
            estimatedCost);
      }

      @Override
      public void onEnded(int slot) {
        delegate.onEnded(slot);
      }

      @Override
      public void onEnded(int slot, @Nullable Object token) {
        delegate.onEnded(slot, token);
      }

      @Override
      public void addBackend(int slot, Backend backend) {
        delegate.addBackend(slot, backend);
      }

      @Override
      public void removeBackend(int slot) {
        delegate.removeBackend(slot);
      }

      @Override
      public Map<String, Double> describe(int slot) {
        return delegate.describe(slot);
      }
    };
  }

  /** Routes to the lowest oracle TTFT (ties: fewest in flight, then the engine's rotation). */
  Scorer oracle() {
    return new Scorer() {
      @Override
      public String name() {
        return "oracle";
      }

      @Override
      public void score(ScoringContext ctx) {
        for (int i = 0; i < ctx.size(); i++) {
          double o = oracle[index(ctx.backend(i))];
          ctx.setCost(i, o + 1e-6 * ctx.inFlight(i));
        }
        ctx.sortByCost(0);
        ctx.setReason("oracle");
      }
    };
  }

  /**
   * Writes one CSV line per decision and candidate; the last two columns are the request's session
   * id (empty without one) and its arrival in ms (since issue #18 session 19: they class a decision
   * as a session's first request or a continuation).
   */
  void writeCsv(PrintWriter w) {
    w.println(
        "req,prompt,backend,chosen,gw,oracle,actual,cost,estimate,matched,inflight,pending,"
            + "decodes,running,waiting,ownqueued,aheadsame,aheadother,session,arrival");
    for (Row r : rows) {
      for (int b = 0; b < backends; b++) {
        if (Double.isNaN(r.cost[b])) {
          continue;
        }
        w.printf(
            Locale.ROOT,
            "%d,%d,%d,%d,%d,%.3f,%.3f,%.3f,%.3f,%.0f,%.0f,%.0f,%.0f,%.2f,%.2f,%.0f,%d,%d,%s,%.3f%n",
            r.request,
            r.prompt,
            b,
            r.chosen == b ? 1 : 0,
            r.gatewayTied[b] ? 1 : 0,
            r.oracle[b],
            r.chosen == b ? actual[r.request] : Double.NaN,
            r.cost[b],
            r.estimate[b],
            r.matched[b],
            r.inFlight[b],
            r.pending[b],
            r.decodes[b],
            r.running[b],
            r.waiting[b],
            r.ownQueued[b],
            r.aheadSame[b],
            r.aheadOther[b],
            r.session,
            r.arrivalMs);
      }
    }
  }
}
