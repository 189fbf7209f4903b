package dev.prefixrouter.scoring;

import dev.prefixrouter.api.LoadReport;
import dev.prefixrouter.api.spi.ScoringContext;
import java.util.Arrays;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * One decision of {@link EstimatedTtftScorer} as its {@link CostTerm}s and {@link RankRule}s see
 * it: the {@link ScoringContext}, the values every term needs per candidate (computed once:
 * coefficients, cached and uncached prompt tokens, load reports faded by age), each term's cost per
 * candidate, the best cost and the ranking.
 *
 * <p>Load inputs: {@link #running} is the larger of the router's own decoding leases and the
 * backend's reported running count; {@link #waiting} is the reported waiting count minus the
 * router's own open leases not yet past their first token (those are pending prefill already).
 * Reported values fade linearly to nothing as the report ages to the scorer's {@code staleAfter}.
 *
 * <p>Not thread-safe: each routing thread has its own instance per scorer, reused from decision to
 * decision (no allocation on the steady state); valid only during {@link
 * EstimatedTtftScorer#score}.
 */
public final class Candidates {
  private static final int K = 5;
  private static final CostTerm[] NO_TERMS = new CostTerm[0];
  private static final Object[] NO_OWNERS = new Object[0];

  // The scorer, its terms and its rules are held only during a decision (set by reset, dropped by
  // end): this object is the value of the scorer's ThreadLocal, and a value that reached the
  // scorer would keep the ThreadLocal (its key) and so the scorer (with its 2 MB of shares) alive
  // for as long as the thread lives, once per scorer ever used on it.
  private @Nullable EstimatedTtftScorer scorer;
  private CostTerm[] terms = NO_TERMS;
  private Object[] owners = NO_OWNERS; // terms, then rules: the keys of state()
  private final @Nullable Object[] states;
  private @Nullable ScoringContext ctx;
  private int n;

  /** Per candidate: alpha, beta, gamma, decode, waiting (stride {@link #K}), copied once. */
  private double[] coef = new double[K * 16];

  /** Per candidate: the coefficients as a record, made only when a term asks for one. */
  private @Nullable TtftCoefficients[] k = new TtftCoefficients[16];

  private double[] cached = new double[16];
  private double[] uncached = new double[16];
  private double[] running = new double[16];
  private double[] waiting = new double[16];
  private double[] fade = new double[16];
  private double[] kvUsage = new double[16]; // NaN without a load report
  private int[] ownQueued = new int[16];
  private int[] held = new int[16]; // matched blocks that count as held, once uncache ran
  private boolean adjusted; // whether uncache ran in this decision (held[] valid)
  private int[] slot = new int[16];
  private double[] weight = new double[16];
  private double[][] termCosts;
  private final boolean[] steering; // per term: CostTerm#steering, asked once
  private double[] plain = new double[16]; // per candidate: the sum without steering terms
  private double[] total = new double[16]; // per candidate: the sum of all terms
  private double[] without = new double[16]; // per candidate: costWithout(i, withoutTerm)
  private @Nullable CostTerm withoutTerm; // whose costWithout is in without[], this decision
  private double best;
  private int rotation;

  /**
   * Buffers for a scorer whose terms are {@code terms} (their steering flags are read once) and
   * whose terms and rules together are {@code owners} long; no reference to either is kept.
   */
  Candidates(CostTerm[] terms, int owners) {
    this.states = new Object[owners];
    this.termCosts = new double[terms.length][16];
    this.steering = new boolean[terms.length];
    for (int t = 0; t < terms.length; t++) {
      steering[t] = terms[t].steering();
    }
  }

  /**
   * Starts a decision of {@code scorer} (whose {@code terms} and {@code owners}, terms then rules,
   * are the ones this object was made for): derives the per-candidate inputs of {@code c}.
   */
  void reset(ScoringContext c, EstimatedTtftScorer scorer, CostTerm[] terms, Object[] owners) {
    this.scorer = scorer;
    this.terms = terms;
    this.owners = owners;
    this.ctx = c;
    this.n = c.size();
    if (k.length < n) {
      int cap = Math.max(n, 2 * k.length);
      k = new TtftCoefficients[cap];
      coef = new double[K * cap];
      plain = new double[cap];
      cached = new double[cap];
      uncached = new double[cap];
      running = new double[cap];
      waiting = new double[cap];
      fade = new double[cap];
      kvUsage = new double[cap];
      ownQueued = new int[cap];
      held = new int[cap];
      slot = new int[cap];
      weight = new double[cap];
      total = new double[cap];
      without = new double[cap];
      termCosts = new double[terms.length][cap];
    }
    withoutTerm = null;
    adjusted = false;
    int prompt = c.promptTokens();
    for (int i = 0; i < n; i++) {
      int s = c.slot(i);
      slot[i] = s;
      scorer.readCoefficients(s, coef, K * i);
      k[i] = null;
      double matched = c.matchedTokens(i);
      cached[i] = matched;
      uncached[i] = Math.max(0, prompt - matched);
      int decodes = c.runningDecodes(i);
      double r = decodes;
      double w = 0;
      double f = 0;
      double kv = Double.NaN;
      int own = Math.max(0, c.inFlight(i) - decodes);
      LoadReport load = c.load(i);
      if (load != null) {
        kv = load.kvUsage();
        f = scorer.fade(c.loadAgeNanos(i));
        r = Math.max(r, f * load.running());
        // the engine's waiting count includes requests this router sent and already counts as
        // pending prefill (open leases not past their first token): only the rest is extra queue
        w = Math.max(0, f * load.waiting() - own);
      }
      running[i] = r;
      waiting[i] = w;
      fade[i] = f;
      kvUsage[i] = kv;
      ownQueued[i] = own;
      weight[i] = c.backend(i).weight();
    }
  }

  /** Ends the decision: the context, the scorer, its terms and rules are not retained. */
  void end() {
    ctx = null;
    scorer = null;
    terms = NO_TERMS;
    owners = NO_OWNERS;
  }

  private EstimatedTtftScorer scorer() {
    EstimatedTtftScorer s = scorer;
    if (s == null) {
      throw new IllegalStateException("no decision in progress");
    }
    return s;
  }

  /** Sums the terms into each candidate's cost and ranks by it. */
  void sum(int rot) {
    ScoringContext c = ctx();
    CostTerm[] ts = terms;
    double[][] tc = termCosts;
    for (int t = 0; t < ts.length; t++) {
      ts[t].costs(this, tc[t]);
    }
    // term by term (each candidate's sums still in declared order, so the same rounding): the
    // total and the plain sum (without steering terms)
    double[] e = total;
    double[] p = plain;
    int m = n;
    Arrays.fill(e, 0, m, 0.0);
    Arrays.fill(p, 0, m, 0.0);
    for (int t = 0; t < ts.length; t++) {
      double[] v = tc[t];
      if (steering[t]) {
        for (int i = 0; i < m; i++) {
          e[i] += v[i];
        }
      } else {
        for (int i = 0; i < m; i++) {
          double x = v[i];
          e[i] += x;
          p[i] += x;
        }
      }
    }
    double b = Double.POSITIVE_INFINITY;
    for (int i = 0; i < m; i++) {
      c.setCost(i, e[i]);
      b = Math.min(b, e[i]);
    }
    best = b;
    this.rotation = rot;
    c.sortByCost(rot);
  }

  /** The context of the decision. */
  public ScoringContext ctx() {
    ScoringContext c = ctx;
    if (c == null) {
      throw new IllegalStateException("no decision in progress");
    }
    return c;
  }

  /** Number of candidates. */
  public int size() {
    return n;
  }

  /**
   * The coefficients in use for the candidate's backend (fitted, or the scorer's defaults), as read
   * once for this decision. Allocates a record on the first call per candidate and decision; the
   * built-in terms use the primitive accessors ({@link #prefillMs}, {@link #betaMsPerToken}, ...)
   * instead, which return the same values.
   */
  public TtftCoefficients coefficients(int i) {
    TtftCoefficients r = k[i];
    if (r == null) {
      int at = K * i;
      r = new TtftCoefficients(coef[at], coef[at + 1], coef[at + 2], coef[at + 3], coef[at + 4]);
      k[i] = r;
    }
    return r;
  }

  /**
   * {@link TtftCoefficients#prefillMs} with the candidate's coefficients: the prefill time of
   * {@code uncached} tokens after {@code cached} ones, in ms (same arithmetic, no allocation).
   */
  public double prefillMs(int i, double uncached, double cached) {
    int at = K * i;
    return coef[at] + coef[at + 1] * uncached + coef[at + 2] * uncached * (uncached + cached);
  }

  /** The candidate's {@link TtftCoefficients#betaMsPerToken}. */
  public double betaMsPerToken(int i) {
    return coef[K * i + 1];
  }

  /** The candidate's {@link TtftCoefficients#decodeMsPerRunning}. */
  public double decodeMsPerRunning(int i) {
    return coef[K * i + 3];
  }

  /** The candidate's {@link TtftCoefficients#waitingMs}. */
  public double waitingMs(int i) {
    return coef[K * i + 4];
  }

  /**
   * The work queued ahead of a new request on the candidate, in ms at its coefficients and not
   * divided by its {@link #weight}: {@code beta·pendingPrefill + decode·running +
   * waitingMs·waiting} ({@link QueuePrefillTerm}'s queue).
   */
  public double queueMs(int i) {
    return betaMsPerToken(i) * ctx().pendingPrefillTokens(i)
        + decodeMsPerRunning(i) * running(i)
        + waitingMs(i) * waiting(i);
  }

  /** Prompt tokens believed cached on the candidate. */
  public double cachedTokens(int i) {
    return cached[i];
  }

  /** Prompt tokens the candidate would have to prefill ({@code >= 0}). */
  public double uncachedTokens(int i) {
    return uncached[i];
  }

  /**
   * Counts the candidate's matched blocks from {@code block} on ({@code tokens} of its cached
   * tokens) as uncached for this decision (a prefix another request is still about to prefill
   * there), before the terms run.
   */
  void uncache(int i, int block, double tokens) {
    double t = Math.min(tokens, cached[i]);
    cached[i] -= t;
    uncached[i] += t;
    if (!adjusted) { // the first in this decision: every candidate's matched blocks, once
      ScoringContext c = ctx();
      for (int j = 0; j < n; j++) {
        held[j] = c.matchedBlocks(j);
      }
      adjusted = true;
    }
    held[i] = Math.min(held[i], block);
  }

  /**
   * The candidate's matched blocks ({@link ScoringContext#matchedBlocks}) that count as held in
   * this decision: all of them, or those before a prefix still about to be prefilled there.
   */
  public int heldBlocks(int i) {
    if (i < 0 || i >= n) {
      throw new IndexOutOfBoundsException("candidate " + i + " of " + n);
    }
    return adjusted ? held[i] : ctx().matchedBlocks(i);
  }

  /** Running requests: the router's decoding leases or the faded reported count, the larger. */
  public double running(int i) {
    return running[i];
  }

  /**
   * The longest prefix any candidate of {@code ctx} holds, in blocks, capped at the context's keys
   * (a context whose keys were capped has only those): the prefix whose request rate the
   * replica-value and extra-work terms read and count.
   */
  static int longestHeldPrefix(ScoringContext ctx) {
    int most = 0;
    for (int i = 0, n = ctx.size(); i < n; i++) {
      most = Math.max(most, ctx.matchedBlocks(i));
    }
    return Math.min(most, ctx.keyCount());
  }

  /**
   * Whether the candidate has a prefill queued now: router-pending prefill tokens, or a reported
   * waiting request beyond the router's own (a report faded below half a request does not count).
   */
  public boolean prefillQueued(int i) {
    return ctx().pendingPrefillTokens(i) > 0 || waiting[i] >= 0.5;
  }

  /** Requests the backend reports waiting beyond the router's own queued leases, faded. */
  public double waiting(int i) {
    return waiting[i];
  }

  /** The router's own open leases on the candidate not yet past their first token. */
  public int ownQueued(int i) {
    return ownQueued[i];
  }

  /** Weight of the candidate's load report now: 1 when fresh, falling to 0 at staleness. */
  public double fade(int i) {
    return fade[i];
  }

  /**
   * Whether the candidate is saturated: a live load report with KV usage at or above the scorer's
   * {@code saturationKvUsage}.
   */
  public boolean saturated(int i) {
    return fade[i] > 0 && kvUsage[i] >= scorer().saturationKvUsage(); // fade 0 without a report
  }

  /**
   * The KV-cache usage of the candidate's last load report ({@link LoadReport#kvUsage}, not faded),
   * or NaN without one; read once per decision.
   */
  public double kvUsage(int i) {
    if (i < 0 || i >= n) {
      throw new IndexOutOfBoundsException("candidate " + i + " of " + n);
    }
    return kvUsage[i];
  }

  /** Per candidate: its slot ({@code ctx().slot(i)}, read once); the array is reused. */
  int[] slots() {
    return slot;
  }

  /** Per candidate: its {@link #weight}; the array is reused, valid for this decision. */
  double[] weights() {
    return weight;
  }

  /** The candidate's backend weight (relative speed). */
  public double weight(int i) {
    return weight[i];
  }

  /** The cost term {@code term} gave candidate {@code i} in this decision. */
  public double termCost(CostTerm term, int i) {
    return termCosts[indexOf(term)][i];
  }

  /** The candidate's total cost (all terms, or as a rule last set it). */
  public double cost(int i) {
    return ctx().cost(i);
  }

  /** The candidate's cost without the {@link CostTerm#steering steering} terms. */
  public double plainCost(int i) {
    if (i < 0 || i >= n) {
      throw new IndexOutOfBoundsException("candidate " + i + " of " + n);
    }
    return plain[i];
  }

  /**
   * The candidate's cost without the steering terms and without {@code skip} (if not null), summed
   * in the declared order.
   */
  public double costWithout(int i, @Nullable CostTerm skip) {
    if (skip == null) {
      return plainCost(i);
    }
    if (i < 0 || i >= n) {
      throw new IndexOutOfBoundsException("candidate " + i + " of " + n);
    }
    if (skip != withoutTerm) {
      sumWithout(skip);
    }
    return without[i];
  }

  /** Every candidate's {@link #costWithout} {@code skip}, once per decision and skipped term. */
  private void sumWithout(CostTerm skip) {
    int skipped = -1; // a term not of this scorer skips nothing
    for (int t = 0; t < terms.length; t++) {
      if (terms[t] == skip) {
        skipped = t;
      }
    }
    double[] e = without;
    int m = n;
    Arrays.fill(e, 0, m, 0.0);
    for (int t = 0; t < terms.length; t++) {
      if (t != skipped && !steering[t]) {
        double[] v = termCosts[t];
        for (int i = 0; i < m; i++) {
          e[i] += v[i];
        }
      }
    }
    withoutTerm = skip;
  }

  /**
   * Whether the winner (rank 0) got a credit from {@code term} (a negative cost) and, without the
   * term, would cost more than the near-tie band above the best candidate: the term decided.
   */
  boolean wonByCredit(CostTerm term) {
    int winner = order()[0];
    if (termCost(term, winner) >= 0) {
      return false;
    }
    double bestWithout = Double.POSITIVE_INFINITY;
    for (int i = 0; i < n; i++) {
      bestWithout = Math.min(bestWithout, costWithout(i, term));
    }
    return costWithout(winner, term) > bandLimit(bestWithout);
  }

  /** The lowest cost among the candidates. */
  public double best() {
    return best;
  }

  /** The ranking, best first (the context's order array: rules rearrange it in place). */
  public int[] order() {
    return ctx().order();
  }

  /** Moves the candidate ranked {@code pos} to the front, keeping the others' order. */
  public void promote(int pos) {
    int[] order = order();
    int c = order[pos];
    System.arraycopy(order, 0, order, 1, pos);
    order[0] = c;
  }

  /** Ranks by {@link #plainCost} instead: sets those costs, re-sorts with the same rotation. */
  public void rankByPlainCost() {
    ScoringContext c = ctx();
    double b = Double.POSITIVE_INFINITY;
    for (int i = 0; i < n; i++) {
      double p = plain[i];
      c.setCost(i, p);
      b = Math.min(b, p);
    }
    best = b;
    c.sortByCost(rotation);
  }

  /**
   * Upper edge of the near-tie band above {@code cost}: {@code cost + max(ms, fraction × cost)}.
   */
  public double bandLimit(double cost) {
    return scorer().bandLimit(cost);
  }

  /** This thread's per-decision state of a term or rule of the scorer, or {@code null}. */
  public @Nullable Object state(Object termOrRule) {
    return states[ownerIndex(termOrRule)];
  }

  /**
   * This thread's state of a term or rule, made by {@code initial} on first use (a non-capturing
   * constructor reference allocates nothing afterwards).
   */
  public <T> T state(Object termOrRule, Supplier<T> initial) {
    int at = ownerIndex(termOrRule);
    @SuppressWarnings("unchecked")
    T s = (T) states[at];
    if (s == null) {
      s = initial.get();
      states[at] = s;
    }
    return s;
  }

  /** {@code buf} if it holds {@link #size()} values, else a larger array to replace it. */
  public double[] fit(double[] buf) {
    return buf.length >= n ? buf : new double[Math.max(n, 2 * buf.length)];
  }

  /** Sets this thread's state of a term or rule (kept across decisions: reuse buffers). */
  public void setState(Object termOrRule, @Nullable Object state) {
    states[ownerIndex(termOrRule)] = state;
  }

  private int indexOf(CostTerm term) {
    for (int t = 0; t < terms.length; t++) {
      if (terms[t] == term) {
        return t;
      }
    }
    throw new IllegalArgumentException("not a term of this scorer: " + term.name());
  }

  private int ownerIndex(Object o) {
    for (int i = 0; i < owners.length; i++) {
      if (owners[i] == o) {
        return i;
      }
    }
    throw new IllegalArgumentException("not a term or rule of this scorer: " + o);
  }
}
