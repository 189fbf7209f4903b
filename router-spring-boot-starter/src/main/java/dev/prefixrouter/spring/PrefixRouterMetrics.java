package dev.prefixrouter.spring;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BackendSnapshot;
import dev.prefixrouter.api.CacheAccuracy;
import dev.prefixrouter.api.CapacityPlan;
import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.HealthState;
import dev.prefixrouter.api.Rejected;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RouterSnapshot;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.api.spi.IndexSignal;
import dev.prefixrouter.api.spi.RoutingListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;

/**
 * Micrometer meters for the engine, fed as a {@link RoutingListener}. Tags are bounded: outcome,
 * reject reason, backend id (meters of a removed backend are removed), and the tenant only when
 * {@code prefix-router.metrics.tenant-tags=true}. The gauges read one engine snapshot per scrape
 * (reused for {@value #SNAPSHOT_TTL_NANOS} ns), so a scrape costs O(backends).
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><td>{@code prefixrouter.decisions}</td><td>counter, {@code outcome=routed|rejected}</td></tr>
 *   <tr><td>{@code prefixrouter.rejections}</td><td>counter, {@code reason}</td></tr>
 *   <tr><td>{@code prefixrouter.matched.ratio}</td><td>summary of matched / prompt tokens: the
 *       index's match on the chosen backend ({@link Routed#indexMatchedTokens()}, the prediction
 *       {@link CacheAccuracy} checks), not a scorer's discount for prefixes still being
 *       prefilled</td></tr>
 *   <tr><td>{@code prefixrouter.ttft.estimated}</td><td>timer (base unit seconds, histogram
 *       buckets 1 ms .. 5 min) of the est-ttft scorer's estimate for the chosen backend, {@code
 *       backend}; only with the est-ttft policy</td></tr>
 *   <tr><td>{@code prefixrouter.route.cost}</td><td>summary of the chosen backend's cost under
 *       another policy (its own unit, no base unit), {@code backend}</td></tr>
 *   <tr><td>{@code prefixrouter.ttft.observed}</td><td>timer (base unit seconds, histogram
 *       buckets 1 ms .. 5 min), {@code backend}</td></tr>
 *   <tr><td>{@code prefixrouter.failures}</td><td>counter, {@code backend}, {@code kind}</td></tr>
 *   <tr><td>{@code prefixrouter.backend.inflight}</td><td>gauge, {@code backend}</td></tr>
 *   <tr><td>{@code prefixrouter.backend.lru.age}</td><td>gauge (seconds; NaN while the index's
 *       mirror has room), {@code backend}</td></tr>
 *   <tr><td>{@code prefixrouter.backend.breaker}</td><td>gauge 0 closed, 1 half-open, 2 open</td></tr>
 *   <tr><td>{@code prefixrouter.backend.cache.reports}</td><td>function counter, completions
 *       whose usage carried the engine's cached count, {@code backend}</td></tr>
 *   <tr><td>{@code prefixrouter.backend.cache.mispredicted}</td><td>function counter, reports
 *       where the engine held fewer ({@code direction=over}) or more ({@code direction=under})
 *       tokens than the router predicted, {@code backend}</td></tr>
 *   <tr><td>{@code prefixrouter.backend.cache.mispredicted.tokens}</td><td>function counter,
 *       tokens of those errors, {@code backend}, {@code direction=over|under|stale} (stale: the
 *       part of over that no request prefilling there at routing time explains)</td></tr>
 *   <tr><td>{@code prefixrouter.backend.cache.capacity}</td><td>gauge, blocks the index models
 *       the backend's cache with (below the configured capacity while the engine's counts show
 *       it keeps less; NaN when the index does not say), {@code backend}</td></tr>
 *   <tr><td>{@code prefixrouter.capacity.recommended}</td><td>gauge, backends the capacity plan
 *       recommends (NaN when the objective is unreachable), {@code model}; only with {@code
 *       prefix-router.capacity.ttft} set</td></tr>
 *   <tr><td>{@code prefixrouter.capacity.arrivals}</td><td>gauge, requests per second the plan
 *       measured, {@code model}</td></tr>
 * </table>
 */
public class PrefixRouterMetrics implements MeterBinder, RoutingListener {
  private final ObjectProvider<RoutingEngine> engine;
  private final boolean tenantTags;
  private volatile @Nullable MeterRegistry registry;
  private final Map<String, List<Meter>> backendMeters = new ConcurrentHashMap<>();
  private final Map<String, List<Meter>> capacityMeters = new ConcurrentHashMap<>();
  private final boolean costIsTtftMillis;

  /** Per backend: the cost meter and the observed-TTFT timer, looked up once. */
  private final Map<String, Meter[]> perBackend = new ConcurrentHashMap<>();

  private volatile @Nullable Counter routedCounter;

  /** {@code prefixrouter.matched.ratio}, looked up once per registry (not per decision). */
  private volatile @Nullable DistributionSummary matchedRatio;

  /**
   * Meters for a scorer whose cost is not a time ({@code prefixrouter.route.cost}).
   *
   * @param engine the engine whose gauges are read
   * @param tenantTags whether the decision counters carry the tenant
   */
  public PrefixRouterMetrics(ObjectProvider<RoutingEngine> engine, boolean tenantTags) {
    this(engine, tenantTags, false);
  }

  /**
   * @param engine the engine whose gauges are read
   * @param tenantTags whether the decision counters carry the tenant
   * @param costIsTtftMillis whether the scorer's cost is an estimated TTFT in milliseconds (the
   *     est-ttft policy): then it is the timer {@code prefixrouter.ttft.estimated}, else the
   *     summary {@code prefixrouter.route.cost}
   */
  public PrefixRouterMetrics(
      ObjectProvider<RoutingEngine> engine, boolean tenantTags, boolean costIsTtftMillis) {
    this.engine = engine;
    this.tenantTags = tenantTags;
    this.costIsTtftMillis = costIsTtftMillis;
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    perBackend.clear();
    routedCounter = null;
    matchedRatio = null;
    this.registry = registry;
    RoutingEngine e = engine.getIfAvailable();
    if (e != null) {
      e.backends().all().forEach(b -> registerBackend(registry, b.id()));
      registerCapacity(registry, e);
    }
  }

  /**
   * One pair of capacity gauges per model the plan lists (planning on); a model whose backends are
   * all removed keeps its gauges, at NaN, so their number is bounded by the models ever served.
   */
  private void registerCapacity(MeterRegistry r, RoutingEngine e) {
    for (CapacityPlan plan : e.inspect().capacity()) {
      String model = plan.model();
      capacityMeters.computeIfAbsent(
          model,
          k ->
              List.of(
                  capacityGauge(
                      r,
                      "prefixrouter.capacity.recommended",
                      model,
                      p ->
                          p.status() == CapacityPlan.Status.UNREACHABLE
                              ? Double.NaN
                              : p.recommendedBackends()),
                  capacityGauge(
                      r,
                      "prefixrouter.capacity.arrivals",
                      model,
                      CapacityPlan::arrivalsPerSecond)));
    }
  }

  /** How long one engine snapshot serves the gauges: one {@code inspect()} per scrape. */
  static final long SNAPSHOT_TTL_NANOS = 250_000_000L;

  private volatile @Nullable Scrape scrape;

  /** One engine snapshot, its backends by id, and when it was taken. */
  private record Scrape(
      long takenNanos, RouterSnapshot snapshot, Map<String, BackendSnapshot> byId) {}

  /**
   * The engine's snapshot for the gauges, taken at most once per {@link #SNAPSHOT_TTL_NANOS}: a
   * scrape reads every gauge within that time, so it costs one {@code inspect()} (O(backends))
   * instead of one per gauge (O(backends²)). Null without an engine.
   */
  private @Nullable Scrape scrape() {
    Scrape s = scrape;
    long now = System.nanoTime();
    if (s != null && now - s.takenNanos() < SNAPSHOT_TTL_NANOS) {
      return s;
    }
    RoutingEngine e = engine.getIfAvailable();
    if (e == null) {
      return null;
    }
    RouterSnapshot snap = e.inspect();
    Map<String, BackendSnapshot> byId = new HashMap<>();
    for (BackendSnapshot b : snap.backends()) {
      byId.put(b.id(), b);
    }
    s = new Scrape(now, snap, byId);
    scrape = s;
    return s;
  }

  private Gauge capacityGauge(
      MeterRegistry r, String name, String model, ToDoubleFunction<CapacityPlan> f) {
    return Gauge.builder(
            name,
            this,
            self -> {
              Scrape s = scrape();
              return s == null
                  ? Double.NaN
                  : s.snapshot().capacity(model).map(f::applyAsDouble).orElse(Double.NaN);
            })
        .tag("model", model)
        .register(r);
  }

  private void registerBackend(MeterRegistry r, String id) {
    backendMeters.computeIfAbsent(
        id,
        k -> {
          List<Meter> ms = new ArrayList<>();
          ms.add(gauge(r, "prefixrouter.backend.inflight", id, BackendSnapshot::inFlight));
          ms.add(
              gauge(
                  r,
                  "prefixrouter.backend.lru.age",
                  id,
                  b -> {
                    OptionalLong age = b.lruAgeNanos();
                    return age.isPresent() ? age.getAsLong() / 1e9 : Double.NaN;
                  }));
          ms.add(
              gauge(
                  r,
                  "prefixrouter.backend.breaker",
                  id,
                  b ->
                      b.health() == HealthState.CLOSED
                          ? 0
                          : b.health() == HealthState.HALF_OPEN ? 1 : 2));
          ms.add(
              counter(r, "prefixrouter.backend.cache.reports", id, null, CacheAccuracy::reports));
          String mis = "prefixrouter.backend.cache.mispredicted";
          ms.add(counter(r, mis, id, "over", CacheAccuracy::overPredicted));
          ms.add(counter(r, mis, id, "under", CacheAccuracy::underPredicted));
          ms.add(counter(r, mis + ".tokens", id, "over", CacheAccuracy::overPredictedTokens));
          ms.add(counter(r, mis + ".tokens", id, "under", CacheAccuracy::underPredictedTokens));
          ms.add(counter(r, mis + ".tokens", id, "stale", CacheAccuracy::staleTokens));
          ms.add(
              gauge(
                  r,
                  "prefixrouter.backend.cache.capacity",
                  id,
                  b -> {
                    Long c = b.indexSignals().get(IndexSignal.CAPACITY_BLOCKS);
                    return c == null ? Double.NaN : c;
                  }));
          return ms;
        });
  }

  private Gauge gauge(
      MeterRegistry r, String name, String id, ToDoubleFunction<BackendSnapshot> f) {
    return Gauge.builder(
            name,
            this,
            self -> {
              Scrape s = scrape();
              BackendSnapshot b = s == null ? null : s.byId().get(id);
              return b == null ? Double.NaN : f.applyAsDouble(b);
            })
        .tag("backend", id)
        .register(r);
  }

  /**
   * A counter that reads one of the backend's {@link CacheAccuracy} counts from the scrape's
   * snapshot (monotonic while the backend stays registered), tagged {@code direction} if given.
   */
  private FunctionCounter counter(
      MeterRegistry r,
      String name,
      String id,
      @Nullable String direction,
      ToDoubleFunction<CacheAccuracy> f) {
    FunctionCounter.Builder<PrefixRouterMetrics> b =
        FunctionCounter.builder(
                name,
                this,
                self -> {
                  Scrape s = scrape();
                  BackendSnapshot snap = s == null ? null : s.byId().get(id);
                  return snap == null ? 0 : f.applyAsDouble(snap.cacheAccuracy());
                })
            .tag("backend", id);
    if (direction != null) {
      b.tag("direction", direction);
    }
    return b.register(r);
  }

  private Tags tenant(Routed r) {
    return tenantTags ? Tags.of("tenant", r.request().tenant()) : Tags.empty();
  }

  @Override
  public void onRouted(Routed routed) {
    MeterRegistry r = registry;
    if (r == null) {
      return;
    }
    Counter routedCount = tenantTags ? null : routedCounter;
    if (routedCount == null) {
      routedCount =
          Counter.builder("prefixrouter.decisions")
              .tag("outcome", "routed")
              .tags(tenant(routed))
              .register(r);
      if (!tenantTags) {
        routedCounter = routedCount;
      }
    }
    routedCount.increment();
    if (routed.promptTokens() > 0) {
      DistributionSummary ratio = matchedRatio;
      if (ratio == null) {
        ratio = DistributionSummary.builder("prefixrouter.matched.ratio").register(r);
        matchedRatio = ratio;
      }
      ratio.record((double) routed.indexMatchedTokens() / routed.promptTokens());
    }
    Meter cost = backendMeters(r, routed.backendId())[0];
    double c = routed.cost();
    if (cost instanceof Timer t) {
      if (c >= 0 && c < Long.MAX_VALUE / 1_000_000.0) {
        t.record((long) (c * 1_000_000.0), TimeUnit.NANOSECONDS);
      }
    } else if (Double.isFinite(c)) {
      ((DistributionSummary) cost).record(c);
    }
  }

  /** The cost meter and the observed-TTFT timer of a backend, registered on first use. */
  private Meter[] backendMeters(MeterRegistry r, String backend) {
    return perBackend.computeIfAbsent(
        backend,
        id -> {
          Meter cost =
              costIsTtftMillis
                  ? Timer.builder("prefixrouter.ttft.estimated")
                      .description("est-ttft's estimated time to first token of the chosen backend")
                      .tag("backend", id)
                      .publishPercentileHistogram()
                      .minimumExpectedValue(Duration.ofMillis(1))
                      .maximumExpectedValue(Duration.ofMinutes(5))
                      .register(r)
                  : DistributionSummary.builder("prefixrouter.route.cost")
                      .description("the scorer's cost of the chosen backend (unit of the policy)")
                      .tag("backend", id)
                      .register(r);
          Timer observed =
              Timer.builder("prefixrouter.ttft.observed")
                  .description("lease start to the first token, as the host reported it")
                  .tag("backend", id)
                  .publishPercentileHistogram()
                  .minimumExpectedValue(Duration.ofMillis(1))
                  .maximumExpectedValue(Duration.ofMinutes(5))
                  .register(r);
          return new Meter[] {cost, observed};
        });
  }

  @Override
  public void onRejected(Rejected rejected) {
    MeterRegistry r = registry;
    if (r == null) {
      return;
    }
    Tags t = tenantTags ? Tags.of("tenant", rejected.request().tenant()) : Tags.empty();
    Counter.builder("prefixrouter.decisions")
        .tag("outcome", "rejected")
        .tags(t)
        .register(r)
        .increment();
    Counter.builder("prefixrouter.rejections")
        .tag("reason", rejected.reason().name())
        .tags(t)
        .register(r)
        .increment();
  }

  @Override
  public void onFirstToken(Routed routed, long ttftNanos) {
    MeterRegistry r = registry;
    if (r != null) {
      ((Timer) backendMeters(r, routed.backendId())[1]).record(ttftNanos, TimeUnit.NANOSECONDS);
    }
  }

  @Override
  public void onFailed(Routed routed, Failure failure, boolean beforeFirstToken) {
    MeterRegistry r = registry;
    if (r != null) {
      Counter.builder("prefixrouter.failures")
          .tag("backend", routed.backendId())
          .tag("kind", failure.kind().name())
          .register(r)
          .increment();
    }
  }

  @Override
  public void onCompleted(Routed routed, Usage usage, long durationNanos) {}

  @Override
  public void onBackendAdded(Backend backend) {
    MeterRegistry r = registry;
    if (r != null) {
      registerBackend(r, backend.id());
      RoutingEngine e = engine.getIfAvailable();
      if (e != null) {
        registerCapacity(r, e);
      }
    }
  }

  @Override
  public void onBackendRemoved(Backend backend) {
    perBackend.remove(backend.id());
    MeterRegistry r = registry;
    List<Meter> ms = backendMeters.remove(backend.id());
    if (r != null && ms != null) {
      ms.forEach(r::remove);
    }
    if (r != null) {
      for (Meter m : List.copyOf(r.getMeters())) {
        if (backend.id().equals(m.getId().getTag("backend"))) {
          r.remove(m);
        }
      }
    }
  }
}
