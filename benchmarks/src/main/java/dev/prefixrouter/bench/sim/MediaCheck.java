package dev.prefixrouter.bench.sim;

import dev.prefixrouter.scoring.Policies;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Media affinity on the {@link Workloads#media} workload: backends with an encoder cache of 128
 * images and {@code --encode-ms} per uncached image; each selected policy, and est-ttft wrapped in
 * {@link dev.prefixrouter.scoring.MediaAffinity} ({@code est-ttft+media}) and est-ttft with the
 * {@link dev.prefixrouter.scoring.MediaAffinityTerm} cost term ({@code est-ttft+mterm}, its default
 * load bound; {@code +mterm-qN} another), on the same arrivals. Prints the usual table plus the
 * fleet's encoder-cache hit rate per policy.
 */
final class MediaCheck {
  static final int ENCODER_ITEMS = 128;

  private MediaCheck() {}

  static List<PolicyResult> run(
      Compare.Options o, SimConfig base, PrintStream out, PrintStream err) {
    int n = o.requests == Integer.MAX_VALUE ? 4096 : o.requests;
    List<SimRequest> requests = Workloads.media(o.rateScale, o.seed, n);
    SimConfig config = base.withProfile(base.profile().withEncoder(o.encodeMs, ENCODER_ITEMS));
    List<String> policies = new ArrayList<>(o.policies);
    if (o.policies.size() == Policies.NAMES.size()) {
      policies =
          new ArrayList<>(
              List.of(
                  "est-ttft", "round-robin", "least-request", "sglang-cache-aware", "dynamo-kv"));
    }
    if (policies.contains("est-ttft")) {
      int at = policies.indexOf("est-ttft") + 1;
      policies.addAll(
          at,
          List.of(
              System.getProperty("media.variants", "est-ttft+media,est-ttft+mterm").split(",")));
    }
    String name =
        String.format(
            Locale.ROOT,
            "(j) media: one image of 3,000 (Zipf) per request, %.0f ms encode, %.0f req/s",
            o.encodeMs,
            60 * o.rateScale);
    err.printf(
        Locale.ROOT, "%s: %d requests, %d backends%n", name, requests.size(), config.backends());
    FleetSimulator sim = new FleetSimulator(name, config, requests, err);
    List<PolicyResult> results = new ArrayList<>();
    List<String> encoder = new ArrayList<>();
    for (String p : policies) {
      FleetSimulator.MediaRun r = sim.runMedia(p);
      results.add(r.result());
      long total = r.encoderHits() + r.encoderMisses();
      encoder.add(
          String.format(
              Locale.ROOT,
              "  %-20s encoder hits %5.1f %% (%d of %d)",
              p,
              total == 0 ? 0 : 100.0 * r.encoderHits() / total,
              r.encoderHits(),
              total));
    }
    Report.table(out, name, results);
    encoder.forEach(out::println);
    return results;
  }
}
