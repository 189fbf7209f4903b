package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.Admission;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.api.spi.FirstTokenObservation;
import dev.prefixrouter.api.spi.HealthPolicy;
import dev.prefixrouter.api.spi.IndexSignal;
import dev.prefixrouter.api.spi.PrefixIndex;
import dev.prefixrouter.api.spi.RoutingListener;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.TenantLimiter;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pipeline. Membership is a copy-on-write table published through a volatile field: {@code
 * route} reads it without locking; add/remove/drain take {@link #lock} and publish a new table.
 * Per-backend counters are atomics on {@link BackendEntry}.
 */
final class DefaultRoutingEngine implements RoutingEngine {
  private static final Logger log = LoggerFactory.getLogger(RoutingEngine.class);
  private static final EligibilityFilter[] FILTERS = EligibilityFilter.values();
  private static final IndexSignal[] INDEX_SIGNALS = IndexSignal.values();
  private static final int PASS = Integer.MAX_VALUE;
  private static final long WARN_INTERVAL_NANOS = 10_000_000_000L;

  /** Immutable membership table. */
  private record Table(BackendEntry[] entries, Map<String, BackendEntry> byId) {}

  private final BlockHasher hasher;
  private final PrefixIndex index;
  private final Scorer scorer;
  private final TenantLimiter limiter;
  private final HealthPolicy health;
  private final RoutingListener[] listeners;
  private final LongSupplier ticker;
  private final int maxBackends;
  private final int maxFallbacks;
  private final int retryBudget;
  private final int snapshotTenants;
  private final boolean prefixIsolation;
  private final ModelRouter models;
  private final Registry registry = new Registry();

  private final Object lock = new Object();
  private final BitSet usedSlots = new BitSet();
  private volatile Table table = new Table(new BackendEntry[0], Map.of());

  /**
   * Requests placed on backends removed since, and the entries being removed (out of the table,
   * waiting for their claims): with the table's entries, each entry is counted exactly once at any
   * instant the lock is held, so the routed total never goes down. Guarded by {@link #lock}.
   */
  private long removedRequests;

  private final List<BackendEntry> removing = new ArrayList<>();
  private final LongAdder failoverCount = new LongAdder();
  private final EnumMap<RejectReason, LongAdder> rejectedCount = new EnumMap<>(RejectReason.class);
  private final AtomicLong lastListenerWarning = new AtomicLong(Long.MIN_VALUE);

  DefaultRoutingEngine(RoutingEngineBuilder b) {
    this.hasher = b.hasher;
    this.index = b.index;
    this.scorer = b.scorer;
    this.limiter = b.limiter;
    this.health = b.health;
    this.listeners = b.listeners.toArray(new RoutingListener[0]);
    this.ticker = b.ticker;
    this.maxBackends = b.maxBackends;
    this.maxFallbacks = b.maxFallbacks;
    this.retryBudget = b.retryBudget;
    this.snapshotTenants = b.snapshotTenants;
    this.prefixIsolation = b.prefixIsolation;
    this.models = new ModelRouter(b.aliases, b.splits);
    for (RejectReason r : RejectReason.values()) {
      rejectedCount.put(r, new LongAdder());
    }
    for (Backend backend : b.backends) {
      registry.add(backend);
    }
  }

  // ---------------------------------------------------------------- route

  /** What a request carries between its first route and its failovers. */
  private static final class Attempt {
    final RouteRequest request;
    final String model;
    final int promptTokens;
    final long reservedTokens;

    Attempt(RouteRequest request, String model, int promptTokens, long reservedTokens) {
      this.request = request;
      this.model = model;
      this.promptTokens = promptTokens;
      this.reservedTokens = reservedTokens;
    }
  }

  @Override
  public RouteDecision route(RouteRequest request) {
    Objects.requireNonNull(request, "request");
    long now = ticker.getAsLong();
    String model = models.resolve(request);
    int promptTokens = request.prompt().estimatedTokens();
    long reserved = (long) promptTokens + request.maxOutputTokens();

    Admission admission = limiter.tryAcquire(request.tenant(), reserved, now);
    if (!admission.granted()) {
      boolean tooLarge = admission.outcome() == Admission.Outcome.TOO_LARGE;
      return reject(
          new Rejected(
              request,
              tooLarge ? RejectReason.REQUEST_TOO_LARGE : RejectReason.RATE_LIMITED,
              tooLarge ? Duration.ZERO : Duration.ofNanos(admission.retryAfterNanos()),
              admission.message(),
              null));
    }
    Attempt attempt = new Attempt(request, model, promptTokens, reserved);
    RouteDecision d;
    try {
      d = place(attempt, List.of(), 0, now);
    } catch (RuntimeException e) {
      limiter.adjust(request.tenant(), -reserved, now);
      throw e;
    }
    if (d instanceof Rejected r) {
      limiter.adjust(request.tenant(), -reserved, now);
      return reject(r);
    }
    return d; // counted by the entry it was placed on (countPlacement)
  }

  private Rejected reject(Rejected r) {
    rejectedCount.get(r.reason()).increment();
    if (log.isDebugEnabled()) {
      log.debug(
          "rejected request={} tenant={} reason={} filter={}: {}",
          r.request().requestId(),
          r.request().tenant(),
          r.reason(),
          r.emptiedBy(),
          r.message());
    }
    notifyListeners(l -> l.onRejected(r));
    return r;
  }

  /**
   * Per-thread buffers of {@link #decide}: the prompt's keys and the candidates, reused so that a
   * decision allocates neither. A reentrant route (a listener or scorer routing on the same thread)
   * finds them busy and uses fresh ones. Bounded: a key buffer above {@link #MAX_RETAINED_KEYS} is
   * not kept, and the candidates hold at most the fleet's size ({@code maxBackends}).
   */
  private static final class Scratch {
    long[] keys = new long[256];
    final Candidates candidates = new Candidates(16);
    boolean busy;
  }

  /** Keys a thread keeps a buffer for: 4,096 (64k tokens at 16 per block, 32 KB). */
  static final int MAX_RETAINED_KEYS = 4096;

  private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

  /** {@link #decide}, then the debug log and the listeners (outside the per-thread buffers). */
  private RouteDecision place(
      Attempt attempt, List<BackendEntry> excluded, int attemptNo, long now) {
    Scratch scratch = SCRATCH.get();
    RouteDecision d;
    if (scratch.busy) {
      d = decide(attempt, excluded, attemptNo, now, new Scratch());
    } else {
      scratch.busy = true;
      try {
        d = decide(attempt, excluded, attemptNo, now, scratch);
      } finally {
        scratch.candidates.clear();
        scratch.busy = false;
      }
    }
    if (d instanceof Routed routed) {
      if (log.isDebugEnabled()) {
        log.debug(
            "routed request={} tenant={} model={} backend={} attempt={} matched={}/{} cost={} ({})",
            routed.request().requestId(),
            routed.request().tenant(),
            routed.resolvedModel(),
            routed.backendId(),
            attemptNo,
            routed.matchedTokens(),
            routed.promptTokens(),
            routed.cost(),
            routed.reason());
      }
      if (listeners.length > 0) {
        notifyListeners(l -> l.onRouted(routed));
      }
    }
    return d;
  }

  /**
   * Eligible set → hash → match → score → SLO admission → record. Does not touch the limiter. Keys
   * are hashed on every call (a failover hashes again rather than keep them per request).
   */
  private RouteDecision decide(
      Attempt attempt, List<BackendEntry> excluded, int attemptNo, long now, Scratch scratch) {
    RouteRequest request = attempt.request;
    BackendEntry[] all = table.entries;
    Candidates c =
        scratch.candidates.reset(
            request,
            attempt.model,
            attempt.promptTokens,
            hasher.tokensPerBlock(),
            now,
            all.length,
            index);
    int furthest = -1;
    for (BackendEntry e : all) {
      int failed = firstFailingFilter(e, attempt.model, request, excluded, now);
      if (failed == PASS) {
        c.add(e);
      } else {
        furthest = Math.max(furthest, failed);
      }
    }
    if (c.size == 0) {
      EligibilityFilter filter = furthest < 0 ? EligibilityFilter.MODEL : FILTERS[furthest];
      return new Rejected(
          request,
          RejectReason.NO_ELIGIBLE_BACKEND,
          Duration.ZERO,
          noEligibleMessage(filter, attempt.model),
          filter);
    }

    long seed = seed(request);
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
      if (keys.length <= MAX_RETAINED_KEYS) {
        scratch.keys = keys;
      }
    }
    c.keys(keys, keyCount);
    index.match(keys, keyCount, c.slots, c.size, c.matched);
    scorer.score(c);
    if (!c.orderIsPermutation()) {
      throw new IllegalStateException(
          "scorer " + scorer.name() + " left an order that is not a permutation of its candidates");
    }
    int[] order = c.order();

    Rejected shed = sloAdmission(request, c, order[0]);
    if (shed != null) {
      return shed;
    }

    for (int rank = 0; rank < c.size; rank++) {
      int cand = order[rank];
      BackendEntry e = c.entries[cand];
      if (!e.claim()) {
        continue; // removed while we scored
      }
      try {
        if (!health.tryAcquire(e.slot, now)) {
          continue; // half-open with no probe left
        }
        int matchedTokens = c.matchedTokens(cand);
        int uncached = attempt.promptTokens - matchedTokens;
        e.addInFlight(1);
        long queuedBefore = e.addPendingPrefillTokens(uncached);
        e.addActiveTokens(attempt.reservedTokens);
        int decodesBefore = e.runningDecodes();
        e.countPlacement(attempt.promptTokens, matchedTokens, attemptNo == 0);
        if (keyCount > 0) {
          index.recordRouted(keys, keyCount, e.slot, now);
        }
        scorer.onRouted(c, cand);
        List<String> fallbacks = fallbacks(c, order, rank);
        String reason = c.reason != null ? c.reason : scorer.name();
        DefaultLease lease =
            new DefaultLease(
                attempt,
                e,
                excluded,
                attemptNo,
                matchedTokens,
                uncached,
                now,
                queuedBefore,
                decodesBefore,
                c.cost(cand));
        Routed routed =
            new Routed(
                request,
                e.backend,
                attempt.model,
                fallbacks,
                attempt.promptTokens,
                matchedTokens,
                c.cost(cand),
                reason,
                attemptNo,
                lease);
        lease.routed = routed;
        return routed;
      } finally {
        e.release();
      }
    }
    return new Rejected(
        request,
        RejectReason.NO_ELIGIBLE_BACKEND,
        Duration.ZERO,
        "every ranked backend was removed or out of half-open probes",
        EligibilityFilter.HEALTH);
  }

  /**
   * SLO admission: a sheddable request with a TTFT budget is shed ({@link RejectReason#OVERLOADED},
   * retry after the excess) when the scorer's estimate for its best candidate exceeds the budget.
   * Without a budget, or when the scorer gives no estimate, it is admitted.
   */
  private @Nullable Rejected sloAdmission(RouteRequest request, Candidates c, int best) {
    Duration budget = request.ttftBudget();
    if (budget == null || !request.sheddable()) {
      return null;
    }
    OptionalLong estimate = scorer.estimatedTtftNanos(c, best);
    if (estimate.isEmpty()) {
      return null;
    }
    long bestNanos = estimate.getAsLong();
    long budgetNanos = budget.toNanos();
    if (bestNanos <= budgetNanos) {
      return null;
    }
    return new Rejected(
        request,
        RejectReason.OVERLOADED,
        Duration.ofNanos(bestNanos - budgetNanos),
        String.format(
            "best estimated TTFT %.1f ms exceeds the budget of %.1f ms",
            bestNanos / 1e6, budgetNanos / 1e6),
        null);
  }

  /** The ids of up to {@code maxFallbacks} candidates ranked after {@code rank}. */
  private List<String> fallbacks(Candidates c, int[] order, int rank) {
    int n = Math.min(maxFallbacks, c.size - rank - 1);
    return switch (n) {
      case 0 -> List.of();
      case 1 -> List.of(id(c, order, rank + 1));
      case 2 -> List.of(id(c, order, rank + 1), id(c, order, rank + 2));
      case 3 -> List.of(id(c, order, rank + 1), id(c, order, rank + 2), id(c, order, rank + 3));
      default -> {
        String[] ids = new String[n];
        for (int k = 0; k < n; k++) {
          ids[k] = id(c, order, rank + 1 + k);
        }
        yield List.of(ids);
      }
    };
  }

  private static String id(Candidates c, int[] order, int rank) {
    return c.entries[order[rank]].backend.id();
  }

  private int firstFailingFilter(
      BackendEntry e, String model, RouteRequest r, List<BackendEntry> excluded, long now) {
    Backend b = e.backend;
    if (!b.serves(model)) {
      return EligibilityFilter.MODEL.ordinal();
    }
    if (e.draining) {
      return EligibilityFilter.DRAINING.ordinal();
    }
    if (health.state(e.slot, now) == HealthState.OPEN) {
      return EligibilityFilter.HEALTH.ordinal();
    }
    if (!r.requiredCapabilities().isEmpty()
        && !b.capabilities().containsAll(r.requiredCapabilities())) {
      return EligibilityFilter.CAPABILITY.ordinal();
    }
    if (!r.requiredLabels().isEmpty()) {
      for (Map.Entry<String, String> l : r.requiredLabels().entrySet()) {
        if (!l.getValue().equals(b.labels().get(l.getKey()))) {
          return EligibilityFilter.LABEL.ordinal();
        }
      }
    }
    for (int i = 0; i < excluded.size(); i++) {
      if (excluded.get(i) == e) {
        return EligibilityFilter.EXCLUDED.ordinal();
      }
    }
    return PASS;
  }

  private static String noEligibleMessage(EligibilityFilter f, String model) {
    return switch (f) {
      case MODEL -> "no backend serves model '" + model + "'";
      case DRAINING -> "every backend serving '" + model + "' is draining";
      case HEALTH -> "every backend serving '" + model + "' is unhealthy (circuit open)";
      case CAPABILITY -> "no healthy backend serving '" + model + "' has the required capabilities";
      case LABEL -> "no healthy backend serving '" + model + "' carries the required labels";
      case EXCLUDED -> "every eligible backend for '" + model + "' already failed this request";
    };
  }

  private long seed(RouteRequest r) {
    String salt = r.cacheSalt();
    if (!prefixIsolation && salt == null) {
      return 0L;
    }
    String ns = prefixIsolation ? "tenant:" + r.tenant() : "";
    if (salt != null) {
      ns = ns + "\u0000salt:" + salt;
    }
    return hasher.seed(ns);
  }

  // ---------------------------------------------------------------- lease

  private static final int OPEN = 0;
  private static final int STREAMING = 1;
  private static final int COMPLETED = 2;
  private static final int FAILED_BEFORE_FIRST_TOKEN = 3;
  private static final int FAILED_AFTER_FIRST_TOKEN = 4;

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

  private final class DefaultLease implements Lease {
    private final Attempt attempt;
    private final BackendEntry entry;
    private final List<BackendEntry> excluded;
    private final int attemptNo;
    private final int matchedTokens;
    private final int uncachedTokens;
    private final long startNanos;
    private final long queuedBefore;
    private final int decodesBefore;
    private final double estimatedCost;
    // plain fields behind VarHandles: a lease is allocated per route, two atomics would double it
    private volatile int state = OPEN;
    private volatile boolean failoverTaken;
    @Nullable Routed routed;

    DefaultLease(
        Attempt attempt,
        BackendEntry entry,
        List<BackendEntry> excluded,
        int attemptNo,
        int matchedTokens,
        int uncachedTokens,
        long startNanos,
        long queuedBefore,
        int decodesBefore,
        double estimatedCost) {
      this.queuedBefore = queuedBefore;
      this.decodesBefore = decodesBefore;
      this.estimatedCost = estimatedCost;
      this.attempt = attempt;
      this.entry = entry;
      this.excluded = excluded;
      this.attemptNo = attemptNo;
      this.matchedTokens = matchedTokens;
      this.uncachedTokens = uncachedTokens;
      this.startNanos = startNanos;
    }

    private Routed routed() {
      return Objects.requireNonNull(routed, "routed");
    }

    @Override
    public void firstToken() {
      if (!STATE.compareAndSet(this, OPEN, STREAMING)) {
        return;
      }
      long now = ticker.getAsLong();
      entry.addPendingPrefillTokens(-uncachedTokens);
      entry.addRunningDecodes(1);
      long ttft = Math.max(0, now - startNanos);
      if (entry.claim()) {
        try {
          healthFeedback(entry, now, null);
          scorer.onFirstToken(
              new FirstTokenObservation(
                  entry.slot,
                  ttft,
                  attempt.promptTokens,
                  matchedTokens,
                  queuedBefore,
                  decodesBefore,
                  estimatedCost));
        } finally {
          entry.release();
        }
      }
      Routed r = routed();
      if (listeners.length > 0) {
        notifyListeners(l -> l.onFirstToken(r, ttft));
      }
    }

    @Override
    public void complete(Usage usage) {
      Objects.requireNonNull(usage, "usage");
      int s = end(COMPLETED, COMPLETED);
      if (s < 0) {
        return;
      }
      long now = ticker.getAsLong();
      long trueUp = usage.totalTokens() - attempt.reservedTokens;
      if (trueUp != 0) { // the reservation was exact: nothing to write to the tenant's bucket
        limiter.adjust(attempt.request.tenant(), trueUp, now);
      }
      if (s == OPEN && entry.claim()) {
        try {
          healthFeedback(entry, now, null);
        } finally {
          entry.release();
        }
      }
      Routed r = routed();
      long duration = Math.max(0, now - startNanos);
      if (listeners.length > 0) {
        notifyListeners(l -> l.onCompleted(r, usage, duration));
      }
    }

    @Override
    public void fail(Failure failure) {
      Objects.requireNonNull(failure, "failure");
      int s = end(FAILED_BEFORE_FIRST_TOKEN, FAILED_AFTER_FIRST_TOKEN);
      if (s < 0) {
        return;
      }
      long now = ticker.getAsLong();
      // Before the first token the backend did no useful work: refund the whole reservation.
      // After it, the prompt was processed: charge it, refund the unknown output reservation.
      long charged = s == OPEN ? 0 : attempt.promptTokens;
      limiter.adjust(attempt.request.tenant(), charged - attempt.reservedTokens, now);
      if (failure.countsAgainstBackend() && entry.claim()) {
        try {
          healthFeedback(entry, now, failure);
        } finally {
          entry.release();
        }
      }
      Routed r = routed();
      boolean before = s == OPEN;
      if (listeners.length > 0) {
        notifyListeners(l -> l.onFailed(r, failure, before));
      }
    }

    /** CAS to an end state; returns the previous state, or -1 if already ended. */
    private int end(int ifOpen, int ifStreaming) {
      while (true) {
        int s = state;
        if (s >= COMPLETED) {
          return -1;
        }
        if (STATE.compareAndSet(this, s, s == OPEN ? ifOpen : ifStreaming)) {
          if (s == OPEN) {
            entry.addPendingPrefillTokens(-uncachedTokens);
          } else {
            entry.addRunningDecodes(-1);
          }
          entry.addInFlight(-1);
          entry.addActiveTokens(-attempt.reservedTokens);
          if (entry.claim()) {
            try {
              scorer.onEnded(entry.slot);
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
      RouteRequest request = attempt.request;
      if (state != FAILED_BEFORE_FIRST_TOKEN || !FAILOVER_TAKEN.compareAndSet(this, false, true)) {
        return reject(
            new Rejected(
                request,
                RejectReason.NOT_RETRYABLE,
                Duration.ZERO,
                "failover needs a lease that failed before its first token and was not failed over"
                    + " yet (state "
                    + state
                    + ")",
                null));
      }
      if (attemptNo + 1 > retryBudget) {
        return reject(
            new Rejected(
                request,
                RejectReason.RETRY_BUDGET_EXHAUSTED,
                Duration.ZERO,
                "retry budget of " + retryBudget + " failovers used up",
                null));
      }
      long now = ticker.getAsLong();
      limiter.adjust(request.tenant(), attempt.reservedTokens, now); // re-charge the refund
      List<BackendEntry> nextExcluded = new ArrayList<>(excluded.size() + 1);
      nextExcluded.addAll(excluded);
      nextExcluded.add(entry);
      RouteDecision d;
      try {
        d = place(attempt, nextExcluded, attemptNo + 1, now);
      } catch (RuntimeException e) {
        limiter.adjust(request.tenant(), -attempt.reservedTokens, now);
        throw e;
      }
      if (d instanceof Rejected r) {
        limiter.adjust(request.tenant(), -attempt.reservedTokens, now);
        return reject(r);
      }
      failoverCount.increment();
      return d;
    }

    @Override
    public boolean isEnded() {
      return state >= COMPLETED;
    }

    @Override
    public String toString() {
      return "Lease[backend=" + entry.backend.id() + ", state=" + state + "]";
    }
  }

  /** Feeds the breaker (claim held by the caller) and reports a state change. */
  private void healthFeedback(BackendEntry e, long now, @Nullable Failure failure) {
    HealthState before = health.state(e.slot, now);
    if (failure == null) {
      health.onSuccess(e.slot, now);
    } else {
      health.onFailure(e.slot, failure, now);
    }
    HealthState after = health.state(e.slot, now);
    if (before != after) {
      Backend b = e.backend;
      log.info("backend {} health {} -> {}", b.id(), before, after);
      notifyListeners(l -> l.onHealthChanged(b, before, after));
    }
  }

  // ---------------------------------------------------------------- membership

  @Override
  public BackendRegistry backends() {
    return registry;
  }

  private final class Registry implements BackendRegistry {
    @Override
    public void add(Backend backend) {
      Objects.requireNonNull(backend, "backend");
      BackendEntry existing;
      synchronized (lock) {
        Table t = table;
        existing = t.byId.get(backend.id());
        if (existing != null) {
          replace(existing, backend);
        } else {
          int slot = usedSlots.nextClearBit(0);
          if (slot >= maxBackends) {
            throw new IllegalStateException(
                "cannot add backend '"
                    + backend.id()
                    + "': maxBackends "
                    + maxBackends
                    + " reached (removed backends free their slot once removal completes)");
          }
          index.addBackend(slot, backend.capacityBlocks());
          health.addBackend(slot);
          usedSlots.set(slot);
          BackendEntry e = new BackendEntry(slot, backend);
          BackendEntry[] entries = Arrays.copyOf(t.entries, t.entries.length + 1);
          entries[entries.length - 1] = e;
          Map<String, BackendEntry> byId = new LinkedHashMap<>(t.byId);
          byId.put(backend.id(), e);
          table = new Table(entries, Map.copyOf(byId));
        }
      }
      log.info("backend {} {}", backend.id(), existing == null ? "added" : "updated");
      notifyListeners(l -> l.onBackendAdded(backend));
    }

    /** Swaps the descriptor; lock held. */
    private void replace(BackendEntry existing, Backend backend) {
      long oldCapacity = existing.backend.capacityBlocks();
      existing.backend = backend;
      if (oldCapacity != backend.capacityBlocks()) {
        index.setCapacity(existing.slot, backend.capacityBlocks());
      }
    }

    @Override
    public boolean update(String backendId, java.util.function.UnaryOperator<Backend> change) {
      Objects.requireNonNull(backendId, "backendId");
      Objects.requireNonNull(change, "change");
      Backend updated;
      synchronized (lock) {
        BackendEntry e = table.byId.get(backendId);
        if (e == null) {
          return false;
        }
        updated = Objects.requireNonNull(change.apply(e.backend), "changed backend");
        if (!updated.id().equals(backendId)) {
          throw new IllegalArgumentException(
              "update of '" + backendId + "' must keep the id, got '" + updated.id() + "'");
        }
        replace(e, updated);
      }
      Backend b = updated;
      notifyListeners(l -> l.onBackendAdded(b));
      return true;
    }

    @Override
    public boolean remove(String backendId) {
      Objects.requireNonNull(backendId, "backendId");
      BackendEntry e;
      synchronized (lock) {
        Table t = table;
        e = t.byId.get(backendId);
        if (e == null) {
          return false;
        }
        List<BackendEntry> rest = new ArrayList<>(t.entries.length);
        Map<String, BackendEntry> byId = new LinkedHashMap<>();
        for (BackendEntry x : t.entries) {
          if (x != e) {
            rest.add(x);
            byId.put(x.backend.id(), x);
          }
        }
        table = new Table(rest.toArray(new BackendEntry[0]), Map.copyOf(byId));
        e.removed = true;
        removing.add(e);
      }
      e.awaitNoClaims();
      synchronized (lock) {
        removing.remove(e);
        removedRequests += e.requests(); // no claim left: the count is final
      }
      index.removeBackend(e.slot);
      health.removeBackend(e.slot);
      scorer.onBackendRemoved(e.slot);
      synchronized (lock) {
        usedSlots.clear(e.slot);
      }
      Backend b = e.backend;
      log.info("backend {} removed ({} leases still open)", backendId, e.inFlight());
      notifyListeners(l -> l.onBackendRemoved(b));
      return true;
    }

    @Override
    public void drain(String backendId) {
      setDraining(backendId, true);
    }

    @Override
    public void undrain(String backendId) {
      setDraining(backendId, false);
    }

    private void setDraining(String backendId, boolean draining) {
      Objects.requireNonNull(backendId, "backendId");
      BackendEntry e = table.byId.get(backendId);
      if (e == null) {
        throw new NoSuchElementException("no backend '" + backendId + "'");
      }
      boolean was = e.draining;
      e.draining = draining;
      if (was != draining) {
        Backend b = e.backend;
        log.info("backend {} {}", backendId, draining ? "draining" : "undrained");
        notifyListeners(l -> l.onDrainChanged(b, draining));
      }
    }

    @Override
    public boolean reportLoad(String backendId, LoadReport report) {
      Objects.requireNonNull(backendId, "backendId");
      Objects.requireNonNull(report, "report");
      BackendEntry e = table.byId.get(backendId);
      if (e == null) {
        return false;
      }
      long now = ticker.getAsLong();
      long age = report.age().toNanos();
      e.load = new BackendEntry.TimedLoad(report, now - age);
      return true;
    }

    @Override
    public Optional<Backend> get(String backendId) {
      BackendEntry e = table.byId.get(Objects.requireNonNull(backendId, "backendId"));
      return e == null ? Optional.empty() : Optional.of(e.backend);
    }

    @Override
    public List<Backend> all() {
      BackendEntry[] entries = table.entries;
      List<Backend> out = new ArrayList<>(entries.length);
      for (BackendEntry e : entries) {
        out.add(e.backend);
      }
      return List.copyOf(out);
    }
  }

  // ---------------------------------------------------------------- events, inspection

  @Override
  public boolean applyKvEvents(String backendId, List<? extends KvEvent> batch) {
    Objects.requireNonNull(backendId, "backendId");
    Objects.requireNonNull(batch, "batch");
    BackendEntry e = table.byId.get(backendId);
    if (e == null || !e.claim()) {
      return false;
    }
    try {
      long now = ticker.getAsLong();
      for (KvEvent ev : batch) {
        index.apply(e.slot, Objects.requireNonNull(ev, "event"), hasher, now);
      }
    } finally {
      e.release();
    }
    return true;
  }

  @Override
  public RouterSnapshot inspect() {
    long now = ticker.getAsLong();
    BackendEntry[] entries = table.entries;
    List<BackendSnapshot> backends = new ArrayList<>(entries.length);
    String[] names = new String[maxBackends];
    for (BackendEntry e : entries) {
      names[e.slot] = e.backend.id();
      BackendEntry.TimedLoad load = e.load;
      backends.add(
          new BackendSnapshot(
              e.backend,
              e.draining,
              health.state(e.slot, now),
              e.inFlight(),
              e.pendingPrefillTokens(),
              e.runningDecodes(),
              load == null ? null : load.report(),
              load == null ? null : Math.max(0, now - load.measuredAt()),
              indexSignals(e.slot, now),
              e.routed(),
              e.promptTokens(),
              e.matchedTokens(),
              scorer.describe(e.slot)));
    }
    Map<RejectReason, Long> rejected = new EnumMap<>(RejectReason.class);
    rejectedCount.forEach((k, v) -> rejected.put(k, v.sum()));
    return new RouterSnapshot(
        now,
        backends,
        limiter.snapshot(snapshotTenants, now),
        index.stats(names),
        routedRequests(),
        failoverCount.sum(),
        rejected);
  }

  /** The signals the index reports for a slot, present ones only. */
  private Map<IndexSignal, Long> indexSignals(int slot, long now) {
    Map<IndexSignal, Long> signals = new EnumMap<>(IndexSignal.class);
    for (IndexSignal s : INDEX_SIGNALS) {
      long v = index.signal(slot, s, now);
      if (IndexSignal.isPresent(v)) {
        signals.put(s, v);
      }
    }
    return signals;
  }

  /** Requests routed so far: their first placements, summed over current and removed backends. */
  private long routedRequests() {
    synchronized (lock) {
      long n = removedRequests;
      for (BackendEntry e : table.entries) {
        n += e.requests();
      }
      for (BackendEntry e : removing) {
        n += e.requests();
      }
      return n;
    }
  }

  private void notifyListeners(Consumer<RoutingListener> call) {
    if (listeners.length == 0) {
      return;
    }
    for (RoutingListener l : listeners) {
      try {
        call.accept(l);
      } catch (RuntimeException ex) {
        long now = ticker.getAsLong();
        long last = lastListenerWarning.get();
        if ((last == Long.MIN_VALUE || now - last >= WARN_INTERVAL_NANOS)
            && lastListenerWarning.compareAndSet(last, now)) {
          log.warn("routing listener {} threw; ignored (warnings rate-limited to 1/10s)", l, ex);
        }
      }
    }
  }

  @Override
  public String toString() {
    return "RoutingEngine[backends="
        + table.entries.length
        + ", scorer="
        + scorer.name()
        + ", index="
        + index
        + "]";
  }
}
