package dev.prefixrouter.api;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The lease of one placement: a state machine {@code OPEN → STREAMING → COMPLETED / FAILED_*} (or
 * {@code OPEN → FAILED_BEFORE_FIRST_TOKEN / CANCELLED_BEFORE_FIRST_TOKEN}) moved by CAS, so each
 * transition's effects happen exactly once. It owns the backend's counts for the request (in
 * flight, pending prefill, running decodes, active tokens) and the tenant's true-up when it ends.
 * Thread-safe; O(1) per call.
 */
final class DefaultLease implements Lease {

  private static final int OPEN = 0;
  private static final int STREAMING = 1;
  private static final int COMPLETED = 2;
  private static final int FAILED_BEFORE_FIRST_TOKEN = 3;
  private static final int FAILED_AFTER_FIRST_TOKEN = 4;
  // failed as CANCELLED before its first token: the client left, so no failover
  private static final int CANCELLED_BEFORE_FIRST_TOKEN = 5;

  private static final VarHandle STATE;
  private static final VarHandle FAILOVER_TAKEN;

  static {
    try {
      MethodHandles.Lookup l = MethodHandles.lookup();
      STATE = l.findVarHandle(DefaultLease.class, "state", int.class);
      FAILOVER_TAKEN = l.findVarHandle(DefaultLease.class, "failoverTaken", boolean.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  // what the decision itself says (request, prompt and matched tokens, cost, attempt number) is
  // read from its Routed: a lease is allocated per route, and copies would only make it larger
  private final RoutePipeline pipeline;
  private final BackendEntry entry;
  private final List<BackendEntry> excluded;
  private final long startNanos;
  private final long queuedBefore;
  private final int decodesBefore;
  // the index's match at routing, before the scorer's cachedTokens discount: what feedback checks
  private final int indexMatchedTokens;
  private final @Nullable Object scorerToken; // the scorer's onRoutedLease value, for onEnded
  // plain fields behind VarHandles: two atomics would double the lease. No initializer: OPEN is 0,
  // the default, and an initializer would be a volatile store, a full fence on every route
  private volatile int state;
  private volatile boolean failoverTaken;
  private @Nullable Routed routed;

  DefaultLease(
      RoutePipeline pipeline,
      BackendEntry entry,
      List<BackendEntry> excluded,
      long startNanos,
      long queuedBefore,
      int decodesBefore,
      int indexMatchedTokens,
      @Nullable Object scorerToken) {
    this.pipeline = pipeline;
    this.entry = entry;
    this.excluded = excluded;
    this.startNanos = startNanos;
    this.queuedBefore = queuedBefore;
    this.decodesBefore = decodesBefore;
    this.indexMatchedTokens = indexMatchedTokens;
    this.scorerToken = scorerToken;
  }

  /** Binds the decision this lease belongs to (before the lease is used); returns it. */
  Routed open(Routed routed) {
    this.routed = routed;
    return routed;
  }

  /** The index's match at routing, before the scorer's cachedTokens discount: always known. */
  @Override
  public int indexMatchedTokensOr(int otherwise) {
    return indexMatchedTokens;
  }

  /** The tokens the decision reserved against its tenant's bucket. */
  long reservedTokens() {
    Routed r = routed();
    return RoutePipeline.reservedTokens(r.request(), r.promptTokens());
  }

  /** Uncached prompt tokens of the decision: its pending prefill on the backend until then. */
  private int uncachedTokens() {
    Routed r = routed();
    return r.promptTokens() - r.matchedTokens();
  }

  /** The backends a failover of this lease must avoid: the ones before and this one. */
  List<BackendEntry> excludedWithOwnBackend() {
    List<BackendEntry> next = new ArrayList<>(excluded.size() + 1);
    next.addAll(excluded);
    next.add(entry);
    return next;
  }

  /** The decision (bound by {@link #open} before the lease is handed out). */
  Routed routed() {
    return Objects.requireNonNull(routed, "routed");
  }

  @Override
  public void firstToken() {
    // counted before the state says STREAMING: an end() that sees STREAMING then finds it counted,
    // so the count never goes below zero; undone if the lease ended first
    entry.addRunningDecodes(1);
    if (!STATE.compareAndSet(this, OPEN, STREAMING)) {
      entry.addRunningDecodes(-1);
      return;
    }
    long now = pipeline.ticker().getAsLong();
    Routed r = routed();
    entry.addPendingPrefillTokens(-uncachedTokens());
    long ttft = Math.max(0, now - startNanos);
    if (entry.claim()) {
      Membership.HealthChange change = null;
      try {
        change = healthFeedback(now, null);
        pipeline
            .scorer()
            .onFirstToken(
                entry.slot,
                ttft,
                r.promptTokens(),
                r.matchedTokens(),
                queuedBefore,
                decodesBefore,
                r.cost());
      } catch (RuntimeException ex) {
        // the lease is STREAMING whatever the scorer does: a throw here must not stop the caller
        // from ending it (a pair's prefill leg is completed right after its first token)
        pipeline.listeners().ignored(pipeline.scorer(), ex);
      } finally {
        entry.release();
        pipeline.membership().announce(change); // made even if the scorer threw
      }
    }
    Listeners listeners = pipeline.listeners();
    if (listeners.any()) {
      listeners.notify(l -> l.onFirstToken(r, ttft));
    }
  }

  @Override
  public void complete(Usage usage) {
    Objects.requireNonNull(usage, "usage");
    int s = end(COMPLETED, COMPLETED);
    if (s < 0) {
      return;
    }
    Routed r = routed();
    // a request with other prompts (a completions list) gets one cached count for all of them:
    // which prompt's blocks it counts is unknown, so it says nothing of the routed prompt's match
    if (usage.cachedReported() && r.request().additionalPromptTokens() == 0) {
      cacheFeedback(r, usage);
    }
    long delta = usage.totalTokens() - reservedTokens();
    Listeners listeners = pipeline.listeners();
    if (delta == 0 && s != OPEN && !listeners.any()) {
      return; // nothing to true up, no health feedback, no one told: the clock is not read
    }
    long now = pipeline.ticker().getAsLong();
    settle(delta, now);
    if (s == OPEN) {
      feedHealth(now, null);
    }
    long duration = Math.max(0, now - startNanos);
    if (listeners.any()) {
      listeners.notify(l -> l.onCompleted(r, usage, duration));
    }
  }

  /**
   * Closes the loop: counts the engine's cached tokens against the index's match at routing (not
   * the scorer's discounted {@link Routed#matchedTokens}: a prefix another request was still
   * prefilling there is the index's belief, and the engine may well serve it by then) and, when
   * they differ by a block or more, tells the index (claim held; a throwing index is logged and
   * ignored).
   */
  private void cacheFeedback(Routed r, Usage usage) {
    int prompt =
        usage.promptTokens() > 0
            ? Math.min(r.promptTokens(), usage.promptTokens())
            : r.promptTokens();
    int[] blocks = new int[3];
    boolean tell =
        entry.cacheFeedback.record(
            prompt,
            indexMatchedTokens,
            usage.cachedTokens(),
            queuedBefore,
            pipeline.tokensPerBlock(),
            blocks);
    if (tell && entry.claim()) {
      try {
        pipeline
            .index()
            .onEngineCached(
                entry.slot, blocks[0], blocks[1], blocks[2], pipeline.ticker().getAsLong());
      } catch (RuntimeException ex) {
        pipeline.listeners().ignored(pipeline.index(), ex);
      } finally {
        entry.release();
      }
    }
  }

  @Override
  public void fail(Failure failure) {
    Objects.requireNonNull(failure, "failure");
    failWith(failure, null);
  }

  @Override
  public void fail(Failure failure, Usage used) {
    Objects.requireNonNull(failure, "failure");
    Objects.requireNonNull(used, "used");
    failWith(failure, used);
  }

  private void failWith(Failure failure, @Nullable Usage used) {
    failWith(failure, used, false);
  }

  /**
   * Ends a lease the request never used, before its first token, as a {@code CANCELLED} failure:
   * the engine's own withdrawal of an admitted attempt (a pair whose decode leg found no backend).
   * The whole admission goes back: the tokens and, for a first attempt, what else the limiter took
   * ({@link dev.prefixrouter.api.spi.TenantLimiter#release}: a request permit), as for a request
   * the engine rejects after admission. No effect once the lease has ended or streamed.
   */
  void withdraw(String detail) {
    failWith(new Failure(Failure.Kind.CANCELLED, detail), null, true);
  }

  private void failWith(Failure failure, @Nullable Usage used, boolean withdrawn) {
    // a lease the client cancelled (or the engine withdrew) ends apart: it is never failed over
    int beforeFirst =
        failure.kind() == Failure.Kind.CANCELLED
            ? CANCELLED_BEFORE_FIRST_TOKEN
            : FAILED_BEFORE_FIRST_TOKEN;
    int s = withdrawn ? end(beforeFirst, -1) : end(beforeFirst, FAILED_AFTER_FIRST_TOKEN);
    if (s < 0) {
      return;
    }
    long now = pipeline.ticker().getAsLong();
    if (withdrawn) {
      feedNoOutcome(now);
    }
    if (withdrawn && routed().attempt() == 0) {
      pipeline.limiter().release(routed().request().tenant(), reservedTokens(), now);
      Routed r = routed();
      Listeners listeners = pipeline.listeners();
      if (listeners.any()) {
        listeners.notify(l -> l.onFailed(r, failure, true));
      }
      return;
    }
    // Before the first token the backend did no useful work: refund the whole reservation, unless
    // the client left (CANCELLED) and the caller says what was used: its prefill may have run, and
    // a client must not be able to make requests free by leaving just before the first token.
    // After it, the prompt was processed: charge it and the output the caller saw produced (none
    // known: refund the output reservation).
    long charged =
        s == OPEN
            ? used != null && failure.kind() == Failure.Kind.CANCELLED ? used.totalTokens() : 0
            : used == null ? routed().promptTokens() : used.totalTokens();
    settle(charged - reservedTokens(), now);
    if (failure.countsAgainstBackend()) {
      feedHealth(now, failure);
    } else if (s == OPEN && !withdrawn) {
      feedNoOutcome(now); // the client left or erred before the first token: no word on the backend
    }
    Routed r = routed();
    boolean before = s == OPEN;
    Listeners listeners = pipeline.listeners();
    if (listeners.any()) {
      listeners.notify(l -> l.onFailed(r, failure, before));
    }
  }

  /**
   * Ends a lease whose {@link Routed} never reached the caller (a listener threw an {@link Error}
   * while it was announced): its counts are undone as for a failure before the first token, without
   * health feedback; the caller refunds the tenant.
   */
  void abandon() {
    if (end(FAILED_BEFORE_FIRST_TOKEN, FAILED_AFTER_FIRST_TOKEN) == OPEN) {
      feedNoOutcome(pipeline.ticker().getAsLong());
    }
  }

  /** Tells the breaker this lease ended with no outcome (a half-open probe goes back); claimed. */
  private void feedNoOutcome(long now) {
    if (entry.claim()) {
      try {
        pipeline.membership().noOutcome(entry, now, startNanos);
      } finally {
        entry.release();
      }
    }
  }

  /** CAS to an end state and undo this lease's counts; the previous state, or -1 if ended. */
  private int end(int ifOpen, int ifStreaming) {
    while (true) {
      int s = state;
      if (s >= COMPLETED || (s != OPEN && ifStreaming < 0)) {
        return -1; // ended already, or streaming and the caller ends open leases only
      }
      if (STATE.compareAndSet(this, s, s == OPEN ? ifOpen : ifStreaming)) {
        if (s == OPEN) {
          entry.addPendingPrefillTokens(-uncachedTokens());
        } else {
          entry.addRunningDecodes(-1);
        }
        entry.addInFlight(-1);
        entry.addActiveTokens(-reservedTokens());
        if (pipeline.scorerWantsEnded() && entry.claim()) {
          try {
            pipeline.scorer().onEnded(entry.slot, scorerToken);
          } catch (RuntimeException ex) {
            // the lease has ended: its tenant's true-up must still run
            pipeline.listeners().ignored(pipeline.scorer(), ex);
          } finally {
            entry.release();
          }
        }
        return s;
      }
    }
  }

  @Override
  public RouteDecision failover() {
    int s = state;
    if (s != FAILED_BEFORE_FIRST_TOKEN || !FAILOVER_TAKEN.compareAndSet(this, false, true)) {
      return pipeline.reject(
          new Rejected(
              routed().request(),
              RejectReason.NOT_RETRYABLE,
              Duration.ZERO,
              s == CANCELLED_BEFORE_FIRST_TOKEN
                  ? "the lease was cancelled (the client left): no failover"
                  : "failover needs a lease that failed before its first token and was not failed"
                      + " over yet (state "
                      + s
                      + ")",
              null));
    }
    return pipeline.failover(this);
  }

  @Override
  public boolean isEnded() {
    return state >= COMPLETED;
  }

  /**
   * The tenant's true-up as the lease ends: {@code delta} tokens used beyond its reservation
   * (negative: a refund; nothing to write when the reservation was exact).
   */
  private void settle(long delta, long now) {
    if (delta != 0) {
      pipeline.limiter().adjust(routed().request().tenant(), delta, now);
    }
  }

  /** {@link #healthFeedback} under a claim; skipped once the backend is removed. */
  private void feedHealth(long now, @Nullable Failure failure) {
    if (entry.claim()) {
      Membership.HealthChange change;
      try {
        change = healthFeedback(now, failure);
      } finally {
        entry.release();
      }
      pipeline.membership().announce(change);
    }
  }

  /**
   * Feeds the breaker (claim held by the caller); returns the state change for the caller to
   * announce after it releases the claim.
   */
  private Membership.@Nullable HealthChange healthFeedback(long now, @Nullable Failure failure) {
    return pipeline.membership().healthFeedback(entry, now, startNanos, failure);
  }

  @Override
  public String toString() {
    return "Lease[backend=" + entry.backend.id() + ", state=" + state + "]";
  }
}
