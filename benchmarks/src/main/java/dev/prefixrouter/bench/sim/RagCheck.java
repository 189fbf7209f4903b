package dev.prefixrouter.bench.sim;

import dev.prefixrouter.api.ChunkAffinityRouter;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * RAG chunk affinity (issue #21 item 3) on the {@code rag} workload: the three chunk orderings,
 * each routed by the given policies and by {@link ChunkAffinityRouter} variants over est-ttft,
 * named {@code est-ttft@chunks[-rX][-qN][-mK]} (cost ratio X, room N queued leases, K extra chunks;
 * the router's defaults otherwise). Selected with {@code -Drag.chunks=variant,...}; without it the
 * {@code rag} workload runs as before. {@code --blend X} gives the engines position-independent
 * chunk reuse ({@link SimBackend#blend}) and prints each policy's share of prompt tokens reused
 * that way.
 */
final class RagCheck {
  private RagCheck() {}

  static List<String> variants() {
    String v = System.getProperty("rag.chunks", "");
    List<String> out = new ArrayList<>();
    for (String s : v.split(",")) {
      if (!s.isBlank()) {
        out.add(s.trim());
      }
    }
    return out;
  }

  static List<PolicyResult> run(
      Compare.Options o, SimConfig config, PrintStream out, PrintStream err) {
    int n = o.requests == Integer.MAX_VALUE ? 4096 : o.requests;
    List<PolicyResult> results = new ArrayList<>();
    for (Workloads.ChunkOrdering ordering : Workloads.ChunkOrdering.values()) {
      String name =
          String.format(
              Locale.ROOT,
              "(i) rag, chunks in %s order, %.0f req/s%s",
              ordering.name().toLowerCase(Locale.ROOT).replace('_', ' '),
              100 * o.rateScale,
              o.blend >= 0 ? String.format(Locale.ROOT, ", blend %.2f", o.blend) : "");
      List<List<Integer>> chunks = new ArrayList<>();
      List<SimRequest> requests = Workloads.rag(ordering, o.rateScale, o.seed, n, chunks);
      List<String> policies = new ArrayList<>(o.policies);
      policies.addAll(variants());
      err.printf(Locale.ROOT, "%s: %d requests%n", name, requests.size());
      FleetSimulator sim = new FleetSimulator(name, config, requests, err);
      if (o.blend >= 0) {
        sim.blend(o.blend);
      }
      sim.routers(
          (policy, engine) -> {
            int at = policy.indexOf("@chunks");
            if (at < 0) {
              return null;
            }
            ChunkAffinityRouter.Builder b = ChunkAffinityRouter.builder(engine);
            for (String part : policy.substring(at + 1).split("-")) {
              if (part.startsWith("r")) {
                b.costRatio(Double.parseDouble(part.substring(1)));
              } else if (part.startsWith("q")) {
                b.maxQueued(Integer.parseInt(part.substring(1)));
              } else if (part.startsWith("m")) {
                b.minExtraChunks(Integer.parseInt(part.substring(1)));
              }
            }
            ChunkAffinityRouter router = b.build();
            return (request, s) -> {
              List<String> ids = new ArrayList<>();
              for (int c : chunks.get(s.id())) {
                ids.add("chunk-" + c);
              }
              return router.route(request, ids);
            };
          });
      List<PolicyResult> rs = sim.runAll(policies);
      Report.table(out, name, rs);
      if (o.blend >= 0) {
        for (PolicyResult r : rs) {
          out.printf(
              Locale.ROOT,
              "  %-28s blend reuse %.2f %% of prompt tokens (prefix hit %.2f %%)%n",
              r.policy(),
              100 * sim.blendShare(r.policy()),
              100 * r.tokenHitRate());
        }
      }
      results.addAll(rs);
    }
    return results;
  }
}
