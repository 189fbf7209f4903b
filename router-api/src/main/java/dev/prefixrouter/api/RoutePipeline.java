package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.Admission;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.api.spi.HealthPolicy;
import dev.prefixrouter.api.spi.PredictionSink;
import dev.prefixrouter.api.spi.PrefixIndex;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.TenantLimiter;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One {@code route()}, stage by stage: {@link #validate} → {@link #admit} → {@link #eligible} →
 * {@link #hash} → {@link #match} → {@link #score} → {@link #sloAdmission} → {@link #record}. A
 * failover re-enters at {@link #place} with the backends that failed excluded. The tenant is
 * charged once per attempt and refunded on one path ({@link #placeCharged}) whatever ends the
 * attempt: a rejection or a throw.
 *
 * <p>Thread-safe. Per-thread buffers keep a decision free of per-candidate allocation.
 */
final class RoutePipeline {
  private static final Logger log = LoggerFactory.getLogger(RoutingEngine.class);

  /** The filters that build the candidate set, in order (package-private for a test). */
  static final EligibilityFilter[] BEFORE_SCORING = {
    EligibilityFilter.MODEL,
    EligibilityFilter.DRAINING,
    EligibilityFilter.HEALTH,
    EligibilityFilter.CAPABILITY,
    EligibilityFilter.LABEL,
    EligibilityFilter.EXCLUDED
  };

  /** Keys a thread keeps a buffer for: 4,096 (64k tokens at 16 per block, 32 KB). */
  static final int MAX_RETAINED_KEYS = 4096;

  private final BlockHasher hasher;
  private final PrefixIndex index;
  private final Scorer scorer;
  private final TenantLimiter limiter;
  private final HealthPolicy health;
  private final PredictionSink[] predictions;
  private final Listeners listeners;
  private final Membership membership;
  private final LongSupplier ticker;
  private final ModelRouter models;
  private final IsolationSeeds seeds;
  private final int maxFallbacks;
  private final int retryBudget;
  private final boolean scorerWantsEnded;
  private final LongAdder failovers = new LongAdder();
  private final EnumMap<RejectReason, LongAdder> rejected = new EnumMap<>(RejectReason.class);

  RoutePipeline(RoutingEngineBuilder b, Listeners listeners, Membership membership) {
    this.hasher = b.hasher;
    this.index = b.index;
    this.scorer = b.scorer;
    this.limiter = b.limiter;
    this.health = b.health;
    this.predictions = b.predictionSinks.toArray(new PredictionSink[0]);
    this.listeners = listeners;
    this.membership = membership;
    this.ticker = b.ticker;
    this.models = new ModelRouter(b.aliases, b.splits);
    this.seeds = new IsolationSeeds(hasher, b.prefixIsolation, b.loraAdapters);
    this.maxFallbacks = b.maxFallbacks;
    this.retryBudget = b.retryBudget;
    this.scorerWantsEnded =
        overrides(scorer, "onEnded", int.class)
            || overrides(scorer, "onEnded", int.class, Object.class);
    for (RejectReason r : RejectReason.values()) {
      rejected.put(r, new LongAdder());
    }
  }

  // ---------------------------------------------------------------- entry points

  /**
   * The tokens a request reserves against its tenant's bucket: the prompt plus the output it may
   * produce.
   */
  static long reservedTokens(RouteRequest request, int promptTokens) {
    return (long) promptTokens + request.maxOutputTokens();
  }

  RouteDecision route(RouteRequest request) {
    return route(request, null);
  }

  /**
   * {@link #route(RouteRequest)} with the ranking adjusted by {@code steering} after the scorer
   * (for this attempt only: a failover ranks by the scorer alone).
   */
  RouteDecision route(RouteRequest request, @Nullable Steering steering) {
    validate(request);
    long now = ticker.getAsLong();
    String model = models.resolve(request);
    int promptTokens = request.promptTokens(); // every prompt the backend prefills
    long reserved = reservedTokens(request, promptTokens);
    Rejected denied = admit(request, reserved, now);
    if (denied != null) {
      return reject(denied);
    }
    return placeCharged(request, model, promptTokens, List.of(), 0, now, steering);
  }

  /**
   * The rejection of attempt {@code attemptNo} (0: the first) of {@code request} when it would pass
   * the retry budget, else {@code null}.
   */
  @Nullable Rejected overBudget(RouteRequest request, int attemptNo) {
    if (attemptNo <= retryBudget) {
      return null;
    }
    return reject(
        new Rejected(
            request,
            RejectReason.RETRY_BUDGET_EXHAUSTED,
            Duration.ZERO,
            "retry budget of " + retryBudget + " failovers used up",
            null));
  }

  /**
   * A failover of {@code lease}, which failed before its first token (the caller checked): the same
   * request, resolved model and prompt size as the lease's decision, its backend excluded.
   */
  RouteDecision failover(DefaultLease lease) {
    Routed previous = lease.routed();
    RouteRequest request = previous.request();
    int attemptNo = previous.attempt() + 1;
    Rejected spent = overBudget(request, attemptNo);
    if (spent != null) {
      return spent;
    }
    long now = ticker.getAsLong();
    limiter.adjust(request.tenant(), lease.reservedTokens(), now); // re-charge
    List<BackendEntry> excluded = lease.excludedWithOwnBackend();
    RouteDecision d =
        placeCharged(
            request,
            previous.resolvedModel(),
            previous.promptTokens(),
            excluded,
            attemptNo,
            now,
            null);
    if (d instanceof Routed) {
      failovers.increment();
    }
    return d;
  }

  /**
   * Places {@code previous}'s request again as a failover (attempt {@code attemptNo}, counted in
   * {@link #failovers}), its backend not excluded: the attempt ended through no fault of its
   * backend (a pair whose decode leg failed before the first token ended its prefill leg as
   * cancelled, and refunded). Like {@link #failover}: the tokens are charged again and no request
   * permit is taken; {@code steering} as for a first attempt.
   */
  RouteDecision replace(Routed previous, int attemptNo, @Nullable Steering steering) {
    RouteRequest request = previous.request();
    long now = ticker.getAsLong();
    limiter.adjust(request.tenant(), reservedTokens(request, previous.promptTokens()), now);
    RouteDecision d =
        placeCharged(
            request,
            previous.resolvedModel(),
            previous.promptTokens(),
            List.of(),
            attemptNo,
            now,
            steering);
    if (d instanceof Routed) {
      failovers.increment();
    }
    return d;
  }

  // ---------------------------------------------------------------- stages

  /** Validate: the request itself is valid by construction; only null is refused here. */
  private static void validate(RouteRequest request) {
    Objects.requireNonNull(request, "request");
  }

  /** Admit: charges the tenant the prompt plus the reserved output; null when granted. */
  private @Nullable Rejected admit(RouteRequest request, long reserved, long now) {
    Admission admission = limiter.tryAcquire(request.tenant(), reserved, now);
    if (admission.granted()) {
      return null;
    }
    boolean tooLarge = admission.outcome() == Admission.Outcome.TOO_LARGE;
    return new Rejected(
        request,
        tooLarge ? RejectReason.REQUEST_TOO_LARGE : RejectReason.RATE_LIMITED,
        tooLarge ? Duration.ZERO : Duration.ofNanos(admission.retryAfterNanos()),
        admission.message(),
        null);
  }

  /**
   * Places an attempt whose tenant is charged; the one refund path: a rejection or a throw (a
   * scorer's, or a listener's {@link Error}) gives the reservation back before it propagates.
   */
  private RouteDecision placeCharged(
      RouteRequest request,
      String model,
      int promptTokens,
      List<BackendEntry> excluded,
      int attemptNo,
      long now,
      @Nullable Steering steering) {
    RouteDecision d;
    try {
      d = place(request, model, promptTokens, excluded, attemptNo, now, steering);
    } catch (Throwable t) {
      refund(request, promptTokens, attemptNo, now);
      throw t;
    }
    if (d instanceof Rejected r) {
      refund(request, promptTokens, attemptNo, now);
      return reject(r);
    }
    return d; // counted by the entry it was placed on (countPlacement)
  }

  /**
   * Gives an unused attempt's charge back: the first attempt's whole admission ({@link
   * TenantLimiter#release}: its tokens and any request permit), a failover's tokens only (it took
   * no permit: its re-charge is tokens only).
   */
  private void refund(RouteRequest request, int promptTokens, int attemptNo, long now) {
    long tokens = reservedTokens(request, promptTokens);
    if (attemptNo == 0) {
      limiter.release(request.tenant(), tokens, now);
    } else {
      limiter.adjust(request.tenant(), -tokens, now);
    }
  }

  /** Counts, logs and announces a rejection. */
  Rejected reject(Rejected r) {
    rejected.get(r.reason()).increment();
    if (log.isDebugEnabled()) {
      log.debug(
          "rejected request={} tenant={} reason={} filter={}: {}",
          echo(r.request().requestId()),
          Bounds.echo(r.request().tenant()),
          r.reason(),
          r.emptiedBy(),
          r.message());
    }
    listeners.notify(l -> l.onRejected(r));
    return r;
  }

  /**
   * {@link #decide} with this thread's buffers, then the debug log and the listeners. A listener's
   * {@link Error} abandons the new lease (its counts undone) before it propagates.
   */
  private RouteDecision place(
      RouteRequest request,
      String model,
      int promptTokens,
      List<BackendEntry> excluded,
      int attemptNo,
      long now,
      @Nullable Steering steering) {
    Scratch scratch = Scratch.SCRATCH.get();
    RouteDecision d;
    if (scratch.busy) { // a reentrant route (from a listener or scorer) on this thread
      d = decide(request, model, promptTokens, excluded, attemptNo, now, new Scratch(), steering);
    } else {
      scratch.busy = true;
      try {
        d = decide(request, model, promptTokens, excluded, attemptNo, now, scratch, steering);
      } finally {
        scratch.candidates.clear();
        scratch.decisionKeys = scratch.keys;
        scratch.busy = false;
      }
    }
    if (d instanceof Routed routed) {
      if (log.isDebugEnabled()) {
        log.debug(
            "routed request={} tenant={} model={} backend={} attempt={} matched={}/{} cost={} ({})",
            echo(routed.request().requestId()),
            Bounds.echo(routed.request().tenant()),
            Bounds.echo(routed.resolvedModel()),
            routed.backendId(),
            attemptNo,
            routed.matchedTokens(),
            routed.promptTokens(),
            routed.cost(),
            routed.reason());
      }
      if (listeners.any()) {
        try {
          listeners.notify(l -> l.onRouted(routed));
        } catch (Throwable t) { // an Error: the caller never gets the lease, so end it here
          ((DefaultLease) routed.lease()).abandon();
          throw t;
        }
      }
    }
    return d;
  }

  /**
   * Eligible → hash → match → score (→ steering) → SLO admission → record. Does not touch the
   * limiter.
   */
  private RouteDecision decide(
      RouteRequest request,
      String model,
      int promptTokens,
      List<BackendEntry> excluded,
      int attemptNo,
      long now,
      Scratch scratch,
      @Nullable Steering steering) {
    Candidates c =
        scratch.candidates.reset(
            request,
            model,
            promptTokens,
            hasher.tokensPerBlock(),
            now,
            membership.entries(),
            index);
    Rejected none = eligible(request, model, excluded, now, c);
    if (none != null) {
      return none;
    }
    int keyCount = hash(request, model, scratch);
    long[] keys = scratch.decisionKeys;
    match(keys, keyCount, c);
    int[] order = score(c);
    if (steering != null) {
      steering.steer(c);
    }
    Rejected shed = sloAdmission(request, c, order);
    if (shed != null) {
      return shed;
    }
    return record(request, model, promptTokens, excluded, attemptNo, now, c, order, keys, keyCount);
  }

  /**
   * Eligible: the backends every filter before scoring lets through, in table order; when none is
   * left, the rejection names the filter that removed the last ones (the furthest in filter order).
   */
  private @Nullable Rejected eligible(
      RouteRequest request, String model, List<BackendEntry> excluded, long now, Candidates c) {
    EligibilityFilter furthest = null;
    // a request that requires no capability or label and excludes nothing (a first attempt) can
    // only be filtered by model, draining and health: those three alone, in the same order
    boolean fleetOnly =
        request.requiredCapabilities().isEmpty()
            && request.requiredLabels().isEmpty()
            && excluded.isEmpty();
    BackendEntry[] all = c.table();
    for (int i = 0; i < all.length; i++) {
      BackendEntry e = all[i];
      EligibilityFilter failed =
          fleetOnly
              ? EligibilityFilter.firstFleetFilter(e, model, health, now)
              : firstRejecting(e, model, request, excluded, now);
      if (failed == null) {
        c.add(i);
      } else if (furthest == null || failed.compareTo(furthest) > 0) {
        furthest = failed;
      }
    }
    if (c.size > 0) {
      return null;
    }
    EligibilityFilter filter = furthest == null ? EligibilityFilter.MODEL : furthest;
    return new Rejected(
        request, RejectReason.NO_ELIGIBLE_BACKEND, Duration.ZERO, filter.message(model), filter);
  }

  /** The first filter of {@link #BEFORE_SCORING} that rejects {@code e}, or null. */
  private @Nullable EligibilityFilter firstRejecting(
      BackendEntry e, String model, RouteRequest request, List<BackendEntry> excluded, long now) {
    for (EligibilityFilter f : BEFORE_SCORING) {
      if (f.rejects(e, model, request, excluded, health, now)) {
        return f;
      }
    }
    return null;
  }

  /**
   * The isolation seeds of this pipeline's requests (the engine keys salted KV events with them).
   */
  ModelRouter models() {
    return models;
  }

  IsolationSeeds seeds() {
    return seeds;
  }

  /**
   * Hash: the prompt's block keys into {@link Scratch#decisionKeys}, seeded by the isolation
   * namespace; returns their number. Keys are hashed on every call (a failover hashes again).
   */
  private int hash(RouteRequest request, String model, Scratch scratch) {
    long seed = seeds.seed(request, model);
    long[] keys = scratch.keys;
    int keyCount = hasher.keys(request.prompt(), seed, keys);
    if (keyCount < 0) {
      throw new IllegalStateException("hasher " + hasher + " returned " + keyCount + " keys");
    }
    if (keyCount > keys.length) {
      keys = new long[Math.max(keyCount, 2 * keys.length)];
      int again = hasher.keys(request.prompt(), seed, keys);
      if (again != keyCount) {
        throw new IllegalStateException(
            "hasher " + hasher + " returned " + keyCount + " then " + again + " keys");
      }
      scratch.keep(keys);
    }
    scratch.decisionKeys = keys;
    return keyCount;
  }

  /** Match: the leading blocks each candidate is believed to hold. */
  private void match(long[] keys, int keyCount, Candidates c) {
    c.keys(keys, keyCount);
    index.match(keys, keyCount, c.slots, c.size, c.matched);
  }

  /** Score: the scorer's ranking, checked to be a permutation of the candidates. */
  private int[] score(Candidates c) {
    scorer.score(c);
    if (!c.orderIsPermutation()) {
      throw new IllegalStateException(
          "scorer " + scorer.name() + " left an order that is not a permutation of its candidates");
    }
    return c.order();
  }

  /**
   * SLO admission: a sheddable request with a TTFT budget is shed ({@link RejectReason#OVERLOADED},
   * retry after the excess of the lowest estimate) when the scorer's estimate exceeds the budget on
   * every candidate. When the first ranked is over it (a rank rule, such as session or prefix
   * affinity, may rank a holder first at a cost somewhat above the lowest) but another is within
   * it, the best ranked one within it moves to the front. Without a budget, or when the scorer
   * gives no estimate, it is admitted as ranked.
   */
  /** The reason of a decision SLO admission re-ranked. */
  static final String SLO_REASON = "slo: the best ranked candidate within the TTFT budget";

  private @Nullable Rejected sloAdmission(RouteRequest request, Candidates c, int[] order) {
    Duration budget = request.ttftBudget();
    if (budget == null || !request.sheddable()) {
      return null;
    }
    long budgetNanos = Bounds.saturatedNanos(budget);
    long bestNanos = Long.MAX_VALUE;
    if (c.size == 0) {
      return null;
    }
    for (int rank = 0; rank < c.size; rank++) {
      OptionalLong estimate = scorer.estimatedTtftNanos(c, order[rank]);
      if (estimate.isEmpty()) {
        return null; // the scorer does not estimate
      }
      long nanos = estimate.getAsLong();
      if (nanos <= budgetNanos) {
        if (rank > 0) {
          // a rule ranked first a candidate over the budget (a session's or a prefix's holder):
          // the best ranked one within it serves the request, the others keep their order
          int chosen = order[rank];
          System.arraycopy(order, 0, order, 1, rank);
          order[0] = chosen;
          c.reason = SLO_REASON; // not the rule's: it did not choose this one
        }
        return null;
      }
      bestNanos = Math.min(bestNanos, nanos);
    }
    return new Rejected(
        request,
        RejectReason.OVERLOADED,
        Duration.ofNanos(bestNanos - budgetNanos), // both >= 0: no overflow
        String.format(
            "best estimated TTFT %.1f ms exceeds the budget of %.1f ms",
            bestNanos / 1e6, budgetNanos / 1e6),
        null);
  }

  /**
   * Record: places the request on the best ranked candidate still present and admitted by its
   * breaker (a half-open one admits a bounded number of probes), counts it there, records its
   * predicted blocks and opens the lease.
   */
  private RouteDecision record(
      RouteRequest request,
      String model,
      int promptTokens,
      List<BackendEntry> excluded,
      int attemptNo,
      long now,
      Candidates c,
      int[] order,
      long[] keys,
      int keyCount) {
    EligibilityFilter emptiedBy = EligibilityFilter.REMOVED;
    for (int rank = 0; rank < c.size; rank++) {
      int cand = order[rank];
      BackendEntry e = c.entry(cand);
      if (!e.claim()) {
        continue; // removed while we scored
      }
      DefaultLease lease;
      Routed routed;
      try {
        // asked before a half-open probe is taken: a throwing scorer does not leak the probe
        int matched = c.matchedTokens(cand);
        int matchedTokens = Math.max(0, Math.min(matched, scorer.cachedTokens(c, cand)));
        // the index's match: what the placement statistics and cache feedback count (the scorer's
        // discount above is this request's expectation, for its pending prefill and calibration)
        int indexMatched = Math.max(0, Math.min(matched, promptTokens));
        if (!health.tryAcquire(e.slot, now)) {
          emptiedBy = EligibilityFilter.HEALTH; // half-open with no probe left
          continue;
        }
        int uncached = promptTokens - matchedTokens;
        long reserved = reservedTokens(request, promptTokens);
        e.addInFlight(1);
        long queuedBefore = e.addPendingPrefillTokens(uncached);
        e.addActiveTokens(reserved);
        int decodesBefore = e.runningDecodes();
        e.countPlacement(promptTokens, indexMatched, attemptNo == 0);
        @Nullable Object token;
        try {
          if (keyCount > 0) {
            index.recordRouted(keys, keyCount, e.slot, now);
          }
          token = scorer.onRoutedLease(c, cand);
        } catch (Throwable t) {
          unplace(e, uncached, reserved, now, t);
          throw t;
        }
        try {
          lease =
              new DefaultLease(
                  this, e, excluded, now, queuedBefore, decodesBefore, indexMatched, token);
          routed =
              lease.open(
                  new Routed(
                      request,
                      e.backend,
                      model,
                      fallbacks(c, order, rank),
                      promptTokens,
                      matchedTokens,
                      c.cost(cand),
                      c.reason != null ? c.reason : scorer.name(), // user code: may throw, or null
                      attemptNo,
                      lease));
        } catch (Throwable t) {
          // the scorer took a token, but no decision reaches the caller and no lease will end it
          unplace(e, uncached, reserved, now, t);
          endToken(e, token, t);
          throw t;
        }
      } finally {
        e.release();
      }
      // after the claim is released: a sink (user code) may remove the backend, which waits for
      // every claim, and a slow one must not hold a removal up
      if (keyCount > 0) {
        sharePrediction(lease, e.backend, keys, keyCount, c.matchedBlocks(cand));
      }
      return routed;
    }
    return new Rejected(
        request,
        RejectReason.NO_ELIGIBLE_BACKEND,
        Duration.ZERO,
        emptiedBy.message(model),
        emptiedBy);
  }

  /**
   * Undoes the counts of a placement made at {@code now} that no lease will end, or they would stay
   * forever, and tells the breaker it ended without an outcome, so that a half-open probe taken for
   * it goes back at once, as an abandoned lease's does (the caller holds the claim and refunds the
   * tenant; the placement statistics keep the attempt; an index that recorded the keys keeps them
   * as a prediction, which expires as unconfirmed predictions do). What the health policy throws is
   * added to {@code cause}, which the caller rethrows.
   */
  private void unplace(BackendEntry e, int uncached, long reserved, long now, Throwable cause) {
    e.addInFlight(-1);
    e.addPendingPrefillTokens(-uncached);
    e.addActiveTokens(-reserved);
    try {
      membership.noOutcome(e, now, now); // a RuntimeException is logged and ignored there
    } catch (Throwable t) {
      if (t != cause) {
        cause.addSuppressed(t);
      }
    }
  }

  /**
   * Hands back the token {@link Scorer#onRoutedLease} returned for a placement that failed before
   * its lease was handed out, as a lease's end would (claim held by the caller); what the scorer
   * throws is added to {@code cause}, which the caller rethrows.
   */
  private void endToken(BackendEntry e, @Nullable Object token, Throwable cause) {
    if (!scorerWantsEnded) {
      return;
    }
    try {
      scorer.onEnded(e.slot, token);
    } catch (Throwable t) {
      if (t != cause) {
        cause.addSuppressed(t);
      }
    }
  }

  /**
   * Hands the recorded keys to every {@link PredictionSink}, in the order added: a {@link
   * RuntimeException} is logged and ignored (the next sink still gets the keys), an {@link Error}
   * abandons the new lease before it propagates (the caller refunds).
   */
  private void sharePrediction(
      DefaultLease lease, Backend backend, long[] keys, int keyCount, int heldBlocks) {
    for (PredictionSink sink : predictions) {
      try {
        sink.onPredicted(backend, keys, keyCount, heldBlocks);
      } catch (RuntimeException ex) {
        listeners.ignored(sink, ex);
      } catch (Error err) {
        lease.abandon();
        throw err;
      }
    }
  }

  /** The ids of up to {@code maxFallbacks} candidates ranked after {@code rank}. */
  private List<String> fallbacks(Candidates c, int[] order, int rank) {
    int n = Math.min(maxFallbacks, c.size - rank - 1);
    if (n <= 0) {
      return List.of();
    }
    int first = rank + 1;
    if (n <= FallbackIds.INLINE) {
      return FallbackIds.of(
          id(c, order, first),
          n > 1 ? id(c, order, first + 1) : null,
          n > 2 ? id(c, order, first + 2) : null);
    }
    String[] ids = new String[n];
    for (int k = 0; k < n; k++) {
      ids[k] = id(c, order, first + k);
    }
    return FallbackIds.of(ids);
  }

  private static String id(Candidates c, int[] order, int rank) {
    return c.entry(order[rank]).backend.id();
  }

  private static @Nullable String echo(@Nullable String s) {
    return s == null ? null : Bounds.echo(s);
  }

  // ---------------------------------------------------------------- for leases and inspection

  LongSupplier ticker() {
    return ticker;
  }

  TenantLimiter limiter() {
    return limiter;
  }

  PrefixIndex index() {
    return index;
  }

  /** Tokens per block of the hasher (at least 1). */
  int tokensPerBlock() {
    return Math.max(1, hasher.tokensPerBlock());
  }

  Scorer scorer() {
    return scorer;
  }

  /**
   * Whether the scorer overrides either {@link Scorer#onEnded} (else a lease's end skips the call
   * and the backend claim around it).
   */
  boolean scorerWantsEnded() {
    return scorerWantsEnded;
  }

  /**
   * Whether {@code o}'s class overrides the {@link Scorer} default {@code method} (or cannot tell).
   */
  private static boolean overrides(Object o, String method, Class<?>... params) {
    try {
      return o.getClass().getMethod(method, params).getDeclaringClass() != Scorer.class;
    } catch (NoSuchMethodException | SecurityException e) {
      return true;
    }
  }

  HealthPolicy health() {
    return health;
  }

  Listeners listeners() {
    return listeners;
  }

  Membership membership() {
    return membership;
  }

  long failovers() {
    return failovers.sum();
  }

  Map<RejectReason, Long> rejectedCounts() {
    Map<RejectReason, Long> out = new EnumMap<>(RejectReason.class);
    rejected.forEach((k, v) -> out.put(k, v.sum()));
    return out;
  }

  /**
   * Per-thread buffers of {@link #decide}: the prompt's keys and the candidates, reused so that a
   * decision allocates neither. A reentrant route finds them busy and uses fresh ones. Bounded: a
   * key buffer above {@link #MAX_RETAINED_KEYS} is not kept, and the candidates hold at most the
   * fleet's size ({@code maxBackends}).
   */
  private static final class Scratch {
    static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    long[] keys = new long[256];

    /** The keys of the decision in progress: {@link #keys}, or a larger buffer not kept. */
    long[] decisionKeys = keys;

    final Candidates candidates = new Candidates(16);
    boolean busy;

    /** Keeps a grown key buffer for the next decision, if it is not too large. */
    void keep(long[] grown) {
      if (grown.length <= MAX_RETAINED_KEYS) {
        keys = grown;
      }
    }
  }
}
