package dev.prefixrouter.bench.sim;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Workflow placement on a map-reduce fan-out (issue #21 item 4, {@code --workload fanout}): jobs
 * arrive Poisson; each job has its own 4,096-token document and fans out 8-16 map requests at once
 * (the document plus a 128-383-token instruction, 100-199 output tokens), then, 4 s later, one
 * reduce request (the document, every map's output, a 64-token instruction; 300 output tokens).
 * Each request routed alone (no session) is compared with the job's requests sharing one session
 * id, the library's existing grouping: est-ttft's session rule keeps a session on its backend
 * unless that backend is saturated or much slower than the best (ratio 1.5, margin 50 ms), so the
 * siblings stay together while the holder has room and spread when it does not, and the reduce step
 * follows them.
 */
final class FanoutCheck {
  private FanoutCheck() {}

  /** Jobs at {@code 2 × rateScale} per second, {@code jobs} of them. */
  static List<SimRequest> workload(double rateScale, long seed, int jobs, boolean grouped) {
    SplittableRandom r = new SplittableRandom(seed);
    List<SimRequest> out = new ArrayList<>();
    double start = 0;
    for (int j = 0; j < jobs; j++) {
      start += -Math.log(1 - r.nextDouble()) / (2 * rateScale);
      int[] doc = Workloads.segment(60_000_000L + j, 4096);
      String session = grouped ? "job-" + j : null;
      int maps = 8 + r.nextInt(9);
      List<int[]> outputs = new ArrayList<>();
      for (int m = 0; m < maps; m++) {
        long id = (long) j * 32 + m;
        int[] prompt =
            Workloads.concat(doc, Workloads.segment(61_000_000_000L + id, 128 + r.nextInt(256)));
        int output = 100 + r.nextInt(100);
        double at = start + r.nextDouble() * 0.02;
        out.add(new SimRequest(0, (long) (at * 1e9), "t", session, prompt, output));
        outputs.add(Workloads.segment(62_000_000_000L + id, output));
      }
      int[] reduce = doc;
      for (int[] o : outputs) {
        reduce = Workloads.concat(reduce, o);
      }
      reduce = Workloads.concat(reduce, Workloads.segment(63_000_000L + j, 64));
      out.add(new SimRequest(0, (long) ((start + 4.0) * 1e9), "t", session, reduce, 300));
    }
    out.sort((a, b) -> Long.compare(a.arrivalNanos(), b.arrivalNanos()));
    List<SimRequest> numbered = new ArrayList<>(out.size());
    for (int i = 0; i < out.size(); i++) {
      SimRequest q = out.get(i);
      numbered.add(
          new SimRequest(
              i, q.arrivalNanos(), q.tenant(), q.session(), q.tokens(), q.outputTokens()));
    }
    return numbered;
  }

  static List<PolicyResult> run(
      Compare.Options o, SimConfig config, PrintStream out, PrintStream err) {
    int jobs = o.requests == Integer.MAX_VALUE ? 300 : Math.max(1, o.requests / 13);
    List<PolicyResult> results = new ArrayList<>();
    for (boolean grouped : new boolean[] {false, true}) {
      String name =
          String.format(
              Locale.ROOT,
              "(l) fan-out: %d jobs of 8-16 maps on a 4k document + 1 reduce, %.1f jobs/s, %s",
              jobs,
              2 * o.rateScale,
              grouped ? "a session per job" : "each request alone");
      List<SimRequest> requests = workload(o.rateScale, o.seed, jobs, grouped);
      List<String> policies =
          grouped
              ? List.of("est-ttft")
              : List.of("est-ttft", "sglang-cache-aware", "dynamo-kv", "least-request");
      err.printf(Locale.ROOT, "%s: %d requests%n", name, requests.size());
      List<PolicyResult> rs = new FleetSimulator(name, config, requests, err).runAll(policies);
      Report.table(out, name, rs);
      results.addAll(rs);
    }
    return results;
  }
}
