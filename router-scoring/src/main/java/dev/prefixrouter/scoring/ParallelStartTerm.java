package dev.prefixrouter.scoring;

import com.github.benmanes.caffeine.cache.Cache;
import dev.prefixrouter.api.spi.ScoringContext;
import java.time.Duration;
import java.util.Arrays;

/**
 * Parallel start of a new session ({@link EstimatedTtftScorer.Builder#parallelStart}). Some
 * sessions send several requests at once on a new shared prefix (a map-reduce job's maps on one
 * document). Siblings on one backend share its steps: the later ones wait behind the first one's
 * prefill chunks and then decode together, while a backend with no step in progress starts a
 * request at once. (The term was first derived from an engine model in which a sibling admitted in
 * the same step as the first request recomputes the prefix; vLLM v1 caches a prompt's blocks as
 * their prefill is scheduled, so such a sibling hits them, and the simulator was corrected to do so
 * in issue #18 session 32. Measured on the corrected simulator the term still lowers a fan-out's
 * TTFT: benchmarks/README.md, session 32.)
 *
 * <p><b>The cost</b> (first request of a session only). On a backend with nothing in flight the
 * first request's step starts as it arrives and its siblings queue behind it; on a backend with a
 * step in progress it waits for that step and the siblings arriving meanwhile are admitted with it:
 *
 * <pre>
 * start(b) = weight x s x P(b) x (busy(b) - min busy)
 * busy(b)  = min(1, running(b) + ownQueued(b) + waiting(b))
 * </pre>
 *
 * where {@code P(b)} is the configured coefficients' prefill time of the request's uncached tokens
 * without the step intercept (what a co-admitted sibling repeats), divided by b's weight, and
 * {@code s} the learned siblings per new session: the decayed mean, over new sessions, of the
 * session's requests routed while its first one's prefill (at the configured coefficients, from
 * when it was routed) could not have completed. Relative to the least busy candidate: a fleet whose
 * every backend is busy (or idle) ranks as without the term.
 *
 * <p><b>The release</b> ({@link EstimatedTtftScorer.Builder#releaseParallelSiblings}). While the
 * first request's prefill runs, holding a sibling on the session's pin buys a place behind it. The
 * session rule then does not hold a parallel sibling: it goes where its cost is lowest, and a
 * released sibling does not move the session's pin (the later requests of the session go where its
 * first request went, which holds the prefix). With {@link
 * EstimatedTtftScorer.Builder#releaseSiblingsOnlyToIdle} (the default of issue #18 sessions 18–31)
 * a sibling is released only when the best-ranked candidate has no prefill queued (the router's
 * pending prefill tokens and the reported waiting count both 0) and held otherwise; on the
 * corrected simulator that held map-reduce maps behind each other on the pin (fan-out TTFT mean
 * 1.06–1.13× the best anchor's at 1× and 2×, against 0.96–0.99× released always;
 * benchmarks/README.md, session 32).
 *
 * <p>Sessions whose requests follow each other (chats, tool loops) have {@code s} 0 and are never
 * siblings: they route exactly as without the term. Requests without a session pay 0.
 *
 * <p>Thread-safe. Cost per decision: for a session request one session-cache lookup (two with the
 * release); for a session's first request one pass over the candidates. Per session request one
 * short synchronized update of the decayed counts; a session's first request adds one entry to a
 * Caffeine cache like {@link InProcessSessionPins} (entries expire {@code sessionTtl} after their
 * last use, at most {@code maxSessions} held); later requests only read it. Requests without a
 * session: one volatile read and a fill of zeros.
 */
final class ParallelStartTerm implements CostTerm {
  static final String NAME = "parallel-start";

  /** Decay of the counts, per session request. */
  private static final double COUNT_DECAY = 0.999;

  private final double weight;
  private final boolean release;
  private final boolean onlyToIdle;
  private final TtftCoefficients coefficients;
  private final Object lock = new Object();

  /** Session key -> its first request: when it was routed, and until when its prefill ran. */
  private final Cache<String, First> firsts;

  private double sessions; // under lock: decayed count of new sessions
  private double siblings; // under lock: decayed count of requests within a first's prefill

  /** {@code siblings / sessions}, written under lock, read without it. */
  private volatile double perSession;

  /** A session's first request: engine nanos when routed, and when its prefill would end. */
  private record First(long at, long until) {}

  ParallelStartTerm(
      double weight,
      boolean release,
      boolean onlyToIdle,
      TtftCoefficients coefficients,
      long sessionTtlNanos,
      long maxSessions) {
    this.weight = weight;
    this.release = release;
    this.onlyToIdle = onlyToIdle;
    this.coefficients = coefficients;
    this.firsts = InProcessSessionPins.cache(Duration.ofNanos(sessionTtlNanos), maxSessions);
  }

  @Override
  public String name() {
    return NAME;
  }

  /** The learned siblings per new session. */
  double siblings() {
    return perSession;
  }

  /** A candidate's share of a step in progress: 0 idle, 1 busy (faded reports in between). */
  static double busy(Candidates c, int i) {
    return Math.min(1, c.running(i) + c.ownQueued(i) + c.waiting(i));
  }

  @Override
  public void costs(Candidates c, double[] out) {
    int n = c.size();
    double s = perSession;
    String key = s > 0 && weight > 0 ? EstimatedTtftScorer.sessionKey(c.ctx().request()) : null;
    if (key == null || firsts.getIfPresent(key) != null) {
      Arrays.fill(out, 0, n, 0.0);
      return;
    }
    double least = 1;
    for (int i = 0; i < n; i++) {
      least = Math.min(least, busy(c, i));
    }
    for (int i = 0; i < n; i++) {
      double extra = busy(c, i) - least;
      out[i] = extra <= 0 ? 0 : weight * s * extra * repeatedMs(c.uncachedTokens(i)) / c.weight(i);
    }
  }

  /** The prefill a co-admitted sibling repeats: {@code uncached} tokens without the intercept. */
  private double repeatedMs(double uncached) {
    return coefficients.prefillMs(uncached, 0) - coefficients.alphaMs();
  }

  /**
   * Whether the session rule lets this decision's request of {@code session} go where its cost is
   * lowest: release on and the request a parallel sibling ({@link #sibling}); with {@code
   * onlyToIdle}, also the best-ranked candidate with no prefill queued.
   */
  boolean releases(Candidates c, String session) {
    if (!sibling(session, c.ctx().nowNanos())) {
      return false;
    }
    if (!onlyToIdle) {
      return true;
    }
    int top = c.order()[0];
    return c.ctx().pendingPrefillTokens(top) == 0 && c.waiting(top) == 0;
  }

  /**
   * Release on, and a request of {@code session} at {@code now} arrives while its session's first
   * request's prefill could still run (a parallel sibling); the session rule then keeps the pin
   * where it is.
   */
  boolean sibling(String session, long now) {
    if (!release) {
      return false;
    }
    First first = firsts.getIfPresent(session);
    return first != null && within(first, now);
  }

  private static boolean within(First first, long now) {
    return now - first.at() >= 0 && now - first.until() <= 0;
  }

  @Override
  public void onRouted(ScoringContext ctx, int candidate) {
    String key = EstimatedTtftScorer.sessionKey(ctx.request());
    if (key == null) {
      return;
    }
    long now = ctx.nowNanos();
    First first = firsts.getIfPresent(key);
    boolean isNew = false;
    if (first == null) {
      double uncached = Math.max(0, ctx.promptTokens() - ctx.matchedTokens(candidate));
      double ms = coefficients.prefillMs(uncached, 0) / ctx.backend(candidate).weight();
      First mine = new First(now, now + (long) (ms * 1e6));
      // one atomic step: two concurrent first requests of one session must not both count as new
      First raced = firsts.asMap().putIfAbsent(key, mine);
      isNew = raced == null;
      first = isNew ? mine : raced;
    }
    boolean sibling = !isNew && within(first, now);
    synchronized (lock) {
      sessions *= COUNT_DECAY;
      siblings *= COUNT_DECAY;
      if (isNew) {
        sessions += 1;
      } else if (sibling) {
        siblings += 1;
      }
      perSession = sessions <= 0 ? 0 : siblings / sessions;
    }
  }
}
