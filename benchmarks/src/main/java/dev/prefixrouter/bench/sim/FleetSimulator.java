package dev.prefixrouter.bench.sim;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BlockRemoved;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.CapacityObjective;
import dev.prefixrouter.api.CapacityPlan;
import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.KvEvent;
import dev.prefixrouter.api.LoadReport;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.Rejected;
import dev.prefixrouter.api.RouteDecision;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.RoutingEngineBuilder;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.radix.BlockHashers;
import dev.prefixrouter.radix.RadixPrefixIndex;
import dev.prefixrouter.scoring.CircuitBreakers;
import dev.prefixrouter.scoring.EstimatedTtftScorer;
import dev.prefixrouter.scoring.MediaAffinity;
import dev.prefixrouter.scoring.MediaAffinityTerm;
import dev.prefixrouter.scoring.Policies;
import dev.prefixrouter.scoring.Quota;
import dev.prefixrouter.scoring.TenantTokenBuckets;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.SplittableRandom;
import java.util.function.BiFunction;
import org.jspecify.annotations.Nullable;

/**
 * Deterministic discrete-event simulation of a fleet of {@link SimBackend}s driven by the real
 * {@link RoutingEngine} through its public API: {@code route}, the lease callbacks, {@code
 * reportLoad} every scrape interval (so the router sees stale load) and, optionally, {@code
 * applyKvEvents} with a delivery delay and a drop rate. The engine's clock is the simulation clock.
 * Every policy runs on the same arrivals with a fresh engine and fresh backends.
 */
final class FleetSimulator {
  static final BlockHasher HASHER = BlockHashers.tokens(BackendProfile.BLOCK);

  private enum Type {
    ARRIVAL,
    STEP_END,
    SCRAPE,
    KV_DELIVER,
    FAULT,
    SHARE
  }

  /** A prediction of replica {@code from} on its way to the others. */
  private record Shared(int from, String backend, long[] keys) {}

  private record Event(long time, long seq, Type type, int index, Object payload) {}

  private final SimConfig config;
  private final List<SimRequest> requests;
  private final long[][] keys;
  private final int maxTokens; // what the router is told of every request's output
  private final String workload;
  private final PrintStream progress;
  private ReplicaSetup replicaSetup = ReplicaSetup.single();
  private @Nullable BiFunction<String, RoutingEngine, ArrivalRouter> routers;
  private boolean kvWire;
  private int lowerTierBlocks;
  private double reloadFraction;
  private double blendFraction = -1; // < 0: no position-independent chunk reuse
  private final Map<String, Double> blendShares = new LinkedHashMap<>();
  private long routerCapacityBlocks; // 0: the engines' real capacity
  private boolean cacheFeedback;
  private Map<String, java.util.function.Supplier<Scorer>> extraScorers = Map.of();

  FleetSimulator(
      String workload, SimConfig config, List<SimRequest> requests, PrintStream progress) {
    this.workload = workload;
    this.config = config;
    this.requests = requests;
    this.progress = progress;
    this.maxTokens = Workloads.clientMaxTokens(requests);
    this.keys = new long[requests.size()][];
    for (int i = 0; i < requests.size(); i++) {
      keys[i] = BlockHasher.keysOf(HASHER, Prompt.ofTokens(requests.get(i).tokens()), 0);
    }
  }

  /** Runs every policy behind {@code setup}'s replicas (default: one). */
  FleetSimulator replicas(ReplicaSetup setup) {
    this.replicaSetup = setup;
    return this;
  }

  /**
   * With KV events on: send them through the real ZMQ wire and subscriber ({@link WireLink})
   * instead of applying them in-process; each backend's events of one simulated instant form one
   * batch, and the config's drop rate drops whole batches on the wire (replayed).
   */
  FleetSimulator kvWire(boolean on) {
    this.kvWire = on;
    return this;
  }

  /**
   * Gives every backend a lower tier (CPU memory) of {@code blocks}: GPU-evicted blocks move there
   * and reload at {@code reloadFraction} of their prefill; with KV events on, its stores and
   * removals go to the router with medium {@code "CPU"}.
   */
  FleetSimulator lowerTier(int blocks, double reloadFraction) {
    this.lowerTierBlocks = blocks;
    this.reloadFraction = reloadFraction;
    return this;
  }

  /**
   * Gives every backend position-independent chunk reuse ({@link SimBackend#blend}): a chunk it
   * holds from an earlier prompt costs {@code recomputeFraction} of its prefill wherever it stands.
   * Only requests that carry chunks ({@link SimRequest#chunks()}) are affected.
   */
  FleetSimulator blend(double recomputeFraction) {
    this.blendFraction = recomputeFraction;
    return this;
  }

  /**
   * The share of prompt tokens of a policy's last run that were reused from chunks held at another
   * position ({@link #blend}; 0 without it).
   */
  double blendShare(String policy) {
    return blendShares.getOrDefault(policy, 0.0);
  }

  /**
   * What the router is told and whether it follows the engines' cached counts: {@code
   * capacityBlocks} per backend (0: the engines' real capacity; another value models a router whose
   * configured capacity is wrong), and whether the index adjusts to the backends' {@code
   * Usage.cachedTokens} ({@code RadixPrefixIndex.Builder.capacityFeedback}).
   */
  FleetSimulator routerBelief(long capacityBlocks, boolean cacheFeedback) {
    this.routerCapacityBlocks = capacityBlocks;
    this.cacheFeedback = cacheFeedback;
    return this;
  }

  /**
   * Scorers by policy name that take precedence over {@link Policies#byName}: variants a probe
   * builds with other settings (each run gets a fresh one).
   */
  FleetSimulator scorers(Map<String, java.util.function.Supplier<Scorer>> byName) {
    this.extraScorers = Map.copyOf(byName);
    return this;
  }

  /** Told of every arrival before it is routed, of the backend it went to and its first token. */
  interface DecisionTap {
    void beforeRoute(int request, SimRequest r, long[] keys, SimBackend[] backends, long now);

    void routed(int request, int backend);

    void firstToken(int request, double ttftMs);
  }

  private @Nullable DecisionTap tap;

  /** Taps the decisions of the next runs ({@code null}: none). */
  FleetSimulator tap(@Nullable DecisionTap t) {
    this.tap = t;
    return this;
  }

  /** Routes an arrival on a run's engine in place of {@code engine.route} (a router over it). */
  @FunctionalInterface
  interface ArrivalRouter {
    RouteDecision route(RouteRequest request, SimRequest sim);
  }

  /**
   * Arrivals of a policy are routed by {@code factory.apply(policy, engine)} (once per run and
   * engine) when it returns non-null, else by the engine itself. A policy name may carry a
   * {@code @variant} suffix for the factory; the scorer is the part before it.
   */
  FleetSimulator routers(BiFunction<String, RoutingEngine, @Nullable ArrivalRouter> factory) {
    this.routers = factory;
    return this;
  }

  /** One run: mutable state of a policy's simulation. */
  private final class Run implements SimBackend.Listener {
    final String policy;
    final PriorityQueue<Event> queue =
        new PriorityQueue<>(
            (a, b) -> a.time != b.time ? Long.compare(a.time, b.time) : Long.compare(a.seq, b.seq));
    long seq;
    long now;
    final RoutingEngine[] engines;
    final @Nullable ArrivalRouter[] arrivalRouters;
    final SplittableRandom replicaRnd = new SplittableRandom(config.seed() * 31 + 7);
    final SimBackend[] backends;
    final Map<String, Integer> index = new HashMap<>();
    final SplittableRandom rnd = new SplittableRandom(config.seed());
    final int[] routed;
    WireLink wire; // --kv-events wire, during run()
    List<KvEvent>[] wireBatch; // each backend's batch of the current instant, until sent
    long[] wireBatchTime;
    final SplittableRandom wireRnd = new SplittableRandom(config.seed() * 131 + 5);
    final double[] ttft;
    final double[] e2e;
    int ttftCount;
    int e2eCount;
    int completed;
    int rejected;
    int failed;
    int failovers;
    long hitTokens;
    long promptTokens;
    long hitBlocks;
    long fullBlocks;
    long outputTokens;
    long blendTokens;
    int arrived;
    final Map<String, long[]> tenants = new LinkedHashMap<>(); // offered, admitted
    final CapacityObjective objective;
    CapacityPlan plan;
    double[] sortedTtft;

    Run(String policy) {
      this(policy, null);
    }

    Run(String policy, CapacityObjective objective) {
      this.policy = policy;
      this.objective = objective;
      backends = new SimBackend[config.backends()];
      for (int i = 0; i < backends.length; i++) {
        String id = "b" + i;
        backends[i] = new SimBackend(id, config.profile(), this);
        if (lowerTierBlocks > 0) {
          backends[i].lowerTier(lowerTierBlocks, reloadFraction);
        }
        if (blendFraction >= 0) {
          backends[i].blend(blendFraction);
        }
        index.put(id, i);
      }
      engines = new RoutingEngine[replicaSetup.replicas()];
      arrivalRouters = new ArrivalRouter[replicaSetup.replicas()];
      for (int r = 0; r < engines.length; r++) {
        engines[r] = engine(policy, r);
        arrivalRouters[r] = routers == null ? null : routers.apply(policy, engines[r]);
      }
      routed = new int[backends.length];
      ttft = new double[requests.size()];
      e2e = new double[requests.size()];
    }

    /** Replica {@code r}'s engine: its own index, scorer, breakers and limiter. */
    private RoutingEngine engine(String policy, int r) {
      RoutingEngineBuilder b =
          RoutingEngine.builder()
              .ticker(() -> now)
              .maxBackends(Math.max(16, config.backends()))
              .hasher(HASHER)
              .prefixIndex(
                  RadixPrefixIndex.builder()
                      .maxBackends(Math.max(16, config.backends()))
                      .predictionTtl(Duration.ofSeconds(config.kvEvents() ? 5 : 0))
                      .capacityFeedback(cacheFeedback)
                      .build())
              .scorer(scorer(policy))
              .health(
                  CircuitBreakers.builder().maxBackends(Math.max(16, config.backends())).build());
      if (objective != null) {
        b.capacityObjective(objective);
      }
      if (config.quotaTokensPerMinute() > 0) {
        b.limiter(
            TenantTokenBuckets.builder()
                .defaultQuota(Quota.perMinute(config.quotaTokensPerMinute()))
                .build());
      }
      if (replicaSetup.shared() && replicaSetup.replicas() > 1) {
        b.predictionSink(
            (backend, ks, n, held) -> {
              if (config.kvEvents() && held >= n) {
                return; // every replica learns held blocks from the engines' events
              }
              schedule(
                  now + replicaSetup.shareDelayNanos(),
                  Type.SHARE,
                  0,
                  new Shared(r, backend.id(), Arrays.copyOf(ks, n)));
            });
      }
      for (SimBackend s : backends) {
        long told =
            routerCapacityBlocks > 0 ? routerCapacityBlocks : config.profile().capacityBlocks();
        b.backend(Backend.of(s.id, "m").withCapacityBlocks(told));
      }
      return b.build();
    }

    void schedule(long time, Type type, int idx, Object payload) {
      queue.add(new Event(time, seq++, type, idx, payload));
    }

    @SuppressWarnings("unchecked")
    PolicyResult run() {
      if (kvWire && config.kvEvents()) {
        wireBatch = new List[backends.length];
        wireBatchTime = new long[backends.length];
        wire =
            new WireLink(
                backends.length,
                (b, events) -> {
                  for (RoutingEngine engine : engines) {
                    engine.applyKvEvents("b" + b, events);
                  }
                });
        try {
          return simulate();
        } finally {
          (progress != null ? progress : System.err).printf("  %s: %s%n", policy, wire.summary());
          wire.close();
        }
      }
      return simulate();
    }

    private PolicyResult simulate() {
      long wallStart = System.nanoTime();
      long lastProgress = wallStart;
      for (int i = 0; i < requests.size(); i++) {
        schedule(requests.get(i).arrivalNanos(), Type.ARRIVAL, i, null);
      }
      long span = requests.isEmpty() ? 0 : requests.get(requests.size() - 1).arrivalNanos();
      for (SimConfig.Fault f : config.faults()) {
        schedule((long) (span * f.atFraction()), Type.FAULT, f.backend(), f.kind());
      }
      schedule(0, Type.SCRAPE, 0, null);
      while (!queue.isEmpty()) {
        Event e = queue.poll();
        if (wire != null && wire.pending() && !(e.type == Type.KV_DELIVER && e.time == now)) {
          awaitWire(); // everything published at an instant is applied before time moves on
        }
        now = e.time;
        switch (e.type) {
          case ARRIVAL -> arrive(e.index);
          case STEP_END -> stepEnd(e.index, (Long) e.payload);
          case SCRAPE -> scrape();
          case KV_DELIVER -> {
            if (wire != null) {
              List<KvEvent> batch = castEvents(e.payload);
              if (wireBatch[e.index] == batch) {
                wireBatch[e.index] = null; // later events start a new batch
              }
              wire.send(e.index, batch, now / 1e9, wireDrop());
              continue;
            }
            for (RoutingEngine engine : engines) {
              engine.applyKvEvents("b" + e.index, castEvents(e.payload));
            }
          }
          case FAULT -> fault(e.index, (SimConfig.Fault.Kind) e.payload);
          case SHARE -> share((Shared) e.payload);
        }
        if (progress != null && (arrived & 1023) == 0) {
          long wall = System.nanoTime();
          if (wall - lastProgress > 2_000_000_000L) {
            lastProgress = wall;
            progress.printf(
                "  %-20s sim %7.1f s  arrived %d/%d  done %d%n",
                policy, now / 1e9, arrived, requests.size(), completed);
          }
        }
      }
      if (lowerTierBlocks > 0 && progress != null) {
        long reloaded = 0;
        for (SimBackend b : backends) {
          reloaded += b.reloadedTokens;
        }
        progress.printf(
            "  %-20s lower tier: %d prompt tokens reloaded (%.2f %% of prompt tokens)%n",
            policy, reloaded, promptTokens == 0 ? 0.0 : 100.0 * reloaded / promptTokens);
      }
      if (blendFraction >= 0) {
        double share = promptTokens == 0 ? 0.0 : (double) blendTokens / promptTokens;
        blendShares.put(policy, share);
        if (progress != null) {
          progress.printf(
              "  %-20s blend: %d prompt tokens reused from chunks held elsewhere (%.2f %%)%n",
              policy, blendTokens, 100 * share);
        }
      }
      return result((System.nanoTime() - wallStart) / 1e9);
    }

    private void awaitWire() {
      try {
        wire.await();
      } catch (InterruptedException x) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for the KV-event wire", x);
      }
    }

    private boolean wireDrop() {
      return config.kvEventDropRate() > 0 && wireRnd.nextDouble() < config.kvEventDropRate();
    }

    @SuppressWarnings("unchecked")
    private List<KvEvent> castEvents(Object payload) {
      return (List<KvEvent>) payload;
    }

    void arrive(int i) {
      arrived++;
      SimRequest r = requests.get(i);
      long[] t = tenants.computeIfAbsent(r.tenant(), k -> new long[2]);
      t[0]++;
      int replica = engines.length == 1 ? 0 : replicaRnd.nextInt(engines.length);
      RoutingEngine engine = engines[replica];
      RouteRequest.Builder rb =
          RouteRequest.builder(r.tenant(), "m")
              .prompt(Prompt.ofTokens(r.tokens()))
              .maxOutputTokens(maxTokens) // the client's cap, not the sampled length
              .session(r.session())
              .requestId(Integer.toString(r.id()));
      if (r.media() >= 0) {
        rb.media("img-" + r.media());
      }
      ArrivalRouter router = arrivalRouters[replica];
      if (tap != null) {
        tap.beforeRoute(i, r, keys[i], backends, now);
      }
      RouteDecision d = router == null ? engine.route(rb.build()) : router.route(rb.build(), r);
      if (d instanceof Rejected) {
        rejected++;
        return;
      }
      t[1]++;
      dispatch((Routed) d, i);
    }

    void dispatch(Routed r, int i) {
      int b = index.get(r.backendId());
      SimBackend backend = backends[b];
      if (backend.dead) {
        r.lease().fail(Failure.of(Failure.Kind.CONNECT));
        RouteDecision next = r.lease().failover();
        if (next instanceof Routed n) {
          failovers++;
          dispatch(n, i);
        } else {
          failed++;
        }
        return;
      }
      routed[b]++;
      if (tap != null) {
        tap.routed(i, b);
      }
      SimBackend.Seq s = new SimBackend.Seq(requests.get(i), r, keys[i], now);
      s.attempt = i; // request index
      backend.enqueue(s);
      kick(b);
    }

    void kick(int b) {
      SimBackend backend = backends[b];
      if (backend.stepping || backend.dead) {
        return;
      }
      long d = backend.planStep();
      if (d > 0) {
        backend.stepping = true;
        backend.stepEndsAt = now + d;
        schedule(now + d, Type.STEP_END, b, d);
      }
    }

    void stepEnd(int b, long duration) {
      SimBackend backend = backends[b];
      backend.stepping = false;
      if (backend.dead) {
        return;
      }
      backend.finishStep(now, duration);
      kick(b);
    }

    void scrape() {
      boolean work = false;
      for (SimBackend b : backends) {
        if (!b.dead) {
          LoadReport report = LoadReport.of(b.running.size(), b.waiting.size(), b.kvUsage());
          for (RoutingEngine engine : engines) {
            engine.backends().reportLoad(b.id, report);
          }
        }
        work |= b.hasWork();
      }
      if (objective != null && arrived < requests.size()) {
        plan = engines[0].inspect().capacity("m").orElse(null); // the last plan before arrivals end
      }
      if (work || arrived < requests.size()) {
        schedule(now + config.scrapeIntervalNanos(), Type.SCRAPE, 0, null);
      }
    }

    /** A shared prediction reaches every replica but the one that routed it. */
    void share(Shared p) {
      for (int r = 0; r < engines.length; r++) {
        if (r != p.from()) {
          engines[r].applyPredicted(p.backend(), p.keys(), p.keys().length);
        }
      }
    }

    void fault(int b, SimConfig.Fault.Kind kind) {
      SimBackend backend = backends[b];
      if (kind == SimConfig.Fault.Kind.SLOW_3X || kind == SimConfig.Fault.Kind.SLOW_2X) {
        backend.slowdown = kind == SimConfig.Fault.Kind.SLOW_3X ? 3.0 : 2.0;
        return;
      }
      backend.dead = true;
      for (SimBackend.Seq s : backend.drainAll()) {
        Routed r = (Routed) s.lease;
        r.lease().fail(Failure.of(Failure.Kind.CONNECT));
        if (s.firstTokenSent) {
          failed++;
          continue;
        }
        RouteDecision next = r.lease().failover();
        if (next instanceof Routed n) {
          failovers++;
          dispatch(n, s.attempt);
        } else {
          failed++;
        }
      }
    }

    @Override
    public void onFirstToken(SimBackend.Seq s, long t) {
      ((Routed) s.lease).lease().firstToken();
      ttft[ttftCount++] = (t - s.request.arrivalNanos()) / 1e6;
      if (tap != null) {
        tap.firstToken(s.attempt, (t - s.request.arrivalNanos()) / 1e6);
      }
    }

    @Override
    public void onFinished(SimBackend.Seq s, long t) {
      int prompt = s.promptLength();
      int hit = Math.min(prompt, s.hitBlocks * BackendProfile.BLOCK);
      ((Routed) s.lease).lease().complete(new Usage(prompt, s.generated, hit));
      completed++;
      e2e[e2eCount++] = (t - s.request.arrivalNanos()) / 1e6;
      hitTokens += hit;
      promptTokens += prompt;
      hitBlocks += s.hitBlocks;
      fullBlocks += s.keys.length;
      blendTokens += (long) s.blendBlocks * BackendProfile.BLOCK;
      outputTokens += s.generated;
    }

    @Override
    public void onStored(SimBackend backend, long[] ks, int from, int to, int[] tokens) {
      if (!config.kvEvents() || (wire == null && drop())) {
        return;
      }
      long[] hashes = Arrays.copyOfRange(ks, from, to);
      int[] ids =
          Arrays.copyOfRange(tokens, from * BackendProfile.BLOCK, to * BackendProfile.BLOCK);
      Long parent = from == 0 ? null : ks[from - 1];
      deliver(backend, List.of(new BlockStored(hashes, parent, ids, BackendProfile.BLOCK, "GPU")));
    }

    @Override
    public void onRemoved(SimBackend backend, long key) {
      if (!config.kvEvents() || (wire == null && drop())) {
        return;
      }
      deliver(backend, List.of(BlockRemoved.of(key)));
    }

    @Override
    public void onOffloaded(SimBackend backend, long key) {
      if (!config.kvEvents() || (wire == null && drop())) {
        return;
      }
      deliver(
          backend,
          List.of(
              new BlockStored(new long[] {key}, null, new int[0], BackendProfile.BLOCK, "CPU")));
    }

    @Override
    public void onDroppedLower(SimBackend backend, long key) {
      if (!config.kvEvents() || (wire == null && drop())) {
        return;
      }
      deliver(backend, List.of(new BlockRemoved(new long[] {key}, "CPU")));
    }

    private boolean drop() {
      return config.kvEventDropRate() > 0 && rnd.nextDouble() < config.kvEventDropRate();
    }

    private void deliver(SimBackend backend, List<KvEvent> batch) {
      if (wire != null) { // one batch per backend and instant, as an engine step publishes
        int b = index.get(backend.id);
        if (wireBatch[b] != null && wireBatchTime[b] == now) {
          wireBatch[b].addAll(batch);
          return;
        }
        wireBatch[b] = new ArrayList<>(batch);
        wireBatchTime[b] = now;
        schedule(now + config.kvEventDelayNanos(), Type.KV_DELIVER, b, wireBatch[b]);
        return;
      }
      schedule(now + config.kvEventDelayNanos(), Type.KV_DELIVER, index.get(backend.id), batch);
    }

    PolicyResult result(double wallSeconds) {
      double[] t = Arrays.copyOf(ttft, ttftCount);
      double[] e = Arrays.copyOf(e2e, e2eCount);
      Arrays.sort(t);
      Arrays.sort(e);
      sortedTtft = t;
      Map<String, double[]> tenantStats = new LinkedHashMap<>();
      tenants.forEach((k, v) -> tenantStats.put(k, new double[] {v[0], v[1]}));
      double makespan = now / 1e9;
      if (progress != null && (routerCapacityBlocks > 0 || cacheFeedback)) {
        progress.printf("  %s: %s%n", policy, loopSummary(engines[0]));
      }
      return new PolicyResult(
          workload,
          policy,
          requests.size(),
          completed,
          rejected,
          failed,
          failovers,
          promptTokens == 0 ? 0 : (double) hitTokens / promptTokens,
          fullBlocks == 0 ? 0 : (double) hitBlocks / fullBlocks,
          PolicyResult.mean(t),
          PolicyResult.percentile(t, 0.50),
          PolicyResult.percentile(t, 0.95),
          PolicyResult.percentile(t, 0.99),
          PolicyResult.mean(e),
          PolicyResult.percentile(e, 0.95),
          makespan == 0 ? 0 : outputTokens / makespan,
          PolicyResult.imbalance(routed),
          routed.clone(),
          tenantStats,
          makespan,
          wallSeconds,
          sample(t, 400));
    }
  }

  /**
   * The router's side of the loop ({@code --router-capacity-blocks}): the engine's reported cached
   * tokens against its predictions, summed over backends, and the capacities its index models.
   */
  static String loopSummary(RoutingEngine engine) {
    long reports = 0;
    long over = 0;
    long stale = 0;
    long under = 0;
    long predicted = 0;
    long cached = 0;
    long minCap = Long.MAX_VALUE;
    long maxCap = 0;
    for (var b : engine.inspect().backends()) {
      var a = b.cacheAccuracy();
      reports += a.reports();
      over += a.overPredictedTokens();
      stale += a.staleTokens();
      under += a.underPredictedTokens();
      predicted += a.predictedTokens();
      cached += a.engineCachedTokens();
      Long cap = b.indexSignals().get(dev.prefixrouter.api.spi.IndexSignal.CAPACITY_BLOCKS);
      if (cap != null) {
        minCap = Math.min(minCap, cap);
        maxCap = Math.max(maxCap, cap);
      }
    }
    return String.format(
        java.util.Locale.ROOT,
        "loop: %d reports, predicted %d / engine %d tokens, over %d (stale %d), under %d;"
            + " modelled capacity %d..%d blocks",
        reports,
        predicted,
        cached,
        over,
        stale,
        under,
        minCap == Long.MAX_VALUE ? 0 : minCap,
        maxCap);
  }

  private static double[] sample(double[] sorted, int n) {
    if (sorted.length <= n) {
      return sorted.clone();
    }
    double[] out = new double[n];
    for (int i = 0; i < n; i++) {
      out[i] = sorted[(int) ((long) i * (sorted.length - 1) / (n - 1))];
    }
    return out;
  }

  PolicyResult run(String policy) {
    return new Run(policy).run();
  }

  /**
   * A policy by name (a {@code @variant} suffix ignored); {@code NAME+media} wraps {@code NAME} in
   * {@link MediaAffinity} with the profile's encode time (as a host would configure it from its
   * model).
   */
  @SuppressWarnings("deprecation") // MediaAffinity, compared with its replacement
  private Scorer scorer(String policy) {
    java.util.function.Supplier<Scorer> extra = extraScorers.get(policy);
    if (extra != null) {
      return extra.get();
    }
    int variant = policy.indexOf('@');
    if (variant > 0) {
      policy = policy.substring(0, variant);
    }
    int term = policy.indexOf("+mterm");
    if (term > 0) { // est-ttft with the media-affinity cost term, "+mterm[-qN]"
      if (!policy.startsWith("est-ttft+")) {
        throw new IllegalArgumentException("+mterm needs est-ttft, was " + policy);
      }
      String rest = policy.substring(term + "+mterm".length());
      MediaAffinityTerm.Builder t =
          MediaAffinityTerm.builder()
              .encodeMillis(config.profile().encodeMs() > 0 ? config.profile().encodeMs() : 30)
              .perBackend(Math.max(1, config.profile().encoderItems()));
      if (rest.startsWith("-q")) {
        t.maxQueued(Integer.parseInt(rest.substring(2)));
      }
      return EstimatedTtftScorer.builder().addTerm(t.build()).build();
    }
    if (policy.endsWith("+media")) {
      Scorer base = Policies.byName(policy.substring(0, policy.length() - "+media".length()));
      double encodeMs = config.profile().encodeMs() > 0 ? config.profile().encodeMs() : 30;
      int items = Math.max(1, config.profile().encoderItems());
      return MediaAffinity.wrap(base, encodeMs, items, Duration.ofMinutes(10));
    }
    return Policies.byName(policy);
  }

  /** One run and the fleet's encoder-cache hits and misses. */
  record MediaRun(PolicyResult result, long encoderHits, long encoderMisses) {}

  MediaRun runMedia(String policy) {
    Run r = new Run(policy);
    PolicyResult result = r.run();
    long hits = 0;
    long misses = 0;
    for (SimBackend b : r.backends) {
      hits += b.encoderHits;
      misses += b.encoderMisses;
    }
    return new MediaRun(result, hits, misses);
  }

  /** One run of a policy with capacity planning on. */
  record CapacityRun(PolicyResult result, CapacityPlan plan, double[] sortedTtft) {}

  CapacityRun runWithPlanner(String policy, CapacityObjective objective) {
    Run r = new Run(policy, objective);
    PolicyResult result = r.run();
    return new CapacityRun(result, r.plan, r.sortedTtft);
  }

  List<PolicyResult> runAll(List<String> policies) {
    List<PolicyResult> out = new ArrayList<>();
    for (String p : policies) {
      if (progress != null) {
        progress.printf("  %s: %s ...%n", workload, p);
      }
      out.add(run(p));
    }
    return out;
  }
}
