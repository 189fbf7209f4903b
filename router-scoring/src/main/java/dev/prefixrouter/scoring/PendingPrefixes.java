package dev.prefixrouter.scoring;

import dev.prefixrouter.api.spi.ScoringContext;
import java.util.concurrent.locks.StampedLock;

/**
 * No credit for a prefix whose prefill has not started ({@link
 * EstimatedTtftScorer.Builder#pendingPrefix}): a view of each decision's cached tokens, applied
 * before the terms and rules run. The router's index holds a routed request's blocks from the
 * moment it is routed; on a busy backend that request waits for the step in progress, and a second
 * request with the same prefix routed there meanwhile waits behind its prefill. (The view was
 * derived from an engine model in which that second request, admitted in the same step, recomputes
 * the prefix; vLLM v1 caches a prompt's blocks as their prefill is scheduled, so it hits them. The
 * simulator was corrected in issue #18 session 32; there, with parallel siblings released from
 * their session's pin, the view changes a session fan-out's TTFT little, benchmarks/README.md.)
 *
 * <p><b>Copies stay together.</b> A request whose whole prompt the candidate already holds (an
 * identical copy: best-of-n samples, an RL group's rollouts) sees nothing pending there. Sent to
 * the holder within the first one's step it recomputes the prompt as it would elsewhere, but
 * spread, every copy re-prefills the whole prompt on another backend (a problem's copies on 2.6
 * backends instead of 1.2, session 21), a cost the per-decision estimate does not carry; kept
 * together, the copies admitted after the first step hit. A request that brings tokens of its own
 * past the held prefix (a map over a shared document) is the case the view is for.
 *
 * <p><b>Scope.</b> In {@link PendingPrefixScope#SESSION} (the default) a record carries its
 * request's session tag and only requests of the same session see it; requests without a session
 * neither leave nor see records. In {@link PendingPrefixScope#ALL} every request leaves and sees
 * records.
 *
 * <p><b>What is recorded.</b> Each request routed to a busy backend (decodes running, prefill
 * queued or requests waiting, as the decision saw it) that brought new blocks leaves one record on
 * that backend: the index of its first new block, that block's key, and a deadline = routing time +
 * one step's intercept at the configured coefficients ({@code alpha}, divided by the backend's
 * weight), when the step in progress is expected to have ended. A request routed to an idle backend
 * starts its step at once and leaves nothing. Each backend keeps its last {@value #RING} records.
 *
 * <p><b>The view.</b> For a candidate whose match runs past the first new block of a live record
 * (its own key at that index equal to the record's: the same chain, so the same prefix), the blocks
 * from there to the end of its match count as uncached in this decision ({@link
 * Candidates#cachedTokens}, {@link Candidates#uncachedTokens}): every term and rule sees a
 * candidate that recomputes them wherever a term or rule reads them there (the queue-prefill term
 * prices the prefill; the prefix-affinity rule, through {@link Candidates#heldBlocks}, no longer
 * sees a holder). What reads the index's match itself still sees it: the balance term's replica
 * pacing, the replica-value term, and the future-wait and parallel-start terms' accounting when a
 * request is routed. {@link #pendingTokens} gives the same tokens to {@link
 * EstimatedTtftScorer#cachedTokens}, so the engine counts them as prefill to do (its pending
 * prefill, the decision's {@code matchedTokens}) and the online calibration learns from what the
 * engine actually served. When every candidate has a prefill queued (the router's pending prefill
 * or a reported waiting count), nothing counts as pending: a recompute elsewhere would queue as
 * well, and keeping the copies together measured better (bursts of identical prompts).
 *
 * <p>Thread-safe: records are written under a per-backend {@link StampedLock} and read with an
 * optimistic read (retried under the read lock when a write intervened), so {@code adjust} never
 * blocks a writer for long and never sees a torn record. Not atomic across decisions: two requests
 * of one prefix scored at the same moment on two threads may both miss the other's record (each is
 * written when its request is routed). Cost per decision: one volatile read per candidate with a
 * match; a scan of at most {@value #RING} records only on a backend that was routed a request while
 * busy within the last step. Per routed request: nothing on an idle backend, else one short locked
 * write. Memory: {@value #RING} records (28 B each) per backend slot used.
 */
final class PendingPrefixes {
  /** Records kept per backend. */
  static final int RING = 16;

  /** The longest step a record lives for (a backend of tiny weight), in ms. */
  static final double MAX_STEP_MS = 60_000;

  private final TtftCoefficients coefficients;
  private final SlotTable<Ring> rings = new SlotTable<>(this);

  /**
   * Per routing thread: each candidate's pending tokens and step deadline offset of the thread's
   * last decision (read by {@link #onRouted} and {@link #pendingTokens} right after it). A JDK
   * array: the value must not reach this term (a ThreadLocal value that reaches its key's owner is
   * never cleared).
   */
  private final ThreadLocal<double[][]> scratch =
      ThreadLocal.withInitial(() -> new double[][] {new double[16], new double[16], new double[2]});

  private final boolean sessionsOnly;

  /**
   * A view at {@code coefficients}; {@code sessionsOnly}: only a request's own session's records
   * count ({@link PendingPrefixScope#SESSION}).
   */
  PendingPrefixes(TtftCoefficients coefficients, boolean sessionsOnly) {
    this.coefficients = coefficients;
    this.sessionsOnly = sessionsOnly;
  }

  /**
   * The tag a request's records carry and match on: 0 in scope {@code ALL}; in scope {@code
   * SESSION} a non-zero 64-bit mix of its session key, or 0 for a request without a session (which
   * neither leaves nor sees records). Two sessions whose tags collide would also need the same
   * block key at the same depth for one to see the other's record.
   */
  private long tag(ScoringContext ctx) {
    if (!sessionsOnly) {
      return 0;
    }
    String key = EstimatedTtftScorer.sessionKey(ctx.request());
    return key == null ? 0 : (0x9E3779B97F4A7C15L * key.hashCode() + key.length()) | 1;
  }

  /** Counts each candidate's pending tokens as uncached in {@code c} (right after its reset). */
  void adjust(Candidates c) {
    ScoringContext ctx = c.ctx();
    int n = c.size();
    double[][] s = scratch.get();
    long tag = tag(ctx);
    if (sessionsOnly && tag == 0) {
      s[2][0] = Double.NaN; // no session: this decision has no scratch (equal to no time)
      return;
    }
    if (s[0].length < n) {
      s[0] = new double[Math.max(n, 2 * s[0].length)];
      s[1] = new double[s[0].length];
    }
    double[] pending = s[0];
    double[] step = s[1];
    long now = ctx.nowNanos();
    s[2][0] = now;
    s[2][1] = n;
    int tokensPerBlock = ctx.tokensPerBlock();
    // a recompute elsewhere only pays where it starts without a prefill queued ahead of it: when
    // every candidate has one, a pending prefix counts as cached (as without this view)
    boolean free = false;
    for (int i = 0; i < n && !free; i++) {
      free = ctx.pendingPrefillTokens(i) == 0 && c.waiting(i) == 0;
    }
    for (int i = 0; i < n; i++) {
      boolean busy = c.running(i) > 0 || c.ownQueued(i) > 0 || c.waiting(i) > 0;
      step[i] = busy ? coefficients.alphaMs() / c.weight(i) : 0;
      pending[i] = 0;
      int m = ctx.matchedBlocks(i);
      if (!free || m == 0 || m >= ctx.keyCount()) {
        continue; // an identical copy of a held prompt stays with it (see the class doc)
      }
      Ring r = rings.get(ctx.slot(i));
      if (r == null || r.latest - now <= 0) {
        continue;
      }
      int p = r.firstPending(ctx, m, now, tag);
      if (p < m) {
        double t = Math.max(0, c.cachedTokens(i) - (double) p * tokensPerBlock);
        pending[i] = t;
        c.uncache(i, p, t);
      }
    }
  }

  /**
   * Prompt tokens of candidate {@code i}'s match in the routing thread's last decision that a
   * request still ahead of its step is prefilling (0 when none); valid right after {@link #adjust}.
   */
  int pendingTokens(ScoringContext ctx, int i) {
    double[][] s = scratch.get();
    return mine(s, ctx) && i < s[0].length ? (int) s[0][i] : 0;
  }

  /** Whether the thread's scratch is from the decision of {@code ctx} (same time, same size). */
  private static boolean mine(double[][] s, ScoringContext ctx) {
    return s[2][0] == (double) ctx.nowNanos() && s[2][1] == ctx.size();
  }

  /** The engine routed to {@code candidate} of the thread's last decision. */
  void onRouted(ScoringContext ctx, int candidate) {
    double[][] s = scratch.get();
    double ms =
        mine(s, ctx) && candidate < s[1].length ? Math.min(s[1][candidate], MAX_STEP_MS) : 0;
    int m = ctx.matchedBlocks(candidate);
    if (ms <= 0 || m >= ctx.keyCount()) {
      return; // an idle backend starts the step at once; nothing new to prefill
    }
    long tag = tag(ctx);
    if (sessionsOnly && tag == 0) {
      return; // no session: nothing another request of it could see
    }
    long now = ctx.nowNanos();
    rings
        .getOrCreate(ctx.slot(candidate), Ring::new)
        .add(m, ctx.key(m), now + (long) (ms * 1e6), tag);
  }

  /** A backend left: its records go. */
  void removeBackend(int slot) {
    rings.remove(slot);
  }

  /** One backend's last {@value #RING} records. */
  static final class Ring {
    private final StampedLock lock = new StampedLock();
    private final int[] from = new int[RING];
    private final long[] key = new long[RING];
    private final long[] until = new long[RING];
    private final long[] tag = new long[RING];
    private int head;
    private int size;

    /** The latest deadline of any record (engine nanos); written under the lock. */
    volatile long latest;

    void add(int firstNew, long firstKey, long deadline, long requestTag) {
      long stamp = lock.writeLock();
      try {
        tag[head] = requestTag;
        from[head] = firstNew;
        key[head] = firstKey;
        until[head] = deadline;
        head = (head + 1) % RING;
        if (size == 0 || deadline - latest > 0) {
          latest = deadline;
        }
        size = Math.min(RING, size + 1);
      } finally {
        lock.unlockWrite(stamp);
      }
    }

    /**
     * The lowest block index below {@code m} at which a live record's chain meets the request's
     * ({@code m} when none).
     */
    int firstPending(ScoringContext ctx, int m, long now, long requestTag) {
      long stamp = lock.tryOptimisticRead();
      int p = scan(ctx, m, now, requestTag);
      if (!lock.validate(stamp)) {
        stamp = lock.readLock();
        try {
          p = scan(ctx, m, now, requestTag);
        } finally {
          lock.unlockRead(stamp);
        }
      }
      return p;
    }

    private int scan(ScoringContext ctx, int m, long now, long requestTag) {
      int p = m;
      int keys = ctx.keyCount();
      for (int r = 0, k = size; r < k; r++) {
        int f = from[r];
        if (f < p
            && f < keys
            && until[r] - now > 0
            && tag[r] == requestTag
            && ctx.key(f) == key[r]) {
          p = f;
        }
      }
      return p;
    }
  }
}
