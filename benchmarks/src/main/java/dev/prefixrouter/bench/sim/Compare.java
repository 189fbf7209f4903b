package dev.prefixrouter.bench.sim;

import dev.prefixrouter.scoring.Policies;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The policy comparison: the project's main job. Runs every selected policy on identical arrivals
 * and prints a table per workload; writes {@code results.json}, {@code results.csv} and {@code
 * report.html} (self-contained) to the output directory.
 */
public final class Compare {
  /**
   * Where the default comparison looks for the bundled Mooncake trace, in order: from the
   * repository root (the README's commands), from the benchmarks module, and the shared folder the
   * trace was copied from.
   */
  static final List<String> DEFAULT_TRACES =
      List.of(
          "benchmarks/traces/mooncake_synthetic_trace.jsonl",
          "traces/mooncake_synthetic_trace.jsonl",
          "../shared/traces/mooncake_synthetic_trace.jsonl");

  static Path defaultTrace() {
    for (String t : DEFAULT_TRACES) {
      Path p = Path.of(t);
      if (Files.isReadable(p)) {
        return p;
      }
    }
    return Path.of(DEFAULT_TRACES.get(0));
  }

  private static final String USAGE =
      """
      usage: java -jar benchmarks/target/benchmarks.jar [compare] [options]

        --workload NAME       default | gateway | high-cache | low-cache | multi-turn | mooncake
                              | tenants | faults | sweep | capacity | rag | media | agentic
                              | pd (prefill/decode pairs vs colocated, 3000 requests)
                              | fanout (map-reduce jobs: each request alone vs a session per job)
                              | long-chat | rl-rollout | hetero | varying-load
                                                                     (default: default)
        --trace PATH          replay a Mooncake-format JSONL trace (implies --workload mooncake)
        --backends N          simulated backends, 1..256             (default 8; gateway: 3)
        --capacity-blocks N   KV blocks per backend, 16..10000000    (default 29205)
        --rate-scale X        arrival-rate multiplier, (0, 1000]     (default 1)
        --policies a,b,c      policies to compare                    (default: all); also
                              est-ttft/-<term>[/-<rule>...]: est-ttft without those
        --requests N          cap on requests taken from a trace, or the size of the
                              shared-prefix workloads (256 groups × N/256)   (default: 4096)
        --seed N              workload seed                          (default 1)
        --kv-events [wire]    backends publish KV events to the router; with "wire",
                              through real ZMQ on loopback (PUB + replay ROUTER per
                              backend) and the real KvEventSubscriber
        --kv-event-delay-ms X event delivery delay                   (default 50)
        --scrape-ms X         how often backends report load (waiting, running, KV
                              use) to the router, (0, 60000]          (default 100;
                              llm-d's gateway polls every 50)
        --kv-event-drop X     share of event batches dropped, [0, 1] (default 0);
                              with wire, dropped on the wire and replayed
        --lower-tier X        give each backend a CPU tier of X times its GPU blocks,
                              (0, 1000]: GPU-evicted blocks move there and reload at
                              --reload-fraction of their prefill; with --kv-events, its
                              stores and removals reach the router with medium "CPU"
        --reload-fraction X   lower tier: reload cost as a share of prefill, [0, 1]
                                                                     (default 0.2)
        --blend X             engines reuse a retrieved chunk's KV at any position
                              (CacheBlend-style), recomputing X of its tokens, [0, 1]
                              (rag only; default off; 0.15 as the CacheBlend paper)
        --encode-ms X         media: encode time of an uncached image, (0, 10000] (default 40)
        --slo-ttft-ms X       capacity: the TTFT objective, (0, 3600000] (default 100)
        --slo-percentile X    capacity: its percentile, [0.5, 0.9999]  (default 0.95)
        --replicas N          router replicas in front of the fleet, each arrival to a
                              random one, each with its own engine, 1..64  (default 1)
        --shared-predictions  replicas share predictions (in-process, through
                              PredictionSink -> applyPredicted)
        --share-delay-ms X    publish-to-apply delay of a shared prediction (default 5)
        --router-capacity-blocks N  KV blocks per backend the router is told, when it
                              differs from the engines' real --capacity-blocks (default: same)
        --cache-feedback      the index learns each backend's capacity from the engines'
                              cached counts (Usage.cachedTokens; counted either way): loop on
        --out DIR             where results.json/.csv and report.html go (default sim-out)
        --help                this text

      default = (a) the published gateway workload, (b) inference-perf shared-prefix high-cache,
      and (d) the Mooncake trace at 4x its rate, on 8 backends (the trace is bundled in
      benchmarks/traces/; run from the repository root).
      policies: %s
      """;

  /** Parsed command line. */
  static final class Options {
    String workload = "default";
    Path trace;
    int backends = 8;
    boolean backendsSet;
    int capacityBlocks = 29_205;
    double rateScale = 1.0;
    List<String> policies = Policies.NAMES;
    int requests = Integer.MAX_VALUE;
    long seed = 1;
    boolean kvEvents;
    boolean kvWire;
    double kvEventDelayMs = 50;
    double scrapeMs = 100;
    double kvEventDrop;
    double lowerTier;
    double reloadFraction = 0.2;
    double blend = -1; // < 0: off
    Path out = Path.of("sim-out");
    int replicas = 1;
    boolean sharedPredictions;
    double shareDelayMs = 5;
    boolean help;
    double sloTtftMs = 100;
    double sloPercentile = 0.95;
    double encodeMs = 40;
    int routerCapacityBlocks; // 0: the engines' real capacity
    boolean cacheFeedback;

    /** The router replicas of every fleet run. */
    ReplicaSetup replicaSetup() {
      return new ReplicaSetup(replicas, sharedPredictions, (long) (shareDelayMs * 1e6));
    }

    /** Prompts per group of the shared-prefix workloads: 16, or --requests / 256. */
    int perGroup() {
      return requests == Integer.MAX_VALUE ? 16 : Math.max(1, requests / 256);
    }
  }

  /** A usage error: message for the user, exit code 2. */
  static final class UsageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    UsageException(String message) {
      super(message);
    }
  }

  private Compare() {}

  static Options parse(String[] args) {
    Options o = new Options();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      switch (a) {
        case "--help", "-h" -> o.help = true;
        case "--kv-events" -> {
          o.kvEvents = true;
          if (i + 1 < args.length && (args[i + 1].equals("wire") || args[i + 1].equals("direct"))) {
            o.kvWire = args[++i].equals("wire");
          }
        }
        case "--shared-predictions" -> o.sharedPredictions = true;
        case "--replicas" -> o.replicas = intIn(value(args, ++i, a), a, 1, 64);
        case "--share-delay-ms" -> o.shareDelayMs = doubleIn(value(args, ++i, a), a, 0, 60_000);
        case "--workload" -> {
          o.workload = value(args, ++i, a);
          List<String> known =
              List.of(
                  "default",
                  "gateway",
                  "high-cache",
                  "low-cache",
                  "multi-turn",
                  "mooncake",
                  "tenants",
                  "faults",
                  "sweep",
                  "capacity",
                  "rag",
                  "media",
                  "agentic",
                  "pd",
                  "fanout",
                  "long-chat",
                  "rl-rollout",
                  "hetero",
                  "varying-load");
          if (!known.contains(o.workload)) {
            throw new UsageException("unknown workload '" + o.workload + "'; known: " + known);
          }
        }
        case "--trace" -> {
          o.trace = Path.of(value(args, ++i, a));
          o.workload = "mooncake";
        }
        case "--backends" -> {
          o.backends = intIn(value(args, ++i, a), a, 1, 256);
          o.backendsSet = true;
        }
        case "--capacity-blocks" ->
            o.capacityBlocks = intIn(value(args, ++i, a), a, 16, 10_000_000);
        case "--rate-scale" -> o.rateScale = doubleIn(value(args, ++i, a), a, 1e-6, 1000);
        case "--requests" -> o.requests = intIn(value(args, ++i, a), a, 1, Integer.MAX_VALUE);
        case "--seed" -> o.seed = intIn(value(args, ++i, a), a, 0, Integer.MAX_VALUE);
        case "--kv-event-delay-ms" ->
            o.kvEventDelayMs = doubleIn(value(args, ++i, a), a, 0, 60_000);
        case "--scrape-ms" -> o.scrapeMs = doubleIn(value(args, ++i, a), a, 1e-3, 60_000);
        case "--kv-event-drop" -> o.kvEventDrop = doubleIn(value(args, ++i, a), a, 0, 1);
        case "--lower-tier" -> o.lowerTier = doubleIn(value(args, ++i, a), a, 1e-3, 1000);
        case "--reload-fraction" -> o.reloadFraction = doubleIn(value(args, ++i, a), a, 0, 1);
        case "--blend" -> o.blend = doubleIn(value(args, ++i, a), a, 0, 1);
        case "--out" -> o.out = Path.of(value(args, ++i, a));
        case "--router-capacity-blocks" ->
            o.routerCapacityBlocks = intIn(value(args, ++i, a), a, 16, 10_000_000);
        case "--cache-feedback" -> o.cacheFeedback = true;
        case "--encode-ms" -> o.encodeMs = doubleIn(value(args, ++i, a), a, 1e-3, 10_000);
        case "--slo-ttft-ms" -> o.sloTtftMs = doubleIn(value(args, ++i, a), a, 1e-3, 3_600_000);
        case "--slo-percentile" -> o.sloPercentile = doubleIn(value(args, ++i, a), a, 0.5, 0.9999);
        case "--policies" -> {
          List<String> ps = new ArrayList<>();
          for (String p : value(args, ++i, a).split(",")) {
            String name = p.trim().toLowerCase(Locale.ROOT);
            if (!Policies.isKnown(name)) {
              throw new UsageException(
                  "unknown policy '" + p.trim() + "'; known: " + String.join(",", Policies.NAMES));
            }
            ps.add(name);
          }
          if (ps.isEmpty()) {
            throw new UsageException("--policies needs at least one policy");
          }
          o.policies = List.copyOf(ps);
        }
        default -> throw new UsageException("unknown argument '" + a + "'; try --help");
      }
    }
    return o;
  }

  private static String value(String[] args, int i, String flag) {
    if (i >= args.length || args[i].startsWith("--")) {
      throw new UsageException(flag + " needs a value");
    }
    return args[i];
  }

  private static int intIn(String v, String flag, int min, int max) {
    try {
      int n = Integer.parseInt(v);
      if (n < min || n > max) {
        throw new UsageException(flag + " must be in [" + min + ", " + max + "], was " + n);
      }
      return n;
    } catch (NumberFormatException e) {
      throw new UsageException(flag + " must be an integer, was '" + v + "'");
    }
  }

  private static double doubleIn(String v, String flag, double min, double max) {
    try {
      double d = Double.parseDouble(v);
      if (!(d >= min && d <= max)) {
        throw new UsageException(flag + " must be in [" + min + ", " + max + "], was " + v);
      }
      return d;
    } catch (NumberFormatException e) {
      throw new UsageException(flag + " must be a number, was '" + v + "'");
    }
  }

  /** Entry point; returns the process exit code. */
  public static int run(String[] args, PrintStream out, PrintStream err) {
    Options o;
    try {
      o = parse(args);
    } catch (UsageException e) {
      err.println("error: " + e.getMessage());
      return 2;
    }
    if (o.help) {
      out.printf(USAGE, String.join(", ", Policies.NAMES));
      return 0;
    }
    try {
      execute(o, out, err);
      return 0;
    } catch (Workloads.TraceException e) {
      err.println("error: malformed trace: " + e.getMessage());
      return 3;
    } catch (IOException e) {
      err.println("error: " + e.getMessage());
      return 3;
    }
  }

  static SimConfig config(Options o) {
    SimConfig c =
        SimConfig.defaults(o.backends, o.capacityBlocks)
            .withScrapeInterval((long) (o.scrapeMs * 1e6));
    if (o.kvEvents) {
      c = c.withKvEvents(true, (long) (o.kvEventDelayMs * 1e6), o.kvEventDrop);
    }
    return c;
  }

  private static void execute(Options o, PrintStream out, PrintStream err) throws IOException {
    long start = System.nanoTime();
    List<PolicyResult> fleet = new ArrayList<>();
    List<GatewayHitRateSim.Result> gateway = new ArrayList<>();
    boolean all = o.workload.equals("default");
    if (all || o.workload.equals("gateway")) {
      for (String p : o.policies) {
        gateway.add(GatewayHitRateSim.run(p, false));
        gateway.add(GatewayHitRateSim.run(p, true));
      }
      Report.gatewayTable(out, gateway);
    }
    if (all || o.workload.equals("high-cache")) {
      fleet.addAll(
          runFleet(
              "(b) shared-prefix high-cache",
              config(o),
              Workloads.highCache(o.rateScale, o.seed, o.perGroup()),
              o,
              out,
              err));
    }
    if (o.workload.equals("low-cache")) {
      fleet.addAll(
          runFleet(
              "(b) shared-prefix low-cache",
              config(o),
              Workloads.lowCache(o.rateScale, o.seed, o.perGroup()),
              o,
              out,
              err));
    }
    if (o.workload.equals("multi-turn")) {
      fleet.addAll(
          runFleet(
              "(c) multi-turn chat",
              config(o),
              Workloads.multiTurn(o.rateScale, o.seed),
              o,
              out,
              err));
    }
    if (all || o.workload.equals("mooncake")) {
      Path trace = o.trace != null ? o.trace : defaultTrace();
      if (!Files.isReadable(trace)) {
        if (o.workload.equals("mooncake")) {
          throw new IOException("cannot read trace " + trace);
        }
        err.println("note: " + trace + " not found; skipping the trace replay");
      } else {
        double scale = all && o.rateScale == 1.0 ? 4.0 : o.rateScale;
        fleet.addAll(
            runFleet(
                String.format(Locale.ROOT, "(d) %s at %.1fx rate", trace.getFileName(), scale),
                config(o),
                Workloads.mooncake(trace, scale, o.requests),
                o,
                out,
                err));
      }
    }
    if (o.workload.equals("tenants")) {
      SimConfig c = config(o).withQuota(Workloads.TENANT_QUOTA_TOKENS_PER_MINUTE);
      List<PolicyResult> rs =
          runFleet(
              "(e) greedy tenant at 10x quota, polite within",
              c,
              Workloads.tenants(o.rateScale, o.seed),
              o,
              out,
              err);
      out.println("admitted per tenant (offered → admitted):");
      for (PolicyResult r : rs) {
        StringBuilder sb = new StringBuilder();
        r.tenants()
            .forEach(
                (t, v) ->
                    sb.append(
                        String.format(
                            Locale.ROOT,
                            "  %s %.0f→%.0f (%.0f%%)",
                            t,
                            v[0],
                            v[1],
                            100 * v[1] / v[0])));
        out.printf("  %-20s%s%n", r.policy(), sb);
      }
      fleet.addAll(rs);
    }
    if (o.workload.equals("faults")) {
      SimConfig c =
          config(o)
              .withFaults(
                  List.of(
                      new SimConfig.Fault(SimConfig.Fault.Kind.CRASH, 0, 0.3),
                      new SimConfig.Fault(SimConfig.Fault.Kind.SLOW_3X, 1, 0.5)));
      fleet.addAll(
          runFleet(
              "(f) b0 dies at 30%, b1 slows 3x at 50%",
              c, Workloads.highCache(o.rateScale, o.seed, o.perGroup()), o, out, err));
    }
    if (o.workload.equals("sweep")) {
      for (double s : new double[] {0.25, 0.5, 1.0, 1.5, 2.0, 3.0}) {
        double scale = s * o.rateScale;
        fleet.addAll(
            runFleet(
                String.format(Locale.ROOT, "(g) high-cache at %.2fx rate", scale),
                config(o),
                Workloads.highCache(scale, o.seed, o.perGroup()),
                o,
                out,
                err));
      }
    }
    if (o.workload.equals("rag") && !RagCheck.variants().isEmpty()) {
      fleet.addAll(RagCheck.run(o, config(o), out, err)); // -Drag.chunks: ChunkAffinityRouter
    } else if (o.workload.equals("rag")) {
      int n = o.requests == Integer.MAX_VALUE ? 4096 : o.requests;
      for (Workloads.ChunkOrdering ordering : Workloads.ChunkOrdering.values()) {
        fleet.addAll(
            runFleet(
                String.format(
                    Locale.ROOT,
                    "(i) rag, chunks in %s order, %.0f req/s",
                    ordering.name().toLowerCase(Locale.ROOT).replace('_', ' '),
                    100 * o.rateScale),
                config(o),
                Workloads.rag(ordering, o.rateScale, o.seed, n),
                o,
                out,
                err));
      }
    }
    if (o.workload.equals("agentic")) {
      int tasks = o.requests == Integer.MAX_VALUE ? 300 : Math.max(1, o.requests / 13);
      fleet.addAll(
          runFleet(
              String.format(Locale.ROOT, "(j) agentic tool loops at %.1fx rate", o.rateScale),
              config(o),
              Workloads.agentic(o.rateScale, o.seed, tasks),
              o,
              out,
              err));
    }
    if (o.workload.equals("long-chat")) {
      int sessions = o.requests == Integer.MAX_VALUE ? 1200 : Math.max(1, o.requests / 6);
      fleet.addAll(
          runFleet(
              String.format(
                  Locale.ROOT, "(k) long chats under cache pressure at %.1fx rate", o.rateScale),
              config(o),
              Workloads.longChat(sessions, o.rateScale, o.seed),
              o,
              out,
              err));
    }
    if (o.workload.equals("rl-rollout")) {
      int batches = o.requests == Integer.MAX_VALUE ? 32 : Math.max(1, o.requests / 128);
      fleet.addAll(
          runFleet(
              String.format(Locale.ROOT, "(l) RL rollout bursts at %.1fx rate", o.rateScale),
              config(o),
              Workloads.rlRollout(batches, o.rateScale, o.seed),
              o,
              out,
              err));
    }
    if (o.workload.equals("hetero")) {
      List<SimConfig.Fault> slow = new ArrayList<>();
      for (int b = 0; b < o.backends / 2; b++) {
        slow.add(new SimConfig.Fault(SimConfig.Fault.Kind.SLOW_2X, b, 0.0));
      }
      fleet.addAll(
          runFleet(
              String.format(
                  Locale.ROOT,
                  "(m) high-cache with half the backends 2x slower at %.1fx rate",
                  o.rateScale),
              config(o).withFaults(slow),
              Workloads.highCache(o.rateScale, o.seed, o.perGroup()),
              o,
              out,
              err));
    }
    if (o.workload.equals("varying-load")) {
      fleet.addAll(
          runFleet(
              String.format(
                  Locale.ROOT,
                  "(n) high-cache with the rate swinging 0.25x..2x at %.1fx rate",
                  o.rateScale),
              config(o),
              Workloads.varyingLoad(o.rateScale, o.seed, o.perGroup()),
              o,
              out,
              err));
    }
    if (o.workload.equals("media")) {
      fleet.addAll(MediaCheck.run(o, config(o), out, err));
    }
    if (o.workload.equals("fanout")) {
      fleet.addAll(FanoutCheck.run(o, config(o), out, err));
    }
    if (o.workload.equals("pd")) {
      fleet.addAll(PdCheck.run(o, config(o), out, err));
    }
    if (o.workload.equals("capacity")) {
      fleet.addAll(CapacityCheck.run(o, config(o), out, err));
    }
    Files.createDirectories(o.out);
    Report.json(o.out.resolve("results.json"), fleet, gateway);
    Report.csv(o.out.resolve("results.csv"), fleet);
    Report.html(o.out.resolve("report.html"), fleet, gateway);
    out.printf(
        Locale.ROOT,
        "%nwrote %s, %s, %s in %.1f s%n",
        o.out.resolve("results.json"),
        o.out.resolve("results.csv"),
        o.out.resolve("report.html"),
        (System.nanoTime() - start) / 1e9);
  }

  static List<PolicyResult> runFleet(
      String name,
      SimConfig config,
      List<SimRequest> requests,
      Options o,
      PrintStream out,
      PrintStream err) {
    if (o.replicas > 1) {
      name +=
          String.format(
              Locale.ROOT,
              " [%d replicas, %s]",
              o.replicas,
              o.sharedPredictions ? "shared" : "unshared");
    }
    err.printf(
        Locale.ROOT,
        "%s: %d requests, %d backends, %d policies%n",
        name,
        requests.size(),
        config.backends(),
        o.policies.size());
    FleetSimulator sim =
        new FleetSimulator(name, config, requests, err)
            .replicas(o.replicaSetup())
            .kvWire(o.kvWire)
            .routerBelief(o.routerCapacityBlocks, o.cacheFeedback);
    if (o.lowerTier > 0) {
      sim.lowerTier(
          (int)
              Math.min(
                  Integer.MAX_VALUE - 8,
                  Math.round(o.lowerTier * config.profile().capacityBlocks())),
          o.reloadFraction);
    }
    if (o.blend >= 0) {
      sim.blend(o.blend);
    }
    List<PolicyResult> rs = sim.runAll(o.policies);
    Report.table(out, name, rs);
    return rs;
  }

  public static void main(String[] args) {
    int code = run(args, System.out, System.err);
    if (code != 0) {
      System.exit(code);
    }
  }

  static String describe(Options o) {
    return Arrays.asList(o.workload, o.backends, o.rateScale).toString();
  }
}
