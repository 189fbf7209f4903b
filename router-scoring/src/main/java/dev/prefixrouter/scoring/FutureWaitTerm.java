package dev.prefixrouter.scoring;

import com.github.benmanes.caffeine.cache.Cache;
import dev.prefixrouter.api.spi.ScoringContext;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Future waits of a new session ({@link EstimatedTtftScorer.Builder#futureWait}). Where a session's
 * first request goes, its later requests follow (they find their history there), so that placement
 * also decides where they will queue. Each later request waits on its backend about the mean M/G/1
 * delay of the backend's prefill work and imposes about as much on the others:
 *
 * <pre>
 * W(b)      = Q(b) / (2 (1 - rho(b)))       Q = sum S^2 / tau, rho = min(0.9, sum S / tau)
 * future(b) = weight x m x 2 W(b) x kept x open     for the first request of a session, else 0
 * kept      = 1 / (1 + N / n)
 * open      = max(0, 1 - qMin / tau)
 * </pre>
 *
 * where the sums run over the prefills routed to b, each {@code S} the configured coefficients'
 * prefill time of its uncached tokens on b in ms (divided by b's weight), decayed with time
 * constant {@code tau}; {@code m} is the expected further requests of a session (requests per
 * session seen so far, minus one, both counts decayed by 0.999 per session request). A request
 * without a session, and every request of a session after its first, pays 0: moving a session's
 * history costs its re-prefill now, which the other terms already price. {@code weight} prices a
 * unit of expected future wait against a unit of this request's own time; above 1 it weighs the
 * collisions that form the TTFT tail more than their mean.
 *
 * <p>Two factors, the same for every candidate of a decision, say how much of that future wait this
 * placement still decides:
 *
 * <ul>
 *   <li>{@code kept}: before the session's next request, the fleet places {@code N} other new
 *       sessions ({@code N} learned as the decayed mean, over sessions' consecutive requests, of
 *       the other new sessions placed between them), about {@code N / n} per candidate, each
 *       steered away from the backends this term finds loaded: they correct the imbalance this
 *       placement leaves, and about {@code 1 / (1 + N / n)} of it is still there when the next
 *       request comes. Where new sessions are rare within a gap (agentic tool loops, {@code N / n}
 *       about 1) the placement decides half of the wait; where many start within a gap (long chats,
 *       about 12) it decides little, and this request's own time should decide.
 *   <li>{@code open}: {@code qMin} is the shortest queue among the candidates ({@link
 *       Candidates#queueMs}, divided by the weight). When even that exceeds {@code tau}, every
 *       backend will still be working through its backlog when the session's next request comes:
 *       the fleet is saturated, the wait that request meets is the backlog it finds (priced when it
 *       is routed), and a steady-state wait of the recent work describes nothing. The term fades
 *       out linearly as the shortest queue approaches {@code tau}.
 * </ul>
 *
 * <p>Thread-safe. Cost per decision: one session-cache lookup; for a session's first request a pass
 * over the candidates' queues and one short synchronized read per candidate. Per routed request one
 * synchronized update of the chosen backend's sums (a monitor per backend, one {@code exp}; the
 * horizon is read without a lock); per session request one short synchronized update of the counts,
 * one session-cache read and a short synchronized swap of the session's visit (made by the cache
 * for a session's first request; a Caffeine cache like {@link InProcessSessionPins}: entries expire
 * {@code sessionTtl} after their last use, at most {@code maxSessions} held; beyond that Caffeine's
 * size eviction, W-TinyLFU, drops the rarely and least recently used first).
 */
final class FutureWaitTerm implements CostTerm {
  static final String NAME = "future-wait";

  /** Decay of the per-session request counts, per session request. */
  private static final double COUNT_DECAY = 0.999;

  private final double weight;
  private final double tauNanos;
  private final TtftCoefficients coefficients;
  private final Object lock = new Object();
  private final SlotTable<Load> loads = new SlotTable<>(lock);

  /** Session key -> its last request. */
  private final Cache<String, Visit> seen;

  private double requests; // under lock
  private double sessions; // under lock
  private double gapSum; // under lock: decayed sum of the gaps between a session's requests, ns
  private double gaps; // under lock: their decayed count

  /**
   * {@code gapSum / gaps} (4 s until a gap is seen), written under lock whenever they change and
   * read without it: every routed request reads the horizon, and a shared monitor on every route
   * would be written by every routing thread.
   */
  private volatile double learnedTau = DEFAULT_TAU_NANOS;

  private final AtomicLong placed = new AtomicLong(); // new sessions placed so far
  private double placedInGaps; // under lock: decayed sum of the others placed within a gap

  /**
   * A session's last request: engine nanos, and the new sessions placed up to it (itself too);
   * {@code seen} false until its first request is recorded. Read and written only while
   * synchronized on the visit, so a request swaps the values at once.
   */
  private static final class Visit {
    private boolean seen;
    private long at;
    private long placed;
  }

  FutureWaitTerm(
      double weight,
      long tauNanos,
      TtftCoefficients coefficients,
      long sessionTtlNanos,
      long maxSessions) {
    this.weight = weight;
    this.tauNanos = tauNanos;
    this.coefficients = coefficients;
    this.seen = InProcessSessionPins.cache(Duration.ofNanos(sessionTtlNanos), maxSessions);
  }

  /** One backend's prefill sums, decayed to {@link #at}. */
  private static final class Load {
    private double sum;
    private double sumSquares;
    private long at;
    private boolean started; // at is a real time (a ticker may be negative: no 0 sentinel)

    synchronized void add(long now, double ms, double tau) {
      decay(now, tau);
      sum += ms;
      sumSquares += ms * ms;
    }

    private void decay(long now, double tau) {
      if (!started) {
        started = true;
        at = now;
      } else if (now > at) {
        double f = Math.exp(-(now - at) / tau);
        sum *= f;
        sumSquares *= f;
        at = now;
      }
    }

    /** The mean wait in ms, {@code Q / (2 (1 - rho))}. */
    synchronized double waitMs(long now, double tau) {
      decay(now, tau);
      double tauMs = tau / 1e6;
      double rho = Math.min(0.9, sum / tauMs);
      return sumSquares / tauMs / (2 * (1 - rho));
    }
  }

  @Override
  public String name() {
    return NAME;
  }

  /**
   * The time constant in ns: the configured one, or with {@code tau} 0 the mean gap between a
   * session's consecutive requests, clamped to [1 ms, 1 h] (4 s until one is seen).
   */
  double tau() {
    return tauNanos > 0 ? tauNanos : learnedTau;
  }

  /** The learned horizon until a session's second request is seen, ns. */
  private static final double DEFAULT_TAU_NANOS = 4e9;

  /** Expected further requests of a new session. */
  double further() {
    synchronized (lock) {
      return sessions <= 0 ? 0 : Math.max(0, requests / sessions - 1);
    }
  }

  /**
   * The share of a placement's imbalance still there at the session's next request, {@code 1 / (1 +
   * N / n)} for {@code n} candidates (1 until a gap has been seen).
   */
  double kept(int n) {
    double perGap;
    synchronized (lock) {
      perGap = gaps < 1 ? 0 : placedInGaps / gaps;
    }
    return 1 / (1 + perGap / n);
  }

  /** {@code max(0, 1 - qMin / tau)}: how far the fleet is from saturated, tau in ns. */
  static double open(Candidates c, double tau) {
    double shortest = Double.POSITIVE_INFINITY;
    for (int i = 0, n = c.size(); i < n; i++) {
      shortest = Math.min(shortest, c.queueMs(i) / c.weight(i));
    }
    return Math.max(0, 1 - shortest / (tau / 1e6));
  }

  @Override
  public void costs(Candidates c, double[] out) {
    ScoringContext ctx = c.ctx();
    int n = c.size();
    String key = EstimatedTtftScorer.sessionKey(ctx.request());
    double m = key == null || seen.getIfPresent(key) != null ? 0 : further();
    double tau = m == 0 ? 0 : tau(); // once per decision, not per candidate
    double scale = m == 0 ? 0 : kept(n) * open(c, tau);
    if (scale == 0) {
      Arrays.fill(out, 0, n, 0.0);
      return;
    }
    long now = ctx.nowNanos();
    int[] slots = c.slots();
    for (int i = 0; i < n; i++) {
      Load l = loads.get(slots[i]);
      out[i] = l == null ? 0 : scale * weight * m * 2 * l.waitMs(now, tau);
    }
  }

  @Override
  public void onRouted(ScoringContext ctx, int candidate) {
    long now = ctx.nowNanos();
    double ms = coefficients.routedPrefillMs(ctx, candidate);
    loads.getOrCreate(ctx.slot(candidate), Load::new).add(now, ms, tau());
    String key = EstimatedTtftScorer.sessionKey(ctx.request());
    if (key == null) {
      return;
    }
    // one visit per session, made atomically (Caffeine's get: a read once it exists), swapped
    // under its own monitor: two concurrent requests of one new session count it as new once
    Visit visit = seen.get(key, k -> new Visit());
    long lastAt;
    long lastPlaced;
    long count;
    boolean first;
    synchronized (visit) {
      first = !visit.seen;
      lastAt = visit.at;
      lastPlaced = visit.placed;
      count = first ? placed.incrementAndGet() : placed.get();
      visit.seen = true;
      visit.at = now;
      visit.placed = count;
    }
    synchronized (lock) {
      requests = requests * COUNT_DECAY + 1;
      if (first) {
        sessions = sessions * COUNT_DECAY + 1;
      } else if (now > lastAt) {
        gapSum = gapSum * COUNT_DECAY + (now - lastAt);
        placedInGaps = placedInGaps * COUNT_DECAY + (count - lastPlaced);
        gaps = gaps * COUNT_DECAY + 1;
        // gaps >= 1 here; within the configured tau's range: parallel requests of one session
        // arrive ns apart, and a horizon of microseconds would turn the recent work into a huge
        // wait
        learnedTau = Math.min(3.6e12, Math.max(1e6, gapSum / gaps));
      }
    }
  }

  @Override
  public void removeBackend(int slot) {
    loads.remove(slot);
  }
}
