package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.api.spi.HealthPolicy;
import dev.prefixrouter.api.spi.IndexSignal;
import dev.prefixrouter.api.spi.PrefixIndex;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.TenantLimiter;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The engine: its parts wired together. {@link Membership} owns the backends and the slot
 * lifecycle, {@link RoutePipeline} one {@code route()} stage by stage, {@link DefaultLease} what a
 * placement holds until it ends, {@link Listeners} the fan-out. This class adds the KV-event entry
 * point and inspection.
 */
final class DefaultRoutingEngine implements RoutingEngine {
  private static final IndexSignal[] INDEX_SIGNALS = IndexSignal.values();

  private final BlockHasher hasher;
  private final PrefixIndex index;
  private final Scorer scorer;
  private final TenantLimiter limiter;
  private final HealthPolicy health;
  private final LongSupplier ticker;
  private final int snapshotTenants;
  private final Membership membership;
  private final RoutePipeline pipeline;
  private final @Nullable CapacityPlanner planner;

  /**
   * {@code engine} as this implementation, for the routers built over an engine.
   *
   * @throws IllegalArgumentException if {@code engine} is another implementation
   */
  static DefaultRoutingEngine of(RoutingEngine engine) {
    Objects.requireNonNull(engine, "engine");
    if (!(engine instanceof DefaultRoutingEngine e)) {
      throw new IllegalArgumentException(
          "engine must be built by RoutingEngine.builder(), was " + engine.getClass().getName());
    }
    return e;
  }

  DefaultRoutingEngine(RoutingEngineBuilder b) {
    this.hasher = b.hasher;
    this.index = b.index;
    this.scorer = b.scorer;
    this.limiter = b.limiter;
    this.health = b.health;
    this.ticker = b.ticker;
    this.snapshotTenants = b.snapshotTenants;
    Listeners listeners = new Listeners(b.listeners, b.ticker);
    this.membership =
        new Membership(b.maxBackends, List.of(index, health, scorer), health, listeners, ticker);
    this.pipeline = new RoutePipeline(b, listeners, membership);
    this.planner =
        b.capacityObjective == null
            ? null
            : new CapacityPlanner(b.capacityObjective, ticker.getAsLong());
    for (Backend backend : b.backends) {
      membership.add(backend);
    }
  }

  @Override
  public RouteDecision route(RouteRequest request) {
    return pipeline.route(request);
  }

  @Override
  public BackendRegistry backends() {
    return membership;
  }

  @Override
  public boolean applyKvEvents(String backendId, List<? extends KvEvent> batch) {
    Objects.requireNonNull(backendId, "backendId");
    Objects.requireNonNull(batch, "batch");
    BackendEntry e = membership.entry(backendId);
    if (e == null || !e.claim()) {
      return false;
    }
    try {
      long now = ticker.getAsLong();
      for (KvEvent ev : batch) {
        String salt = ev instanceof BlockStored s ? s.cacheSalt() : null;
        String lora = ev instanceof BlockStored s ? s.loraName() : null;
        if (salt == null && lora == null) {
          index.apply(e.slot, Objects.requireNonNull(ev, "event"), hasher, now);
        } else { // keyed as the salted or adapter requests were
          index.apply(e.slot, ev, hasher, pipeline.seeds().eventSeed(salt, lora), now);
        }
      }
    } finally {
      e.release();
    }
    return true;
  }

  @Override
  public boolean applyPredicted(String backendId, long[] keys, int keyCount) {
    Objects.requireNonNull(backendId, "backendId");
    Objects.requireNonNull(keys, "keys");
    PrefixIndex.checkKeyCount(keys, keyCount);
    BackendEntry e = membership.entry(backendId);
    if (e == null || !e.claim()) {
      return false;
    }
    try {
      if (keyCount > 0) {
        index.recordRouted(keys, keyCount, e.slot, ticker.getAsLong());
      }
    } finally {
      e.release();
    }
    return true;
  }

  @Override
  public RouterSnapshot inspect() {
    long now = ticker.getAsLong();
    BackendEntry[] entries = membership.entries();
    List<BackendSnapshot> backends = new ArrayList<>(entries.length);
    String[] names = new String[membership.maxBackends()];
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
              load == null ? null : load.ageNanos(now),
              indexSignals(e.slot, now),
              e.routed(),
              e.promptTokens(),
              e.matchedTokens(),
              scorer.describe(e.slot),
              e.cacheFeedback.snapshot()));
    }
    return new RouterSnapshot(
        now,
        backends,
        limiter.snapshot(snapshotTenants, now),
        index.stats(names),
        membership.routedRequests(),
        pipeline.failovers(),
        pipeline.rejectedCounts(),
        planner == null ? List.of() : planner.plan(now, entries, scorer));
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

  /** The pipeline, for a {@link DisaggregatedRouter} composed over this engine. */
  RoutePipeline pipeline() {
    return pipeline;
  }

  /** Tokens per block of the engine's hasher. */
  int tokensPerBlock() {
    return hasher.tokensPerBlock();
  }

  @Override
  public String toString() {
    return "RoutingEngine[backends="
        + membership.entries().length
        + ", scorer="
        + scorer.name()
        + ", index="
        + index
        + "]";
  }
}
