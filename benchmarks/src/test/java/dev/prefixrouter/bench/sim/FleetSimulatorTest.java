package dev.prefixrouter.bench.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class FleetSimulatorTest {

  private static List<SimRequest> small(double rate) {
    return Workloads.sharedPrefix(16, 8, 1024, 128, 32, rate, 3, new String[] {"t"});
  }

  @Test
  void everyRequestCompletesAndPrefixAwareRoutingHitsMore() {
    FleetSimulator sim = new FleetSimulator("small", SimConfig.defaults(4, 2_000), small(40), null);
    PolicyResult ours = sim.run("est-ttft");
    PolicyResult rr = sim.run("round-robin");
    for (PolicyResult r : List.of(ours, rr)) {
      assertThat(r.completed()).isEqualTo(128);
      assertThat(r.rejected() + r.failed()).isZero();
      assertThat(r.ttftP50()).isPositive();
      assertThat(r.ttftP95()).isGreaterThanOrEqualTo(r.ttftP50());
    }
    assertThat(ours.tokenHitRate()).isGreaterThan(rr.tokenHitRate() + 0.2);
    assertThat(ours.ttftMean()).isLessThan(rr.ttftMean());
  }

  /**
   * Multi-turn chat (the main job's workload (c)): sessions of one system prompt stay together, as
   * SGLang's cache-aware rule keeps them, instead of fragmenting over backends. Fails without the
   * scorer's prefix affinity (83.6 % hit, imbalance 1.43).
   */
  @Test
  void multiTurnChatKeepsEachSystemPromptOnOneBackend() {
    FleetSimulator sim =
        new FleetSimulator(
            "multi-turn",
            SimConfig.defaults(8, 29_205),
            Workloads.multiTurn(128, 10, 8.0, 1.0, 1),
            null);
    PolicyResult ours = sim.run("est-ttft");
    PolicyResult sglang = sim.run("sglang-cache-aware");
    assertThat(ours.tokenHitRate()).isGreaterThanOrEqualTo(sglang.tokenHitRate() - 0.002);
    assertThat(ours.loadImbalance()).isLessThanOrEqualTo(1.1);
    assertThat(ours.ttftP99()).isLessThanOrEqualTo(sglang.ttftP99() * 1.1);
  }

  /**
   * {@code --kv-events wire}: the events through real ZMQ and the real subscriber, 10 % of the
   * batches dropped on the wire and replayed. Two runs give the same result (the simulation waits
   * for each instant's batches to be applied), and the hit rate stays within a point of in-process
   * loss-free events.
   */
  @Test
  void wireEventsWithDropsAreDeterministicAndCloseToLossFree() {
    SimConfig direct = SimConfig.defaults(4, 2_000).withKvEvents(true, 50_000_000L, 0);
    SimConfig lossy = SimConfig.defaults(4, 2_000).withKvEvents(true, 50_000_000L, 0.1);
    PolicyResult lossFree = new FleetSimulator("small", direct, small(40), null).run("est-ttft");
    PolicyResult a =
        new FleetSimulator("small", lossy, small(40), null).kvWire(true).run("est-ttft");
    PolicyResult b =
        new FleetSimulator("small", lossy, small(40), null).kvWire(true).run("est-ttft");
    assertThat(a.completed()).isEqualTo(128);
    assertThat(a.tokenHitRate()).isEqualTo(b.tokenHitRate());
    assertThat(a.ttftMean()).isEqualTo(b.ttftMean());
    assertThat(a.routedPerBackend()).containsExactly(b.routedPerBackend());
    assertThat(a.tokenHitRate()).isCloseTo(lossFree.tokenHitRate(), within(0.01));
  }

  @Test
  void deterministicAcrossRuns() {
    FleetSimulator a = new FleetSimulator("small", SimConfig.defaults(4, 2_000), small(40), null);
    FleetSimulator b = new FleetSimulator("small", SimConfig.defaults(4, 2_000), small(40), null);
    PolicyResult x = a.run("p2c");
    PolicyResult y = b.run("p2c");
    assertThat(x.ttftMean()).isEqualTo(y.ttftMean());
    assertThat(x.routedPerBackend()).containsExactly(y.routedPerBackend());
  }

  @Test
  void crashedBackendsRequestsFailOverAndNoneIsLost() {
    SimConfig c =
        SimConfig.defaults(4, 2_000)
            .withFaults(List.of(new SimConfig.Fault(SimConfig.Fault.Kind.CRASH, 0, 0.3)));
    PolicyResult r = new FleetSimulator("crash", c, small(40), null).run("least-request");
    assertThat(r.failovers()).isPositive();
    assertThat(r.completed() + r.failed() + r.rejected()).isEqualTo(128);
  }

  @Test
  void kvEventsAreAppliedWithoutBreakingAnything() {
    SimConfig c = SimConfig.defaults(4, 2_000).withKvEvents(true, 20_000_000L, 0.1);
    PolicyResult r = new FleetSimulator("events", c, small(40), null).run("est-ttft");
    assertThat(r.completed()).isEqualTo(128);
    assertThat(r.tokenHitRate()).isGreaterThan(0.5);
  }

  @Test
  void smallCachesForceEvictionAndPreemptionYetEverythingCompletes() {
    PolicyResult r =
        new FleetSimulator("tight", SimConfig.defaults(2, 200), small(80), null).run("round-robin");
    assertThat(r.completed()).isEqualTo(128);
  }

  /**
   * Four router replicas, each arrival to a random one: unshared, each replica learns only a
   * quarter of the routes and spreads a prefix over several backends; sharing predictions brings
   * the hit rate back to one replica's.
   */
  @Test
  void replicasThatSharePredictionsHitAsOneReplicaDoes() {
    SimConfig c = SimConfig.defaults(4, 2_000);
    PolicyResult one = new FleetSimulator("one", c, small(40), null).run("est-ttft");
    PolicyResult unshared =
        new FleetSimulator("unshared", c, small(40), null)
            .replicas(new ReplicaSetup(4, false, 5_000_000L))
            .run("est-ttft");
    PolicyResult shared =
        new FleetSimulator("shared", c, small(40), null)
            .replicas(new ReplicaSetup(4, true, 5_000_000L))
            .run("est-ttft");
    for (PolicyResult r : List.of(one, unshared, shared)) {
      assertThat(r.completed()).isEqualTo(128);
    }
    assertThat(unshared.tokenHitRate()).isLessThan(one.tokenHitRate() - 0.05);
    assertThat(shared.tokenHitRate()).isGreaterThan(one.tokenHitRate() - 0.02);
  }

  /**
   * A gateway knows the client's max_tokens, not how many tokens the model will produce: the router
   * is told the workload's client cap (its largest output rounded up to 256), while the backends
   * still generate each request's sampled length.
   */
  @Test
  void theRouterIsToldTheClientsMaxTokensNotTheSampledOutputLength() {
    List<SimRequest> requests = small(40);
    int largest = requests.stream().mapToInt(SimRequest::outputTokens).max().orElseThrow();
    int cap = (largest + 255) / 256 * 256;
    List<Integer> seen = new ArrayList<>();
    PolicyResult r =
        new FleetSimulator("cap", SimConfig.defaults(4, 2_000), requests, null)
            .routers(
                (policy, engine) ->
                    (request, sim) -> {
                      seen.add(request.maxOutputTokens());
                      return engine.route(request);
                    })
            .run("est-ttft");
    assertThat(r.completed()).isEqualTo(128);
    assertThat(seen).hasSize(128).containsOnly(cap);
    assertThat(cap).isGreaterThan(largest - 1);
  }
}
