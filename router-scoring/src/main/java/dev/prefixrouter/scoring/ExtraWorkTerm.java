package dev.prefixrouter.scoring;

import dev.prefixrouter.api.spi.ScoringContext;
import java.util.Arrays;

/**
 * Extra work ({@link EstimatedTtftScorer.Builder#extraWork}): the wait a candidate's extra prefill
 * imposes on the requests that will reach that backend after this one. A per-request estimate
 * weighs only the request's own time; in overload it moves a request off a holder with a long queue
 * onto a backend where its whole prompt is prefilled again, and that re-prefill delays every later
 * arrival there (measured: a greedy choice with exact TTFTs loses to llm-d's weighted rule at 4x
 * load on the high-cache workload, benchmarks/README.md issue #18 session 24). The term prices that
 * delay:
 *
 * <pre>
 * extraWork(b) = weight · λ(b) · ΔS(b)² / (2 (1 − ρ(b))) / (1 + h · λ_g)
 * ΔS(b)        = prefill(b) − min over the candidates of prefill      (ms, divided by weight)
 * </pre>
 *
 * {@code λ(b)} is the requests routed to b per ms and {@code ρ(b)} the prefill ms routed to b per
 * ms (at the configured coefficients; capped at {@value #RHO_CAP}), both decayed with a {@value
 * #LOAD_TAU_SECONDS} s time constant: the M/G/1 wait that {@code ΔS} of added work imposes on b's
 * later arrivals. The candidate with the least prefill pays nothing; a candidate whose prefill is
 * longer only by a few ms pays next to nothing (the square); a whole cold prompt on a busy backend
 * pays a lot. A candidate with a prefill queued now pays (the router's pending prefill tokens
 * there, or a reported waiting request). An idle one pays {@code idleWeight} (default 0.5) of the
 * price only once at least {@code idleShare} (default 0.75) of the decision's candidates are busy
 * and its own ρ is at least {@code idleMinUtilisation} (default 0.5): the fleet is saturated, and a
 * copy on a backend that has only just drained delays what reaches it next (high-cache at 4x load:
 * 1.01x -> 0.93x the best anchor's p95), while a backend that idled through a burst takes its copy
 * free. Otherwise an idle backend starts the copy at once; and the rates are the router's own view
 * of its routes, which a host may drive far faster than any engine runs (the published gateway's
 * hit-rate workload routes a request per simulated millisecond with the first tokens reported at
 * once and never has a prefill queued: priced there, the term would keep every document on its
 * first holder and the load ±6–19 % apart; gated, that workload routes exactly as without the
 * term). {@code λ_g} is the decayed request rate (per second, {@value #GROUP_TAU_SECONDS} s) of the
 * longest prefix any candidate holds, counted at the routed requests that reused it: a copy of a
 * hot prefix is a replica its later requests reuse (the replica-value term's case), so it pays
 * {@code 1 / (1 + h · λ_g)} of the price; {@code h} ({@code groupHorizonSeconds}) 0 gives every
 * prefix the full price.
 *
 * <p><b>Bounds.</b> One load record per backend slot (removed with the backend) and at most {@value
 * #MAX_PREFIXES} prefix rates in a fixed table ({@link PrefixRates}: 40 B each, allocated at the
 * first count; a new prefix displaces the colder of its set's two).
 *
 * <p>Thread-safe. Cost per decision: one pass over the candidates' busy flags, and that is all when
 * none is busy (the calm case); otherwise one pass over their prefill estimates and, for each
 * candidate that may pay, one short synchronized read of its load (one {@code exp}); when any
 * candidate pays, one read of the prefix rate (a striped lock, one {@code exp}). Per routed request
 * one synchronized update of the chosen backend's load and, when it reused a prefix, one update of
 * that prefix's rate. No allocation after a backend's first route.
 */
final class ExtraWorkTerm implements CostTerm {
  static final String NAME = "extra-work";

  /** Time constant of a backend's decayed arrival rate and prefill utilisation, seconds. */
  static final double LOAD_TAU_SECONDS = 2;

  /** The utilisation used at most (the wait grows as {@code 1 / (1 − ρ)}). */
  static final double RHO_CAP = 0.9;

  /** Time constant of a prefix's decayed request rate, seconds. */
  static final double GROUP_TAU_SECONDS = 10;

  /** Prefix rates held at most (a power of two: {@link PrefixRates}' bound). */
  static final int MAX_PREFIXES = 16_384;

  private static final double LOAD_TAU_MS = LOAD_TAU_SECONDS * 1e3;

  private final double weight;
  private final double groupHorizonSeconds;
  private final double idleShare;
  private final double idleWeight;
  private final double idleMinUtilisation;
  private final TtftCoefficients coefficients;
  private final Object lock = new Object();
  private final SlotTable<Load> loads = new SlotTable<>(lock);
  private final PrefixRates groups;

  /**
   * @param weight the price's multiplier (> 0)
   * @param groupHorizonSeconds {@code h}: seconds of a prefix's traffic that discount its copy
   * @param idleShare from this share of busy candidates in a decision on, idle ones pay too ({@link
   *     EstimatedTtftScorer.Builder#extraWorkIdleShare}): 0 every candidate, +Infinity busy ones
   *     only
   * @param idleWeight the share of the price an idle candidate pays when it pays, in [0, 1]
   * @param idleMinUtilisation the least ρ at which an idle candidate pays, in [0, 1]
   * @param coefficients the prefill estimate of the routed requests' loads
   */
  ExtraWorkTerm(
      double weight,
      double groupHorizonSeconds,
      double idleShare,
      double idleWeight,
      double idleMinUtilisation,
      TtftCoefficients coefficients) {
    this.weight = weight;
    this.idleShare = idleShare;
    this.idleWeight = idleWeight;
    this.idleMinUtilisation = idleMinUtilisation;
    this.groupHorizonSeconds = groupHorizonSeconds;
    this.coefficients = coefficients;
    this.groups = new PrefixRates(MAX_PREFIXES, GROUP_TAU_SECONDS, 0);
  }

  /** One backend's routed requests and their prefill ms, decayed to {@link #at}. */
  private static final class Load {
    private double count;
    private double sum;
    private long at;
    private boolean started; // at is a real time (a ticker may be negative: no 0 sentinel)

    private void decay(long now) {
      if (!started) {
        started = true;
        at = now;
      } else if (now > at) {
        double f = Math.exp(-(now - at) / 1e6 / LOAD_TAU_MS);
        count *= f;
        sum *= f;
        at = now;
      }
    }

    synchronized void add(long now, double ms) {
      decay(now);
      count += 1;
      sum += ms;
    }

    /**
     * The M/G/1 wait {@code λ S² / (2 (1 − ρ))} that {@code sMs} of work imposes here, ms; 0 when ρ
     * is below {@code minRho}.
     */
    synchronized double imposedWaitMs(long now, double sMs, double minRho) {
      decay(now);
      double lambda = count / LOAD_TAU_MS;
      double rho = Math.min(RHO_CAP, sum / LOAD_TAU_MS);
      if (rho < minRho) {
        return 0;
      }
      return lambda * sMs * sMs / (2 * (1 - rho));
    }
  }

  @Override
  public String name() {
    return NAME;
  }

  /** {@code 1 / (1 + h · λ_g)} for the longest prefix any candidate holds (1 without one). */
  private double discount(ScoringContext ctx, long now) {
    if (groupHorizonSeconds == 0) {
      return 1;
    }
    int most = Candidates.longestHeldPrefix(ctx);
    if (most == 0) {
      return 1;
    }
    return 1 / (1 + groupHorizonSeconds * groups.perSecond(ctx.key(most - 1), now));
  }

  @Override
  public void costs(Candidates c, double[] out) {
    int n = c.size();
    int busy = 0;
    for (int i = 0; i < n; i++) {
      busy += c.prefillQueued(i) ? 1 : 0;
    }
    boolean all = busy >= idleShare * n; // idle candidates may pay too (never for +Infinity)
    if (busy == 0 && !all) {
      Arrays.fill(out, 0, n, 0.0); // the calm decision: nobody pays, no estimate needed
      return;
    }
    double min = Double.POSITIVE_INFINITY;
    for (int i = 0; i < n; i++) {
      out[i] = c.prefillMs(i, c.uncachedTokens(i), c.cachedTokens(i)) / c.weight(i);
      min = Math.min(min, out[i]);
    }
    ScoringContext ctx = c.ctx();
    long now = ctx.nowNanos();
    int[] slots = c.slots();
    double f = Double.NaN; // read once, and only when a candidate pays
    for (int i = 0; i < n; i++) {
      double ds = out[i] - min;
      boolean queued = c.prefillQueued(i);
      Load l = ds > 0 && (all || queued) ? loads.get(slots[i]) : null;
      if (l == null) {
        out[i] = 0;
        continue;
      }
      if (Double.isNaN(f)) {
        f = discount(ctx, now);
      }
      out[i] =
          (queued ? weight : weight * idleWeight)
              * l.imposedWaitMs(now, ds, queued ? 0 : idleMinUtilisation);
      out[i] *= f;
    }
  }

  @Override
  public void onRouted(ScoringContext ctx, int candidate) {
    long now = ctx.nowNanos();
    double ms = coefficients.routedPrefillMs(ctx, candidate);
    loads.getOrCreate(ctx.slot(candidate), Load::new).add(now, ms);
    int m = Math.min(ctx.matchedBlocks(candidate), ctx.keyCount());
    if (groupHorizonSeconds > 0 && m > 0) {
      groups.record(ctx.key(m - 1), now, false, 1);
    }
  }

  @Override
  public void removeBackend(int slot) {
    loads.remove(slot);
  }
}
