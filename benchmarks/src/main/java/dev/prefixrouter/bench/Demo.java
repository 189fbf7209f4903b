package dev.prefixrouter.bench;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.LoadReport;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteDecision;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RouterSnapshot;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A scripted scenario through a {@link RoutingEngine} with the built-in parts, printing every
 * decision: balancing, an A/B split, a capability filter, a drained backend, a failover, an unknown
 * model and a removal. Deterministic (fake clock). Replaced by the simulator's policy comparison.
 */
final class Demo {
  private Demo() {}

  static void run(PrintStream out) {
    AtomicLong clock = new AtomicLong();
    RoutingEngine engine =
        RoutingEngine.builder()
            .backend(Backend.of("b0", "llama-3-8b").withCapacityBlocks(20_000))
            .backend(Backend.of("b1", "llama-3-8b").withCapacityBlocks(20_000))
            .backend(Backend.of("b2", "llama-3-8b", "llama-3-8b-v2").withCapability("vision"))
            .modelAlias("gpt-4o-mini", "llama-3-8b")
            .modelSplit("chat", Map.of("llama-3-8b", 90, "llama-3-8b-v2", 10))
            .ticker(clock::get)
            .build();

    out.println("prefix-router demo: built-in parts (no prefix index, least-in-flight, unlimited)");
    out.println();
    List<Routed> open = new ArrayList<>();
    step(out, "1. six requests, none completed: least-in-flight spreads them");
    for (int i = 0; i < 6; i++) {
      RouteDecision d = engine.route(request("acme", "llama-3-8b", "req-" + i).build());
      print(out, d);
      if (d instanceof Routed r) {
        open.add(r);
      }
    }
    step(out, "2. an alias: gpt-4o-mini is served by llama-3-8b");
    print(out, keep(open, engine.route(request("acme", "gpt-4o-mini", "alias-1").build())));

    step(out, "3. a 90/10 split of 'chat', sticky per session");
    for (int i = 0; i < 4; i++) {
      print(
          out,
          keep(
              open, engine.route(request("acme", "chat", "split-" + i).session("s-" + i).build())));
    }

    step(out, "4. a vision request: only b2 has the capability");
    print(
        out,
        keep(
            open,
            engine.route(
                request("acme", "llama-3-8b", "vision-1").requireCapability("vision").build())));

    step(out, "5. b2 drained: the same vision request has no eligible backend");
    engine.backends().drain("b2");
    print(
        out,
        engine.route(
            request("acme", "llama-3-8b", "vision-2").requireCapability("vision").build()));
    engine.backends().undrain("b2");

    step(out, "6. a connect failure before the first token, then failover");
    RouteDecision d = engine.route(request("acme", "llama-3-8b", "fail-1").build());
    print(out, d);
    if (d instanceof Routed r) {
      r.lease().fail(Failure.of(Failure.Kind.CONNECT));
      RouteDecision next = r.lease().failover();
      out.print("   failover → ");
      print(out, next);
      if (next instanceof Routed n) {
        open.add(n);
      }
    }

    step(out, "7. an unknown model");
    print(out, keep(open, engine.route(request("acme", "mistral-7b", "unknown-1").build())));

    step(out, "8. leases end; load reports arrive; b1 is removed");
    clock.addAndGet(250_000_000L);
    for (Routed r : open) {
      r.lease().firstToken();
      r.lease().complete(Usage.of(r.promptTokens(), 32));
    }
    engine.backends().reportLoad("b0", LoadReport.of(2, 0, 0.31));
    engine.backends().reportLoad("b2", LoadReport.of(5, 3, 0.88));
    engine.backends().remove("b1");
    RouteDecision last = engine.route(request("acme", "llama-3-8b", "after-remove").build());
    print(out, last);
    if (last instanceof Routed r) {
      r.lease().complete(Usage.of(r.promptTokens(), 16));
    }

    RouterSnapshot s = engine.inspect();
    step(out, "9. inspect()");
    out.printf("   routed=%d failovers=%d rejected=%s%n", s.routed(), s.failovers(), s.rejected());
    s.backends()
        .forEach(
            b ->
                out.printf(
                    "   %-3s health=%-6s draining=%-5s inFlight=%d routed=%d load=%s%n",
                    b.id(),
                    b.health(),
                    b.draining(),
                    b.inFlight(),
                    b.routed(),
                    b.lastLoad() == null
                        ? "-"
                        : b.lastLoad().running()
                            + " running/"
                            + b.lastLoad().waiting()
                            + " waiting"));
  }

  private static RouteRequest.Builder request(String tenant, String model, String id) {
    int[] ids = new int[64];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = 1000 + i;
    }
    return RouteRequest.builder(tenant, model)
        .prompt(Prompt.ofTokens(ids))
        .maxOutputTokens(128)
        .requestId(id);
  }

  private static void step(PrintStream out, String title) {
    out.println();
    out.println(title);
  }

  private static RouteDecision keep(List<Routed> open, RouteDecision d) {
    if (d instanceof Routed r) {
      open.add(r);
    }
    return d;
  }

  private static void print(PrintStream out, RouteDecision d) {
    if (d instanceof Routed r) {
      out.printf(
          "   %-12s → %-3s model=%-14s fallbacks=%s (%s)%n",
          r.request().requestId(), r.backendId(), r.resolvedModel(), r.fallbacks(), r.reason());
    } else if (d instanceof dev.prefixrouter.api.Rejected x) {
      out.printf(
          "   %-12s ✗ %s%s: %s%n",
          x.request().requestId(),
          x.reason(),
          x.emptiedBy() == null ? "" : " (" + x.emptiedBy() + ")",
          x.message());
    }
  }
}
