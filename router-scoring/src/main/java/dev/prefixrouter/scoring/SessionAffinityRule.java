package dev.prefixrouter.scoring;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.spi.ScoringContext;
import dev.prefixrouter.api.spi.SessionPins;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.jspecify.annotations.Nullable;

/**
 * Session affinity: a request with a session id prefers the backend its session was last routed to
 * (a {@link SessionPins} store keyed by backend id). The pin yields — and moves — when that backend
 * is not a candidate (unhealthy, draining, removed), is saturated, or its cost exceeds {@code best
 * × ratio + marginMs}. With {@code holdAgainstSteering}, that comparison uses the costs without the
 * {@link CostTerm#steering steering} terms ({@link Candidates#plainCost}): the balance term then
 * never moves a pinned session, only time (or saturation) does. A pinned session is a continuing
 * one, so the comparison also leaves out the {@code future-wait} term (and {@code parallel-start},
 * for the same reason) (it prices a new session's placement; it charges nobody when its own record
 * of sessions agrees with the pins, and a session it has not seen — routed by another replica, or
 * forgotten by it first — must not be moved by it). Reason {@code "session affinity"} whenever the
 * pinned backend wins. Tuning: {@link EstimatedTtftScorer.Builder#affinityMargin}, {@link
 * EstimatedTtftScorer.Builder#sessions}, {@link EstimatedTtftScorer.Builder#sessionPins}.
 */
final class SessionAffinityRule implements RankRule {
  static final String NAME = "session-affinity";

  private final double ratio;
  private final double marginMs;
  private final SessionPins pins;
  private final boolean holdAgainstSteering;
  // left out of the hold comparison, in order: the terms that price a new session's placement
  private final CostTerm[] exempt;
  private final @Nullable ParallelStartTerm parallel; // may release its parallel siblings

  /**
   * This thread's pin as {@link #apply} read it, for {@link #onRouted} of the same route: the
   * {@link SessionPins} contract reads a pin at most once per route. Holds two strings and a time,
   * nothing of the scorer (a value that reached this rule would keep the thread-local alive).
   */
  private final ThreadLocal<PinRead> lastRead = ThreadLocal.withInitial(PinRead::new);

  /** One route's read of its session's pin. */
  private static final class PinRead {
    @Nullable String session; // the key object sessionKey gave (compared by identity)
    @Nullable String pinned;
    long nowNanos;
  }

  /** Backend id per slot, to forget a removed backend's pins. */
  private volatile AtomicReferenceArray<String> ids = new AtomicReferenceArray<>(64);

  SessionAffinityRule(
      double ratio,
      double marginMs,
      SessionPins pins,
      boolean holdAgainstSteering,
      CostTerm[] exempt,
      @Nullable ParallelStartTerm parallel) {
    this.ratio = ratio;
    this.marginMs = marginMs;
    this.pins = pins;
    this.holdAgainstSteering = holdAgainstSteering;
    this.exempt = exempt.clone();
    this.parallel = parallel;
  }

  SessionPins pins() {
    return pins;
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public @Nullable String apply(Candidates c) {
    ScoringContext ctx = c.ctx();
    String session = EstimatedTtftScorer.sessionKey(ctx.request());
    if (session == null) {
      return null;
    }
    String pinned = pins.backendOf(session);
    PinRead read = lastRead.get();
    read.session = session;
    read.pinned = pinned;
    read.nowNanos = ctx.nowNanos();
    if (pinned == null || (parallel != null && parallel.releases(c, session))) {
      return null;
    }
    int[] order = c.order();
    int n = c.size();
    for (int r = 0; r < n; r++) {
      if (ctx.backend(order[r]).id().equals(pinned)) {
        if (r == 0) {
          return "session affinity";
        }
        int p = order[r];
        if (!c.saturated(p) && withinMargin(c, p)) {
          c.promote(r);
          return "session affinity";
        }
        return null;
      }
    }
    return null;
  }

  /** Whether the pinned candidate's cost is within {@code best × ratio + marginMs}. */
  private boolean withinMargin(Candidates c, int p) {
    if (!holdAgainstSteering && exempt.length == 0) {
      return c.cost(p) <= c.best() * ratio + marginMs;
    }
    double best = Double.POSITIVE_INFINITY;
    for (int i = 0, n = c.size(); i < n; i++) {
      best = Math.min(best, held(c, i));
    }
    return held(c, p) <= best * ratio + marginMs;
  }

  /**
   * A candidate's cost for the hold comparison: without steering terms if so configured, without
   * the exempt terms (exactly the same value when they charged 0).
   */
  private double held(Candidates c, int i) {
    double x = holdAgainstSteering ? c.plainCost(i) : c.cost(i);
    for (CostTerm t : exempt) {
      x -= c.termCost(t, i);
    }
    return x;
  }

  @Override
  public void onRouted(ScoringContext ctx, int candidate) {
    String session = EstimatedTtftScorer.sessionKey(ctx.request());
    if (session != null) {
      if (parallel != null
          && parallel.sibling(session, ctx.nowNanos())
          && pinnedAtScoring(session, ctx.nowNanos()) != null) {
        return; // a parallel sibling: the session stays pinned where its first request went
      }
      pins.pin(session, ctx.backend(candidate).id());
    }
  }

  /**
   * The session's pin as this route's {@link #apply} read it (the same session key object and
   * decision time on this thread), else read now (a caller that did not score first).
   */
  private @Nullable String pinnedAtScoring(String session, long nowNanos) {
    PinRead read = lastRead.get();
    if (read.session == session && read.nowNanos == nowNanos) {
      read.session = null; // used: one route, one read
      return read.pinned;
    }
    return pins.backendOf(session);
  }

  @Override
  public synchronized void addBackend(int slot, Backend backend) {
    AtomicReferenceArray<String> a = ids;
    if (slot >= a.length()) {
      AtomicReferenceArray<String> bigger =
          new AtomicReferenceArray<>(Math.max(slot + 1, 2 * a.length()));
      for (int i = 0; i < a.length(); i++) {
        bigger.set(i, a.get(i));
      }
      a = bigger;
      ids = a;
    }
    a.set(slot, backend.id());
  }

  @Override
  public synchronized void removeBackend(int slot) {
    AtomicReferenceArray<String> a = ids;
    String id = slot < a.length() ? a.getAndSet(slot, null) : null;
    if (id != null && !registered(a, id)) {
      pins.forgetBackend(id);
    }
  }

  /**
   * Whether {@code id} holds another slot: a backend removed and added again under the same id
   * while the removal waited for its leases (the engine tells the parts of the removal after the
   * new slot was added) keeps the pins made for its new registration.
   */
  private static boolean registered(AtomicReferenceArray<String> a, String id) {
    for (int i = 0; i < a.length(); i++) {
      if (id.equals(a.get(i))) {
        return true;
      }
    }
    return false;
  }
}
