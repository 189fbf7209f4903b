package dev.prefixrouter.api;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The lease of one prefill/decode pair: a state machine {@code OPEN → DECODING → COMPLETED /
 * FAILED_LATE}, or {@code OPEN → FAILED_PREFILL / FAILED_DECODE_EARLY}, moved by CAS so that each
 * transition's effects happen exactly once. The prefill leg is the engine's own {@link Lease}
 * (ended at the first token, or failed); this class owns the decode backend's counts (in flight and
 * reserved tokens from the route, a running decode from the first token) and the tenant's true-up
 * after the first token. Thread-safe; O(1) per call.
 */
final class DefaultPairLease implements PairLease {
  private static final int OPEN = 0;
  private static final int DECODING = 1;
  private static final int COMPLETED = 2;
  private static final int FAILED_PREFILL = 3;
  private static final int FAILED_DECODE_EARLY = 4;
  private static final int FAILED_LATE = 5;

  private static final VarHandle STATE;
  private static final VarHandle FAILOVER_TAKEN;

  static {
    try {
      MethodHandles.Lookup l = MethodHandles.lookup();
      STATE = l.findVarHandle(DefaultPairLease.class, "state", int.class);
      FAILOVER_TAKEN = l.findVarHandle(DefaultPairLease.class, "failoverTaken", boolean.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final DisaggregatedRouter router;
  private final RouteRequest request;
  private final Routed prefill;
  private final BackendEntry decode;
  private final long reserved;
  private final List<BackendEntry> decodeExcluded;
  private final int attempt;
  private final boolean local; // served whole on its prefill backend: its lease feeds the breaker
  private final long placedNanos; // when the decode leg was placed (its breaker's probe or not)
  // decode placed on the prefill leg's own backend: its in-flight and active tokens are counted
  // from the decode phase on, not on top of the prefill leg's for the same request
  private final boolean shared;
  private volatile int state; // OPEN (0): an initializer would be a volatile store, a fence
  private volatile boolean failoverTaken;

  DefaultPairLease(
      DisaggregatedRouter router,
      RouteRequest request,
      Routed prefill,
      BackendEntry decode,
      long reserved,
      List<BackendEntry> decodeExcluded,
      int attempt,
      boolean local,
      long placedNanos,
      boolean shared) {
    this.local = local;
    this.placedNanos = placedNanos;
    this.shared = shared;
    this.router = router;
    this.request = request;
    this.prefill = prefill;
    this.decode = decode;
    this.reserved = reserved;
    this.decodeExcluded = decodeExcluded;
    this.attempt = attempt;
  }

  /** Returns {@code routed}, the decision this lease belongs to. */
  PairRouted open(PairRouted routed) {
    return routed;
  }

  @Override
  public void firstToken() {
    startDecode(true);
  }

  /**
   * Ends the prefill leg and starts the decode phase, once; {@code observed}: the first token was
   * seen (its time feeds TTFT calibration), not inferred from a completion.
   */
  private void startDecode(boolean observed) {
    // counted before the state says DECODING, so an end that sees DECODING finds it counted
    decode.addRunningDecodes(1);
    if (shared) {
      decode.addInFlight(1);
      decode.addActiveTokens(reserved);
    }
    if (!STATE.compareAndSet(this, OPEN, DECODING)) {
      decode.addRunningDecodes(-1);
      if (shared) {
        decode.addInFlight(-1);
        decode.addActiveTokens(-reserved);
      }
      return;
    }
    Lease p = prefill.lease();
    try {
      if (observed) {
        p.firstToken();
      }
    } finally {
      // the tenant keeps its whole reservation until the decode phase ends: the prefill leg
      // settles at exactly what it reserved (prompt + max output), the true-up happens at the end;
      // ended even if the first token's callbacks threw (the host cannot end this leg itself)
      p.complete(Usage.of(prefill.promptTokens(), request.maxOutputTokens()));
    }
  }

  @Override
  public void complete(Usage usage) {
    Objects.requireNonNull(usage, "usage");
    if (state == OPEN) {
      startDecode(false); // a host without streaming reports the end only: no TTFT observed
    }
    if (!STATE.compareAndSet(this, DECODING, COMPLETED)) {
      return;
    }
    long now = endDecode(true, null);
    adjustTenant(usage.totalTokens() - reserved, now);
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
    while (true) {
      int s = state;
      if (s == OPEN) {
        if (STATE.compareAndSet(this, OPEN, FAILED_PREFILL)) {
          // blamed; the tenant refunded (charged what was used, if the client left) by the engine
          try {
            if (used == null) {
              prefill.lease().fail(failure);
            } else {
              prefill.lease().fail(failure, used);
            }
          } finally {
            endDecode(false, null); // the decode leg's counts go even if a callback threw
          }
          return;
        }
      } else if (s == DECODING) {
        failLate(failure, used);
        return;
      } else {
        return;
      }
    }
  }

  @Override
  public void failDecode(Failure failure) {
    Objects.requireNonNull(failure, "failure");
    while (true) {
      int s = state;
      if (s == OPEN) {
        if (STATE.compareAndSet(this, OPEN, FAILED_DECODE_EARLY)) {
          try {
            prefill
                .lease()
                .fail(
                    new Failure(
                        Failure.Kind.CANCELLED, "decode backend failed: " + failure.detail()));
          } finally {
            endDecode(false, failure.countsAgainstBackend() ? failure : null);
          }
          return;
        }
      } else if (s == DECODING) {
        failLate(failure, null);
        return;
      } else {
        return;
      }
    }
  }

  /**
   * After the first token: the decode backend blamed, the prompt charged (or {@code used}, what the
   * caller saw produced), the rest of the reservation refunded.
   */
  private void failLate(Failure failure, @Nullable Usage used) {
    if (!STATE.compareAndSet(this, DECODING, FAILED_LATE)) {
      return;
    }
    // a failure that says nothing about the backend (the client left) feeds its breaker nothing,
    // as a single lease's does: not a success that would close a half-open breaker
    boolean blamed = failure.countsAgainstBackend();
    long now = endDecode(blamed, blamed ? failure : null);
    adjustTenant((used == null ? prefill.promptTokens() : used.totalTokens()) - reserved, now);
  }

  /**
   * Undoes the decode backend's counts once; {@code feedHealth}: a success ({@code failure ==
   * null}) or the failure goes to its breaker (skipped once the backend is removed).
   */
  private long endDecode(boolean feedHealth, @Nullable Failure failure) {
    int s = state;
    boolean decoded = s == COMPLETED || s == FAILED_LATE;
    if (decoded) {
      decode.addRunningDecodes(-1);
    }
    if (decoded || !shared) { // a shared pair that ended before its decode phase counted nothing
      decode.addInFlight(-1);
      decode.addActiveTokens(-reserved);
    }
    RoutePipeline pipeline = router.pipeline();
    long now = pipeline.ticker().getAsLong();
    // a pair served whole on its prefill backend: the prefill leg's lease fed its success
    boolean success = feedHealth && !local;
    if ((success || failure != null) && decode.claim()) {
      Membership.HealthChange change;
      try {
        change = pipeline.membership().healthFeedback(decode, now, placedNanos, failure);
      } finally {
        decode.release();
      }
      pipeline.membership().announce(change);
    } else if (!local && decode.claim()) {
      try {
        // no outcome for the decode backend (the pair failed at prefill, or the client left): a
        // half-open breaker's probe goes back
        pipeline.membership().noOutcome(decode, now, placedNanos);
      } finally {
        decode.release();
      }
    }
    return now;
  }

  private void adjustTenant(long delta, long now) {
    if (delta != 0) {
      router.pipeline().limiter().adjust(request.tenant(), delta, now);
    }
  }

  @Override
  public PairDecision failover() {
    int s = state;
    if ((s != FAILED_PREFILL && s != FAILED_DECODE_EARLY)
        || !FAILOVER_TAKEN.compareAndSet(this, false, true)) {
      return router
          .pipeline()
          .reject(
              new Rejected(
                  request,
                  RejectReason.NOT_RETRYABLE,
                  Duration.ZERO,
                  "failover needs a pair that failed before its first token and was not failed"
                      + " over yet (state "
                      + s
                      + ")",
                  null));
    }
    // a new pair is a failover in either case: the engine's retry budget bounds the pair's
    // attempts (the prefill lease's own count starts again with each new pair)
    Rejected spent = router.pipeline().overBudget(request, attempt + 1);
    if (spent != null) {
      return spent;
    }
    if (s == FAILED_PREFILL) {
      RouteDecision next = prefill.lease().failover();
      if (next instanceof Rejected x) {
        return x;
      }
      return router.pair(request, (Routed) next, decodeExcluded, attempt + 1);
    }
    List<BackendEntry> excluded = new ArrayList<>(decodeExcluded.size() + 1);
    excluded.addAll(decodeExcluded);
    excluded.add(decode);
    // the prefill backend did its part: the prefill leg is placed again as a failover of the same
    // request (no new admission, no request permit), the failed decode backend excluded below
    RouteDecision next = router.pipeline().replace(prefill, attempt + 1, router.steering(request));
    if (next instanceof Rejected x) {
      return x;
    }
    return router.pair(request, (Routed) next, List.copyOf(excluded), attempt + 1);
  }

  @Override
  public boolean isEnded() {
    return state >= COMPLETED;
  }

  @Override
  public String toString() {
    return "PairLease[prefill="
        + prefill.backendId()
        + ", decode="
        + decode.backend.id()
        + ", state="
        + state
        + "]";
  }
}
