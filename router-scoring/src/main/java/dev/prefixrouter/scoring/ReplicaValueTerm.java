package dev.prefixrouter.scoring;

import dev.prefixrouter.api.spi.ScoringContext;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * Replica value ({@link EstimatedTtftScorer.Builder#replicaValue}): what one more holder of a hot
 * prefix is worth to the requests of that prefix still to come.
 *
 * <p>A request whose prefix has one holder and finds it with a prefill step in progress waits for
 * that step: on traffic concentrated on a few long shared prefixes (a handful of system prompts
 * carrying most requests) these collisions are the TTFT tail, and a per-request estimate never pays
 * the cold prefill that would give the prefix a second holder, because for the request at hand the
 * wait is always the cheaper option. The term prices the future instead. When every holder of the
 * request's longest matched prefix has a prefill queued now and a non-holder has none (and is not
 * saturated), each such non-holder is credited
 *
 * <pre>
 * credit(i) = min(horizon × λ × r, prefill(i))      if λ × 2r / holders ≥ minLoad, else 0
 * </pre>
 *
 * where {@code λ} is the prefix's recent request rate (requests per second routed while this was
 * their longest held prefix, decayed with a {@value #RATE_TAU_SECONDS} s time constant), {@code r}
 * half the fastest holder's prefill of the request divided by its weight (the mean residual of a
 * colliding step, ms), {@code horizon} the seconds of that prefix's future traffic a replica is
 * credited with, and {@code prefill(i)} the candidate's own prefill of the request: at most the
 * copy is priced as if it held the prompt, so no total falls below the candidate's queue (the rank
 * rules compare against {@code best × ratio}). "Busy now" is the request's sample of each backend's
 * collision probability (requests arriving at random see the time average), so the expected credit
 * follows the probability that every holder is busy, and it falls with every new holder; in
 * overload, where no backend is idle, nothing is credited. A decision this term turned reports
 * {@code "est-ttft, replica of a busy hot prefix"}.
 *
 * <p>Guards keep it off traffic where replicas do not pay. The prefix must cover at least half the
 * prompt ({@value #MIN_PREFIX_SHARE}): where it is a small part (a shared system prompt before a
 * long document of the request's own) the request's own prefill is most of its time wherever it
 * runs, and a copy of the prefix saves little of it. {@code minLoad} is the least share of its
 * holders' time the prefix's own requests keep busy: below it a holder's collisions come from other
 * prefixes' traffic, which a replica of this one does not escape, and spreading many lukewarm
 * prefixes costs the hits and the KV the cache-aware terms are there to keep. A prefix must have
 * been counted for at least {@value #MIN_AGE_SECONDS} s (again after it went cold), so a burst of
 * identical requests (RL rollouts, a fan-out) waits for its first prefill instead of copying it;
 * and after a copy of a prefix is routed (to a non-holder, for whatever reason) the prefix earns no
 * credit for the same time, while the copy is a holder still busy with its cold prefill (without
 * this every arrival in that window would find "all holders busy" and copy again).
 *
 * <p>Thread-safe. Cost per decision: a pass over the candidates' queue counts; only when every
 * holder is busy and some non-holder is idle, one read of the prefix's rate. Per routed request
 * whose longest held prefix covers half its prompt: a pass over the candidates' matches and, for
 * one in {@value #SAMPLE_EVERY} (see {@link #sampled}) and for every copy, one update of the
 * prefix's rate. No allocation: the rates are a fixed table ({@link PrefixRates}) of at most
 * {@value #MAX_PREFIXES} prefixes, 40 B each (2.6 MB per scorer, allocated at the first count), two
 * per set, where a new prefix displaces the colder of its set's two (a prefix no longer reused
 * keeps its entry until displaced, with a rate that decays to 0); each set is read and written
 * under a striped lock.
 */
final class ReplicaValueTerm implements CostTerm {
  static final String NAME = "replica-value";

  /** Time constant of a prefix's decayed request rate, seconds. */
  static final double RATE_TAU_SECONDS = 10;

  /**
   * A prefix counted for less than this (from its first counted request, or since it went cold), or
   * copied less than this ago, earns no credit, seconds.
   */
  static final double MIN_AGE_SECONDS = 1;

  /** One routed request in this many is counted, with this weight ({@link #sampled}). */
  static final int SAMPLE_EVERY = 2;

  /** The least share of the prompt the matched prefix must cover to be credited a replica. */
  static final double MIN_PREFIX_SHARE = 0.5;

  /** Prefix rates held at most (a power of two: {@link PrefixRates}' bound). */
  static final int MAX_PREFIXES = 65_536;

  private final double horizonSeconds;
  private final double minLoad;
  private final PrefixRates rates;

  /**
   * @param horizonSeconds future traffic of a prefix a replica is credited with, seconds (> 0)
   * @param minLoad the least share of its holders' time the prefix's own requests must take
   * @param maxPrefixes prefix rates held at most
   */
  ReplicaValueTerm(double horizonSeconds, double minLoad, int maxPrefixes) {
    this.horizonSeconds = horizonSeconds;
    this.minLoad = minLoad;
    this.rates = new PrefixRates(maxPrefixes, RATE_TAU_SECONDS, MIN_AGE_SECONDS);
  }

  @Override
  public String name() {
    return NAME;
  }

  /**
   * The request's longest held prefix in blocks (capped at the context's keys), or 0 when none is
   * held or it covers less than {@value #MIN_PREFIX_SHARE} of the prompt: the prefix this term
   * credits and counts.
   */
  private static int creditablePrefix(ScoringContext ctx) {
    int most = Candidates.longestHeldPrefix(ctx);
    return (double) most * ctx.tokensPerBlock() < MIN_PREFIX_SHARE * ctx.promptTokens() ? 0 : most;
  }

  @Override
  public void costs(Candidates c, double[] out) {
    ScoringContext ctx = c.ctx();
    int n = c.size();
    Arrays.fill(out, 0, n, 0.0);
    int most = creditablePrefix(ctx);
    if (most == 0) {
      return;
    }
    int holders = 0;
    boolean idleOther = false;
    double r = Double.POSITIVE_INFINITY;
    for (int i = 0; i < n; i++) {
      boolean busy = c.prefillQueued(i);
      if (ctx.matchedBlocks(i) >= most) {
        if (!busy) {
          return; // an idle holder: no collision to escape
        }
        holders++;
        r = Math.min(r, 0.5 * c.prefillMs(i, c.uncachedTokens(i), c.cachedTokens(i)) / c.weight(i));
      } else if (!busy && !c.saturated(i)) {
        idleOther = true;
      }
    }
    if (!idleOther) {
      return;
    }
    double lambda = rates.perSecond(ctx.key(most - 1), ctx.nowNanos());
    if (lambda == 0 || lambda * 2 * r / 1000 / holders < minLoad) {
      return;
    }
    double credit = horizonSeconds * lambda * r;
    for (int i = 0; i < n; i++) {
      if (ctx.matchedBlocks(i) < most && !c.prefillQueued(i) && !c.saturated(i)) {
        // at most the candidate's own prefill: the copy is priced as if it held the prompt, and
        // every total stays at or above the candidate's queue (the rules compare best × ratio)
        double own = c.prefillMs(i, c.uncachedTokens(i), c.cachedTokens(i)) / c.weight(i);
        out[i] = -Math.min(credit, own);
      }
    }
  }

  @Override
  public @Nullable String reason(Candidates c) {
    return c.wonByCredit(this) ? "est-ttft, replica of a busy hot prefix" : null;
  }

  /**
   * Whether a routed request at {@code now} is counted: one in {@value #SAMPLE_EVERY}, chosen by a
   * multiplicative hash of its time (deterministic, no shared or per-thread state), each counted
   * one with weight {@value #SAMPLE_EVERY}. Arrival times carry no pattern at this resolution, so
   * the rate stays unbiased while half the routes skip the table (held routes over thousands of
   * prefixes miss the CPU caches on every lookup).
   */
  static boolean sampled(long now) {
    return (now * 0x9E3779B97F4A7C15L) >>> 63 == 0;
  }

  @Override
  public void onRouted(ScoringContext ctx, int candidate) {
    int most = creditablePrefix(ctx); // the prefix costs() reads
    if (most == 0) {
      return; // never credited: not counted
    }
    long now = ctx.nowNanos();
    boolean copy = ctx.matchedBlocks(candidate) < most;
    boolean counted = sampled(now);
    if (!copy && !counted) {
      return;
    }
    rates.record(ctx.key(most - 1), now, copy, counted ? SAMPLE_EVERY : 0);
  }
}
