package dev.prefixrouter.bench.sim;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BlockRemoved;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.DisaggregatedRouter;
import dev.prefixrouter.api.DisaggregatedRouter.DecodeRule;
import dev.prefixrouter.api.KvEvent;
import dev.prefixrouter.api.LoadReport;
import dev.prefixrouter.api.PairDecision;
import dev.prefixrouter.api.PairRouted;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.Role;
import dev.prefixrouter.api.RouteDecision;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.RoutingEngineBuilder;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.radix.RadixPrefixIndex;
import dev.prefixrouter.scoring.CircuitBreakers;
import dev.prefixrouter.scoring.Policies;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.SplittableRandom;

/**
 * Prefill/decode disaggregation on the {@link #workload pd} workload (issue #21): the same fleet
 * size served colocated (every backend both phases, the engine's plain route) or disaggregated
 * (prefill-only and decode-only backends, {@link DisaggregatedRouter} pairs, the KV cache moved at
 * a cost per prompt token that depends on whether both backends share a rack). Backends sit in two
 * racks (even ids in rack 0, odd in rack 1), so each rack holds half of each role.
 *
 * <p>Times per request: TTFT is when the first token reaches the client (colocated: the prefill
 * step that yields it; disaggregated: the prefill's first token plus the KV transfer, when the
 * decode backend takes over); TPOT is the mean time per later output token. No link contention is
 * modelled (each transfer takes its own time whatever else moves).
 */
final class PdCheck {
  /** KV transfer, ns per prompt token within a rack: 128 KiB per token at about 25 GB/s. */
  static final double SAME_RACK_NANOS = 5_000;

  /** Across racks: a quarter of the bandwidth. */
  static final double CROSS_RACK_NANOS = 20_000;

  private PdCheck() {}

  /**
   * One way of serving the fleet; {@code localPrefill} > 0: {@link
   * DisaggregatedRouter.Builder#localPrefillTokens conditional disaggregation} at that threshold;
   * {@code budget} > 0: the backends' per-step token budget instead of the profile's.
   */
  record Setup(
      String name,
      boolean disaggregated,
      String prefillPolicy,
      DecodeRule rule,
      boolean toldCost,
      int localPrefill,
      int budget) {
    Setup(String name, boolean disaggregated, String prefillPolicy, DecodeRule rule, boolean told) {
      this(name, disaggregated, prefillPolicy, rule, told, 0, 0);
    }
  }

  /**
   * The setups run: the five standing ones, then {@code -Dpd.local=N,...} (ours with conditional
   * disaggregation at N uncached tokens) and {@code -Dpd.budgets=B,...} (colocated est-ttft with a
   * B-token step budget, vLLM's {@code --max-num-batched-tokens}); {@code -Dpd.only=a,b} keeps the
   * setups whose name contains one of the strings.
   */
  static List<Setup> setups() {
    List<Setup> all =
        new ArrayList<>(
            List.of(
                new Setup("colocated est-ttft", false, "est-ttft", null, false),
                new Setup("colocated dynamo-kv", false, "dynamo-kv", null, false),
                new Setup(
                    "pd est-ttft + est-cost", true, "est-ttft", DecodeRule.ESTIMATED_COST, true),
                new Setup(
                    "pd est-ttft + least-active",
                    true,
                    "est-ttft",
                    DecodeRule.LEAST_ACTIVE_TOKENS,
                    false),
                new Setup(
                    "pd dynamo (kv + least-active)",
                    true,
                    "dynamo-kv",
                    DecodeRule.LEAST_ACTIVE_TOKENS,
                    false)));
    for (int n : ints(System.getProperty("pd.local", ""))) {
      all.add(
          new Setup(
              "pd ours + local<=" + n, true, "est-ttft", DecodeRule.ESTIMATED_COST, true, n, 0));
    }
    for (int n : ints(System.getProperty("pd.budgets", ""))) {
      all.add(new Setup("colocated est-ttft budget " + n, false, "est-ttft", null, false, 0, n));
    }
    String only = System.getProperty("pd.only", "");
    if (only.isBlank()) {
      return all;
    }
    List<Setup> kept = new ArrayList<>();
    for (Setup s : all) {
      for (String part : only.split(",")) {
        if (!part.isBlank() && s.name().contains(part.trim())) {
          kept.add(s);
          break;
        }
      }
    }
    return kept;
  }

  private static int[] ints(String csv) {
    return Arrays.stream(csv.split(","))
        .map(String::trim)
        .filter(x -> !x.isEmpty())
        .mapToInt(Integer::parseInt)
        .toArray();
  }

  /** SLO pairs for goodput, {@code -Dpd.slo=ttftMs:tpotMs,...}. */
  static double[][] slos() {
    String csv = System.getProperty("pd.slo", "100:6.5,200:7,400:8");
    List<double[]> out = new ArrayList<>();
    for (String pair : csv.split(",")) {
      String[] xy = pair.trim().split(":");
      out.add(new double[] {Double.parseDouble(xy[0]), Double.parseDouble(xy[1])});
    }
    return out.toArray(new double[0][]);
  }

  /**
   * Long-document questions: 64 documents of 2,048 tokens (Zipf-like popularity), each request one
   * document plus a unique question of 1,024-4,095 tokens, 200-499 output tokens; Poisson arrivals
   * at {@code 16 × rateScale} per second.
   */
  static List<SimRequest> workload(double rateScale, long seed, int n) {
    SplittableRandom r = new SplittableRandom(seed);
    long[] at = Workloads.poisson(n, 16 * rateScale, seed + 17);
    double[] cdf = new double[64];
    double sum = 0;
    for (int k = 0; k < cdf.length; k++) {
      sum += 1.0 / (k + 1);
      cdf[k] = sum;
    }
    List<SimRequest> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      double u = r.nextDouble() * sum;
      int doc = 0;
      while (doc < cdf.length - 1 && cdf[doc] < u) {
        doc++;
      }
      int[] tokens =
          Workloads.concat(
              Workloads.segment(50_000_000L + doc, 2048),
              Workloads.segment(51_000_000L + i, 1024 + r.nextInt(3072)));
      out.add(new SimRequest(i, at[i], "t", null, tokens, 200 + r.nextInt(300)));
    }
    return out;
  }

  static List<PolicyResult> run(
      Compare.Options o, SimConfig base, PrintStream out, PrintStream err) {
    int n = o.requests == Integer.MAX_VALUE ? 3000 : o.requests;
    int backends = o.backendsSet ? o.backends : 8;
    int prefill =
        Math.max(1, Integer.getInteger("pd.prefill", backends / 2)); // -Dpd.prefill=P: P of N
    SimConfig config = base.withBackends(backends);
    List<SimRequest> requests = workload(o.rateScale, o.seed, n);
    String name =
        String.format(
            Locale.ROOT,
            "(k) pd: 2k-token documents + 1-4k questions, 200-499 out, %.0f req/s, %d backends"
                + " (pd: %d prefill + %d decode), transfer %.0f/%.0f us per 1k tokens in/across"
                + " racks",
            16 * o.rateScale,
            backends,
            prefill,
            backends - prefill,
            SAME_RACK_NANOS / 1e3,
            CROSS_RACK_NANOS / 1e3);
    err.printf(Locale.ROOT, "%s: %d requests%n", name, requests.size());
    long[][] keys = new long[requests.size()][];
    for (int i = 0; i < keys.length; i++) {
      keys[i] =
          BlockHasher.keysOf(FleetSimulator.HASHER, Prompt.ofTokens(requests.get(i).tokens()), 0);
    }
    List<PolicyResult> results = new ArrayList<>();
    List<String> lines = new ArrayList<>();
    for (Setup s : setups()) {
      err.printf(Locale.ROOT, "  %s ...%n", s.name());
      Run run = new Run(s, config, prefill, requests, keys);
      results.add(run.run(name));
      lines.add(run.line());
    }
    out.printf(Locale.ROOT, "%n%s%n", name);
    StringBuilder sloHeads = new StringBuilder();
    for (double[] slo : slos()) {
      sloHeads.append(String.format(Locale.ROOT, " %9s", "ok" + (int) slo[0] + "/" + slo[1]));
    }
    out.printf(
        Locale.ROOT,
        "  %-30s %6s %8s %8s %8s %7s %7s %7s %7s %8s %8s %6s %8s %6s %6s %6s%s%n",
        "setup",
        "done",
        "ttft p50",
        "ttft p95",
        "ttft p99",
        "tpot50",
        "tpot95",
        "itl99",
        "itl999",
        "e2e p50",
        "e2e p95",
        "hit %",
        "xfer ms",
        "cross%",
        "local%",
        "preem",
        sloHeads);
    lines.forEach(out::println);
    return results;
  }

  /** A request's pair in flight, or its colocated route. */
  private static final class Flight {
    final int index;
    final Routed routed; // colocated
    final PairRouted pair; // disaggregated
    long transferNanos;
    long clientFirstToken;
    long lastToken;
    boolean whole; // a pair served whole on one backend (conditional disaggregation)

    Flight(int index, Routed routed, PairRouted pair) {
      this.index = index;
      this.routed = routed;
      this.pair = pair;
    }
  }

  private record Event(long time, long seq, int type, int index, Object payload) {}

  private static final int ARRIVAL = 0;
  private static final int STEP_END = 1;
  private static final int SCRAPE = 2;
  private static final int TRANSFER = 3;
  private static final int KV = 4;
  private static final int ITL_BINS = 50_000; // 0.1 ms each, up to 5 s

  /** One setup's simulation. */
  private static final class Run implements SimBackend.Listener {
    final Setup setup;
    final SimConfig config;
    final List<SimRequest> requests;
    final long[][] keys;
    final SimBackend[] backends;
    final Map<String, Integer> byId = new java.util.HashMap<>();
    final RoutingEngine engine;
    final DisaggregatedRouter pd;
    final PriorityQueue<Event> queue =
        new PriorityQueue<>(
            (a, b) -> a.time != b.time ? Long.compare(a.time, b.time) : Long.compare(a.seq, b.seq));
    long seq;
    long now;
    final double[] ttft;
    final double[] tpot;
    final double[] e2e;
    final double[] ttftBy; // by request index; NaN until known
    final double[] tpotBy;
    final long[] itl = new long[ITL_BINS]; // inter-token gaps in 0.1 ms bins
    long localPairs;
    int ttftCount;
    int tpotCount;
    int e2eCount;
    int rejected;
    int completed;
    int arrived;
    long hitTokens;
    long promptTokens;
    long hitBlocks;
    long fullBlocks;
    long outputTokens;
    long transfers;
    long crossRack;
    double transferMsSum;
    final int[] routed;
    final int maxTokens; // what the router is told of every request's output

    Run(Setup setup, SimConfig config, int prefill, List<SimRequest> requests, long[][] keys) {
      this.setup = setup;
      this.config = config;
      this.requests = requests;
      this.keys = keys;
      this.maxTokens = Workloads.clientMaxTokens(requests);
      int n = config.backends();
      backends = new SimBackend[n];
      BackendProfile profile = config.profile();
      if (setup.budget() > 0) {
        profile =
            new BackendProfile(
                profile.stepBaseMs(),
                profile.prefillMsPerToken(),
                profile.decodeMsPerToken(),
                setup.budget(),
                profile.maxSeqs(),
                profile.capacityBlocks(),
                profile.encodeMs(),
                profile.encoderItems());
      }
      RoutingEngineBuilder b =
          RoutingEngine.builder()
              .ticker(() -> now)
              .maxBackends(Math.max(16, n))
              .hasher(FleetSimulator.HASHER)
              .prefixIndex(
                  RadixPrefixIndex.builder()
                      .maxBackends(Math.max(16, n))
                      .predictionTtl(Duration.ofSeconds(config.kvEvents() ? 5 : 0))
                      .build())
              .scorer(Policies.byName(setup.prefillPolicy()))
              .health(CircuitBreakers.builder().maxBackends(Math.max(16, n)).build());
      for (int i = 0; i < n; i++) {
        String id = "b" + i;
        backends[i] = new SimBackend(id, profile, this);
        backends[i].onToken = this::token;
        byId.put(id, i);
        Backend d = Backend.of(id, "m").withCapacityBlocks(config.profile().capacityBlocks());
        if (setup.disaggregated()) {
          // the first half of each rack prefills: b0, b1, ... alternate racks
          d = d.withRole(i < prefill ? Role.PREFILL : Role.DECODE);
        }
        b.backend(d);
      }
      engine = b.build();
      pd =
          setup.disaggregated()
              ? DisaggregatedRouter.builder(engine)
                  .decodeRule(setup.rule())
                  .transferCost(
                      setup.toldCost()
                          ? (p, d) -> transferNanosPerToken(p.id(), d.id())
                          : (p, d) -> 0)
                  .localPrefillTokens(setup.localPrefill())
                  .build()
              : null;
      ttftBy = new double[requests.size()];
      tpotBy = new double[requests.size()];
      Arrays.fill(ttftBy, Double.NaN);
      Arrays.fill(tpotBy, Double.NaN);
      ttft = new double[requests.size()];
      tpot = new double[requests.size()];
      e2e = new double[requests.size()];
      routed = new int[n];
    }

    double transferNanosPerToken(String p, String d) {
      return rack(p) == rack(d) ? SAME_RACK_NANOS : CROSS_RACK_NANOS;
    }

    int rack(String id) {
      return byId.get(id) % 2;
    }

    void schedule(long time, int type, int index, Object payload) {
      queue.add(new Event(time, seq++, type, index, payload));
    }

    PolicyResult run(String workload) {
      long wallStart = System.nanoTime();
      for (int i = 0; i < requests.size(); i++) {
        schedule(requests.get(i).arrivalNanos(), ARRIVAL, i, null);
      }
      schedule(0, SCRAPE, 0, null);
      while (!queue.isEmpty()) {
        Event e = queue.poll();
        now = e.time();
        switch (e.type()) {
          case ARRIVAL -> arrive(e.index());
          case STEP_END -> stepEnd(e.index(), (Long) e.payload());
          case SCRAPE -> scrape();
          case TRANSFER -> transferDone((Flight) e.payload());
          case KV -> kv(e.index(), e.payload());
          default -> throw new IllegalStateException("event " + e.type());
        }
      }
      double[] t = Arrays.copyOf(ttft, ttftCount);
      double[] x = Arrays.copyOf(e2e, e2eCount);
      Arrays.sort(t);
      Arrays.sort(x);
      double makespan = now / 1e9;
      return new PolicyResult(
          workload,
          setup.name(),
          requests.size(),
          completed,
          rejected,
          0,
          0,
          promptTokens == 0 ? 0 : (double) hitTokens / promptTokens,
          fullBlocks == 0 ? 0 : (double) hitBlocks / fullBlocks,
          PolicyResult.mean(t),
          PolicyResult.percentile(t, 0.50),
          PolicyResult.percentile(t, 0.95),
          PolicyResult.percentile(t, 0.99),
          PolicyResult.mean(x),
          PolicyResult.percentile(x, 0.95),
          makespan == 0 ? 0 : outputTokens / makespan,
          PolicyResult.imbalance(routed),
          routed.clone(),
          Map.of(),
          makespan,
          (System.nanoTime() - wallStart) / 1e9,
          new double[0]);
    }

    String line() {
      double[] t = Arrays.copyOf(ttft, ttftCount);
      double[] p = Arrays.copyOf(tpot, tpotCount);
      double[] x = Arrays.copyOf(e2e, e2eCount);
      Arrays.sort(t);
      Arrays.sort(p);
      Arrays.sort(x);
      long preemptions = 0;
      for (SimBackend b : backends) {
        preemptions += b.preemptions;
      }
      StringBuilder slo = new StringBuilder();
      for (double[] o : slos()) {
        slo.append(String.format(Locale.ROOT, " %9.1f", attainment(o[0], o[1])));
      }
      return String.format(
          Locale.ROOT,
          "  %-30s %6d %8.1f %8.1f %8.1f %7.2f %7.2f %7.1f %7.1f %8.0f %8.0f %6.1f %8.1f %6.1f %6.1f"
              + " %6d%s",
          setup.name(),
          completed,
          PolicyResult.percentile(t, 0.50),
          PolicyResult.percentile(t, 0.95),
          PolicyResult.percentile(t, 0.99),
          PolicyResult.percentile(p, 0.50),
          PolicyResult.percentile(p, 0.95),
          itlPercentile(0.99),
          itlPercentile(0.999),
          PolicyResult.percentile(x, 0.50),
          PolicyResult.percentile(x, 0.95),
          promptTokens == 0 ? 0 : 100.0 * hitTokens / promptTokens,
          transfers == 0 ? 0 : transferMsSum / transfers,
          transfers == 0 ? 0 : 100.0 * crossRack / transfers,
          arrived == 0 ? 0 : 100.0 * localPairs / arrived,
          preemptions,
          slo);
    }

    /** The ITL percentile {@code q} over every decode token, ms. */
    double itlPercentile(double q) {
      long total = 0;
      for (long c : itl) {
        total += c;
      }
      long rank = (long) Math.ceil(q * total);
      long seen = 0;
      for (int b = 0; b < itl.length; b++) {
        seen += itl[b];
        if (seen >= rank && seen > 0) {
          return b / 10.0;
        }
      }
      return 0;
    }

    /** Percent of all requests with TTFT and TPOT within the objective (failed count as missed). */
    double attainment(double ttftMs, double tpotMs) {
      int ok = 0;
      for (int i = 0; i < ttftBy.length; i++) {
        if (ttftBy[i] <= ttftMs && (Double.isNaN(tpotBy[i]) || tpotBy[i] <= tpotMs)) {
          ok++;
        }
      }
      return 100.0 * ok / ttftBy.length;
    }

    void token(SimBackend.Seq s, long t) {
      Flight f = (Flight) s.lease;
      if (f.lastToken > 0) {
        long gap = t - f.lastToken;
        itl[(int) Math.min(ITL_BINS - 1, gap / 100_000)]++;
      }
      f.lastToken = t;
    }

    void arrive(int i) {
      arrived++;
      SimRequest r = requests.get(i);
      RouteRequest request =
          RouteRequest.builder(r.tenant(), "m")
              .prompt(Prompt.ofTokens(r.tokens()))
              .maxOutputTokens(maxTokens) // the client's cap, not the sampled length
              .requestId(Integer.toString(r.id()))
              .build();
      if (!setup.disaggregated()) {
        RouteDecision d = engine.route(request);
        if (!(d instanceof Routed routedTo)) {
          rejected++;
          return;
        }
        Flight f = new Flight(i, routedTo, null);
        enqueue(routedTo.backendId(), new SimBackend.Seq(r, f, keys[i], now));
        return;
      }
      PairDecision d = pd.route(request);
      if (!(d instanceof PairRouted pair)) {
        rejected++;
        return;
      }
      Flight f = new Flight(i, null, pair);
      if (pair.colocated()) { // served whole where it prefills: no leg, no transfer
        f.whole = true;
        localPairs++;
        enqueue(pair.decode().id(), new SimBackend.Seq(r, f, keys[i], now));
        return;
      }
      // the prefill leg: the prompt and its first token only
      SimRequest prefillOnly =
          new SimRequest(r.id(), r.arrivalNanos(), r.tenant(), null, r.tokens(), 1);
      enqueue(pair.prefillBackend().id(), new SimBackend.Seq(prefillOnly, f, keys[i], now));
    }

    void enqueue(String backendId, SimBackend.Seq s) {
      int b = byId.get(backendId);
      routed[b]++;
      backends[b].enqueue(s);
      kick(b);
    }

    void kick(int b) {
      SimBackend backend = backends[b];
      if (backend.stepping) {
        return;
      }
      long d = backend.planStep();
      if (d > 0) {
        backend.stepping = true;
        schedule(now + d, STEP_END, b, d);
      }
    }

    void stepEnd(int b, long duration) {
      backends[b].stepping = false;
      backends[b].finishStep(now, duration);
      kick(b);
    }

    void scrape() {
      boolean work = false;
      for (SimBackend b : backends) {
        engine
            .backends()
            .reportLoad(b.id, LoadReport.of(b.running.size(), b.waiting.size(), b.kvUsage()));
        work |= b.hasWork();
      }
      if (work || arrived < requests.size() || !queue.isEmpty()) {
        schedule(now + config.scrapeIntervalNanos(), SCRAPE, 0, null);
      }
    }

    @Override
    public void onFirstToken(SimBackend.Seq s, long t) {
      Flight f = (Flight) s.lease;
      if (f.routed != null || f.whole) {
        if (f.routed != null) {
          f.routed.lease().firstToken();
        } else {
          f.pair.lease().firstToken();
        }
        f.clientFirstToken = t;
        f.lastToken = t;
        ttft[ttftCount++] = (t - s.request.arrivalNanos()) / 1e6;
        ttftBy[f.index] = ttft[ttftCount - 1];
        return;
      }
      // prefill done: the prefill leg ends, the KV cache moves to the decode backend
      f.pair.lease().firstToken();
      String p = f.pair.prefillBackend().id();
      String d = f.pair.decode().id();
      long nanos = 0;
      if (!p.equals(d)) {
        nanos = (long) (transferNanosPerToken(p, d) * s.promptLength());
        transfers++;
        transferMsSum += nanos / 1e6;
        if (rack(p) != rack(d)) {
          crossRack++;
        }
      }
      f.transferNanos = nanos;
      schedule(t + nanos, TRANSFER, 0, f);
    }

    void transferDone(Flight f) {
      SimRequest r = requests.get(f.index);
      f.clientFirstToken = now;
      f.lastToken = now;
      ttft[ttftCount++] = (now - r.arrivalNanos()) / 1e6;
      ttftBy[f.index] = ttft[ttftCount - 1];
      SimBackend.Seq s = new SimBackend.Seq(r, f, keys[f.index], now);
      s.transferred = true;
      s.firstTokenSent = true;
      s.generated = 1;
      s.firstTokenAt = now;
      enqueue(f.pair.decode().id(), s);
    }

    @Override
    public void onFinished(SimBackend.Seq s, long t) {
      Flight f = (Flight) s.lease;
      int prompt = s.promptLength();
      if (f.pair != null && s.request != requests.get(f.index)) {
        countHits(s, prompt); // the prefill leg (its own one-token request) ended
        return;
      }
      if (f.routed != null || f.whole) {
        countHits(s, prompt);
      }
      int hit = Math.min(prompt, s.hitBlocks * BackendProfile.BLOCK);
      Usage usage = new Usage(prompt, s.generated, hit);
      if (f.routed != null) {
        f.routed.lease().complete(usage);
      } else {
        f.pair.lease().complete(usage);
      }
      completed++;
      outputTokens += s.generated;
      SimRequest r = requests.get(f.index);
      e2e[e2eCount++] = (t - r.arrivalNanos()) / 1e6;
      if (s.generated > 1) {
        tpot[tpotCount++] = (t - f.clientFirstToken) / 1e6 / (s.generated - 1);
        tpotBy[f.index] = tpot[tpotCount - 1];
      }
    }

    private void countHits(SimBackend.Seq s, int prompt) {
      hitTokens += Math.min(prompt, s.hitBlocks * BackendProfile.BLOCK);
      promptTokens += prompt;
      hitBlocks += s.hitBlocks;
      fullBlocks += s.keys.length;
    }

    /**
     * With {@code --kv-events}: every backend's stored and removed blocks reach the index after the
     * configured delay (as vLLM's KV events do), so the router also sees what a decode backend
     * holds of the prompts transferred to it.
     */
    @Override
    public void onStored(SimBackend backend, long[] ks, int from, int to, int[] tokens) {
      if (!config.kvEvents()) {
        return;
      }
      long[] hashes = Arrays.copyOfRange(ks, from, to);
      int[] ids =
          Arrays.copyOfRange(tokens, from * BackendProfile.BLOCK, to * BackendProfile.BLOCK);
      Long parent = from == 0 ? null : ks[from - 1];
      schedule(
          now + config.kvEventDelayNanos(),
          KV,
          byId.get(backend.id),
          List.of(new BlockStored(hashes, parent, ids, BackendProfile.BLOCK, "GPU")));
    }

    @Override
    public void onRemoved(SimBackend backend, long key) {
      if (config.kvEvents()) {
        schedule(
            now + config.kvEventDelayNanos(),
            KV,
            byId.get(backend.id),
            List.of(BlockRemoved.of(key)));
      }
    }

    @SuppressWarnings("unchecked")
    void kv(int b, Object events) {
      engine.applyKvEvents(backends[b].id, (List<KvEvent>) events);
    }
  }
}
