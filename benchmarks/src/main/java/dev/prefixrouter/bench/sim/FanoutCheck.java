package dev.prefixrouter.bench.sim;

import dev.prefixrouter.api.WorkflowRouter;
import dev.prefixrouter.api.WorkflowStep;
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
 * follows them. Third, the requests routed through a {@link WorkflowRouter} (policy {@code
 * est-ttft@workflow-qN}: maps are {@link WorkflowStep#map} steps of their job, the reduce a {@link
 * WorkflowStep#reduce} of every map; room is fewer than N queued leases, {@code -tN} fewer than N
 * pending prefill tokens; {@code -noreduce} routes the reduces by the engine alone, an ablation).
 */
final class FanoutCheck {
  private FanoutCheck() {}

  /** A fan-out workload: the requests (numbered in arrival order) and each one's step. */
  record Jobs(List<SimRequest> requests, List<WorkflowStep> steps) {}

  /** Jobs in the standard run ({@code --workload fanout} without {@code --requests}). */
  static final int DEFAULT_JOBS = 300;

  /** Jobs at {@code 2 × rateScale} per second, {@code jobs} of them. */
  static List<SimRequest> workload(double rateScale, long seed, int jobs, boolean grouped) {
    return jobs(rateScale, seed, jobs, grouped).requests();
  }

  /** {@link #workload} with each request's workflow step ({@code job-J}: {@code map-M}, reduce). */
  static Jobs jobs(double rateScale, long seed, int jobs, boolean grouped) {
    SplittableRandom r = new SplittableRandom(seed);
    record Item(SimRequest request, WorkflowStep step) {}
    List<Item> out = new ArrayList<>();
    double start = 0;
    for (int j = 0; j < jobs; j++) {
      start += -Math.log(1 - r.nextDouble()) / (2 * rateScale);
      int[] doc = Workloads.segment(60_000_000L + j, 4096);
      String group = "job-" + j;
      String session = grouped ? group : null;
      int maps = 8 + r.nextInt(9);
      List<int[]> outputs = new ArrayList<>();
      List<String> mapIds = new ArrayList<>();
      for (int m = 0; m < maps; m++) {
        long id = (long) j * 32 + m;
        int[] prompt =
            Workloads.concat(doc, Workloads.segment(61_000_000_000L + id, 128 + r.nextInt(256)));
        int output = 100 + r.nextInt(100);
        double at = start + r.nextDouble() * 0.02;
        out.add(
            new Item(
                new SimRequest(0, (long) (at * 1e9), "t", session, prompt, output),
                WorkflowStep.map(group, "map-" + m)));
        outputs.add(Workloads.segment(62_000_000_000L + id, output));
        mapIds.add("map-" + m);
      }
      int[] reduce = doc;
      for (int[] o : outputs) {
        reduce = Workloads.concat(reduce, o);
      }
      reduce = Workloads.concat(reduce, Workloads.segment(63_000_000L + j, 64));
      out.add(
          new Item(
              new SimRequest(0, (long) ((start + 4.0) * 1e9), "t", session, reduce, 300),
              WorkflowStep.reduce(group, "reduce", mapIds)));
    }
    out.sort((a, b) -> Long.compare(a.request().arrivalNanos(), b.request().arrivalNanos()));
    List<SimRequest> numbered = new ArrayList<>(out.size());
    List<WorkflowStep> steps = new ArrayList<>(out.size());
    for (int i = 0; i < out.size(); i++) {
      SimRequest q = out.get(i).request();
      numbered.add(
          new SimRequest(
              i, q.arrivalNanos(), q.tenant(), q.session(), q.tokens(), q.outputTokens()));
      steps.add(out.get(i).step());
    }
    return new Jobs(numbered, steps);
  }

  /** The workflow variants: {@code est-ttft@workflow-qN}, room = fewer than N queued leases. */
  static final List<String> WORKFLOW_POLICIES =
      List.of(
          System.getProperty(
                  "fanout.workflow",
                  "est-ttft@workflow-q4,est-ttft@workflow-q8,est-ttft@workflow-t8192")
              .split(","));

  static List<PolicyResult> run(
      Compare.Options o, SimConfig config, PrintStream out, PrintStream err) {
    int jobs = o.requests == Integer.MAX_VALUE ? DEFAULT_JOBS : Math.max(1, o.requests / 13);
    List<PolicyResult> results = new ArrayList<>();
    for (String mode : new String[] {"alone", "session", "workflow"}) {
      boolean grouped = mode.equals("session");
      String name =
          String.format(
              Locale.ROOT,
              "(l) fan-out: %d jobs of 8-16 maps on a 4k document + 1 reduce, %.1f jobs/s, %s",
              jobs,
              2 * o.rateScale,
              switch (mode) {
                case "alone" -> "each request alone";
                case "session" -> "a session per job";
                default -> "workflow steps";
              });
      Jobs w = jobs(o.rateScale, o.seed, jobs, grouped);
      List<String> policies =
          switch (mode) {
            case "alone" -> List.of("est-ttft", "sglang-cache-aware", "dynamo-kv", "least-request");
            case "session" -> List.of("est-ttft");
            default -> WORKFLOW_POLICIES;
          };
      err.printf(Locale.ROOT, "%s: %d requests%n", name, w.requests().size());
      FleetSimulator sim = new FleetSimulator(name, config, w.requests(), err);
      if (mode.equals("workflow")) {
        sim.routers(
            (policy, engine) -> {
              WorkflowRouter.Builder b = WorkflowRouter.builder(engine).maxQueued(100_000);
              boolean reduceAlone = false;
              for (String part : policy.substring(policy.indexOf('@') + 1).split("-")) {
                reduceAlone |= part.equals("noreduce");
                if (part.startsWith("q")) {
                  b.maxQueued(Integer.parseInt(part.substring(1)));
                } else if (part.startsWith("r")) {
                  b.reduceCostRatio(Double.parseDouble(part.substring(1)));
                } else if (part.startsWith("t")) {
                  b.maxPendingTokens(Long.parseLong(part.substring(1)));
                }
              }
              WorkflowRouter router = b.build();
              boolean alone = reduceAlone; // ablation: reduces routed by the engine alone
              return (request, s) -> {
                WorkflowStep step = w.steps().get(s.id());
                return alone && step.kind() == WorkflowStep.Kind.REDUCE
                    ? router.route(request)
                    : router.route(request, step);
              };
            });
      }
      List<PolicyResult> rs = sim.runAll(policies);
      Report.table(out, name, rs);
      results.addAll(rs);
    }
    return results;
  }
}
