package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class WorkflowRouterTest {
  private final AtomicLong clock = new AtomicLong(1_000_000_000L);

  /** Four backends, the default least-in-flight scorer: alone, requests spread. */
  private RoutingEngine engine() {
    RoutingEngineBuilder b = RoutingEngine.builder().ticker(clock::get);
    for (String id : List.of("b0", "b1", "b2", "b3")) {
      b.backend(Backend.of(id, "m"));
    }
    return b.build();
  }

  private static RouteRequest req(String tenant, int tokens) {
    return RouteRequest.builder(tenant, "m")
        .prompt(Prompt.ofTokens(Fakes.tokens(tokens, 7)))
        .build();
  }

  private static RouteRequest req() {
    return req("t", 32);
  }

  private static Routed routed(RouteDecision d) {
    assertThat(d).isInstanceOf(Routed.class);
    return (Routed) d;
  }

  private static Routed map(WorkflowRouter w, String group, String member) {
    return routed(w.route(req(), WorkflowStep.map(group, member)));
  }

  @Test
  void aloneTheScorerSpreadsButMapsCoLocateWhileTheHolderHasRoom() {
    RoutingEngine e = engine();
    Set<String> alone = new HashSet<>();
    for (int i = 0; i < 3; i++) {
      alone.add(routed(e.route(req())).backendId());
    }
    assertThat(alone).hasSize(3); // the control: least-in-flight spreads

    WorkflowRouter w = WorkflowRouter.builder(engine()).maxQueued(3).build();
    Routed first = map(w, "job", "m0");
    Routed second = map(w, "job", "m1");
    Routed third = map(w, "job", "m2");
    assertThat(second.backendId()).isEqualTo(first.backendId());
    assertThat(third.backendId()).isEqualTo(first.backendId());
    assertThat(second.reason()).isEqualTo(WorkflowRouter.COLOCATED);
    assertThat(w.holders("t", "job")).containsExactly(first.backendId());
    assertThat(w.stats().colocated()).isEqualTo(2);
    assertThat(w.stats().byEngine()).isEqualTo(1); // the first map: the engine's choice
  }

  @Test
  void mapsSpreadToANewBackendWhenEveryHolderIsFullThenCoLocateThere() {
    WorkflowRouter w = WorkflowRouter.builder(engine()).maxQueued(2).build();
    String a = map(w, "job", "m0").backendId();
    assertThat(map(w, "job", "m1").backendId()).isEqualTo(a);
    String b = map(w, "job", "m2").backendId(); // a has 2 queued: full
    assertThat(b).isNotEqualTo(a);
    assertThat(map(w, "job", "m3").backendId()).isEqualTo(b);
    assertThat(w.holders("t", "job")).containsExactly(a, b);
    assertThat(w.stats().spread()).isEqualTo(1);
    assertThat(w.stats().colocated()).isEqualTo(2);
  }

  @Test
  void aHolderRegainsRoomWhenItsQueuedRequestsReachTheirFirstToken() {
    WorkflowRouter w = WorkflowRouter.builder(engine()).maxQueued(1).build();
    Routed first = map(w, "job", "m0");
    Routed second = map(w, "job", "m1");
    assertThat(second.backendId()).isNotEqualTo(first.backendId()); // full: spread
    first.lease().firstToken(); // decoding now: no longer queued
    assertThat(map(w, "job", "m2").backendId()).isEqualTo(first.backendId());
  }

  @Test
  void aHolderReportingKvUsageAtTheBoundHasNoRoomUntilTheReportIsStale() {
    RoutingEngine e =
        RoutingEngine.builder()
            .ticker(clock::get)
            .backend(Backend.of("x", "m"))
            .backend(Backend.of("y", "m"))
            .build();
    WorkflowRouter w =
        WorkflowRouter.builder(e)
            .maxQueued(10)
            .maxKvUsage(0.9)
            .loadStaleAfter(Duration.ofSeconds(5))
            .build();
    String first = map(w, "job", "m0").backendId();
    String other = first.equals("x") ? "y" : "x";
    e.backends().reportLoad(first, LoadReport.of(1, 0, 0.95));
    assertThat(map(w, "job", "m1").backendId()).isEqualTo(other); // spread
    clock.addAndGet(Duration.ofSeconds(6).toNanos()); // first's report is stale now
    e.backends().reportLoad(other, LoadReport.of(1, 0, 0.95)); // fresh
    assertThat(map(w, "job", "m2").backendId()).isEqualTo(first);
  }

  @Test
  void aDrainedHolderIsNotUsedAndTheGroupSpreads() {
    WorkflowRouter w = WorkflowRouter.builder(engine()).maxQueued(10).build();
    Routed first = map(w, "job", "m0");
    w.engine().backends().drain(first.backendId());
    Routed next = map(w, "job", "m1");
    assertThat(next.backendId()).isNotEqualTo(first.backendId());
    assertThat(w.stats().spread()).isEqualTo(1);
  }

  @Test
  void whenNoCandidateHasRoomTheEnginesChoiceStands() {
    RoutingEngine e =
        RoutingEngine.builder().ticker(clock::get).backend(Backend.of("only", "m")).build();
    WorkflowRouter w = WorkflowRouter.builder(e).maxQueued(1).build();
    map(w, "job", "m0");
    Routed second = map(w, "job", "m1");
    assertThat(second.backendId()).isEqualTo("only");
    assertThat(w.stats().byEngine()).isEqualTo(2);
  }

  /** m0, m1 on a; m2, m3 on b; m4 on c; every lease completed so that each backend has room. */
  private List<Routed> fiveMaps(WorkflowRouter w, int m4Tokens) {
    List<Routed> maps = new ArrayList<>();
    for (int m = 0; m < 5; m++) {
      int tokens = m == 4 ? m4Tokens : 32;
      maps.add(routed(w.route(req("t", tokens), WorkflowStep.map("job", "m" + m))));
    }
    assertThat(maps.get(1).backendId()).isEqualTo(maps.get(0).backendId());
    assertThat(maps.get(3).backendId()).isEqualTo(maps.get(2).backendId());
    assertThat(maps.get(4).backendId()).isNotIn(maps.get(0).backendId(), maps.get(2).backendId());
    for (Routed r : maps) {
      r.lease().complete(Usage.of(32, 1));
    }
    return maps;
  }

  @Test
  void aReduceGoesWhereMostOfItsInputsPromptTokensWent() {
    WorkflowRouter w = WorkflowRouter.builder(engine()).maxQueued(2).build();
    List<Routed> maps = fiveMaps(w, 320);
    String a = maps.get(0).backendId();
    String b = maps.get(2).backendId();
    String c = maps.get(4).backendId();
    Routed r1 = routed(w.route(req(), WorkflowStep.reduce("job", "r1", List.of("m0", "m1", "m2"))));
    assertThat(r1.backendId()).isEqualTo(a); // 64 tokens of inputs on a, 32 on b
    r1.lease().complete(Usage.of(32, 1));
    Routed r2 = routed(w.route(req(), WorkflowStep.reduce("job", "r2", List.of("m1", "m2", "m3"))));
    assertThat(r2.backendId()).isEqualTo(b);
    r2.lease().complete(Usage.of(32, 1));
    // weighted by prompt tokens, not counted: m4's 320 tokens outweigh m2 + m3's 64
    Routed r3 = routed(w.route(req(), WorkflowStep.reduce("job", "r3", List.of("m2", "m3", "m4"))));
    assertThat(r3.backendId()).isEqualTo(c);
    assertThat(w.stats().withInputs()).isEqualTo(3);
  }

  @Test
  void aReduceStaysWithTheEnginesChoiceWhenItsInputsBackendCostsMoreThanTheRatio() {
    for (double ratio : new double[] {1.5, 1000}) {
      RoutingEngine e =
          RoutingEngine.builder()
              .backend(Backend.of("x", "m"))
              .backend(Backend.of("y", "m"))
              .build();
      WorkflowRouter w = WorkflowRouter.builder(e).maxQueued(10).reduceCostRatio(ratio).build();
      String a = map(w, "job", "m0").backendId();
      assertThat(map(w, "job", "m1").backendId()).isEqualTo(a);
      assertThat(map(w, "job", "m2").backendId()).isEqualTo(a);
      String b = routed(e.route(req())).backendId(); // least in flight: the other one
      assertThat(b).isNotEqualTo(a);
      // costs (in flight): a 3, b 1; a holds every input
      WorkflowStep reduce = WorkflowStep.reduce("job", "r", List.of("m0", "m1", "m2"));
      Routed r = routed(w.route(req(), reduce));
      assertThat(r.backendId()).as("ratio %s", ratio).isEqualTo(ratio == 1.5 ? b : a);
    }
  }

  @Test
  void aChainStepFollowsItsPredecessorIncludingAReduce() {
    WorkflowRouter w = WorkflowRouter.builder(engine()).maxQueued(2).build();
    List<Routed> maps = fiveMaps(w, 32);
    Routed r = routed(w.route(req(), WorkflowStep.reduce("job", "r", List.of("m4"))));
    assertThat(r.backendId()).isEqualTo(maps.get(4).backendId());
    r.lease().complete(Usage.of(32, 1));
    Routed next = routed(w.route(req(), WorkflowStep.reduce("job", "next", List.of("r"))));
    assertThat(next.backendId()).isEqualTo(r.backendId());
  }

  @Test
  void aReduceSkipsAnInputsBackendWithoutRoom() {
    WorkflowRouter w = WorkflowRouter.builder(engine()).maxQueued(2).build();
    List<Routed> maps = fiveMaps(w, 32);
    String a = maps.get(0).backendId();
    String b = maps.get(2).backendId();
    w.engine().backends().reportLoad(a, LoadReport.of(1, 0, 0.95));
    Routed r = routed(w.route(req(), WorkflowStep.reduce("job", "r", List.of("m0", "m1", "m2"))));
    assertThat(r.backendId()).isEqualTo(b); // a holds more of the inputs but has no room
  }

  @Test
  void aReduceWithNoKnownInputIsTheEnginesChoice() {
    WorkflowRouter w = WorkflowRouter.builder(engine()).build();
    Routed r = routed(w.route(req(), WorkflowStep.reduce("job", "r", List.of("never-routed"))));
    assertThat(r.reason()).startsWith("least-in-flight");
    assertThat(w.stats().byEngine()).isEqualTo(1);
    assertThat(w.stats().withInputs()).isZero();
  }

  @Test
  void groupsAreScopedByTenant() {
    WorkflowRouter w = WorkflowRouter.builder(engine()).maxQueued(10).build();
    String a = routed(w.route(req("acme", 32), WorkflowStep.map("job", "m0"))).backendId();
    String other = routed(w.route(req("other", 32), WorkflowStep.map("job", "m0"))).backendId();
    assertThat(other).isNotEqualTo(a); // another tenant's first map: least-in-flight elsewhere
    assertThat(w.holders("acme", "job")).containsExactly(a);
    assertThat(w.holders("other", "job")).containsExactly(other);
  }

  @Test
  void aRejectedRouteRemembersNothing() {
    WorkflowRouter w = WorkflowRouter.builder(engine()).build();
    RouteRequest wrongModel = RouteRequest.builder("t", "no-such-model").build();
    assertThat(w.route(wrongModel, WorkflowStep.map("job", "m0"))).isInstanceOf(Rejected.class);
    assertThat(w.holders("t", "job")).isEmpty();
    assertThat(w.stats().groups()).isZero();
  }

  @Test
  void anUnusedGroupExpiresAfterItsTtl() {
    WorkflowRouter w = WorkflowRouter.builder(engine()).groupTtl(Duration.ofSeconds(10)).build();
    String a = map(w, "job", "m0").backendId();
    clock.addAndGet(Duration.ofSeconds(9).toNanos());
    assertThat(w.holders("t", "job")).containsExactly(a); // a view is a use
    clock.addAndGet(Duration.ofSeconds(11).toNanos());
    assertThat(w.holders("t", "job")).isEmpty();
    assertThat(w.stats().expiredGroups()).isEqualTo(1);
  }

  @Test
  void groupsAndMembersAreBounded() {
    WorkflowRouter w = WorkflowRouter.builder(engine()).maxGroups(2).maxMembers(2).build();
    map(w, "g0", "m0");
    map(w, "g1", "m0");
    map(w, "g2", "m0");
    assertThat(w.stats().groups()).isEqualTo(2);
    assertThat(w.stats().evictedGroups()).isEqualTo(1);
    assertThat(w.holders("t", "g0")).isEmpty(); // the least recently used

    map(w, "g2", "m1");
    map(w, "g2", "m2"); // m0 forgotten
    assertThat(w.stats().forgottenMembers()).isEqualTo(1);
    Routed r = routed(w.route(req(), WorkflowStep.reduce("g2", "r", List.of("m0"))));
    assertThat(r.reason()).startsWith("least-in-flight"); // its only input is forgotten
  }

  @Test
  void forgetDropsAGroupAtOnce() {
    WorkflowRouter w = WorkflowRouter.builder(engine()).build();
    map(w, "job", "m0");
    assertThat(w.forget("t", "job")).isTrue();
    assertThat(w.forget("t", "job")).isFalse();
    assertThat(w.holders("t", "job")).isEmpty();
  }

  @Test
  void aFailoverOfASteeredRouteFindsAnotherBackend() {
    WorkflowRouter w = WorkflowRouter.builder(engine()).maxQueued(10).build();
    Routed first = map(w, "job", "m0");
    Routed second = map(w, "job", "m1");
    assertThat(second.backendId()).isEqualTo(first.backendId());
    second.lease().fail(Failure.of(Failure.Kind.CONNECT));
    RouteDecision again = second.lease().failover();
    assertThat(routed(again).backendId()).isNotEqualTo(first.backendId());
  }

  @Test
  void aRequestWithoutAStepIsThePlainEngineRoute() {
    WorkflowRouter w = WorkflowRouter.builder(engine()).build();
    assertThat(routed(w.route(req())).reason()).startsWith("least-in-flight");
    assertThat(w.stats().groups()).isZero();
  }

  @Test
  void stepsAreValidated() {
    assertThatThrownBy(() -> new WorkflowStep("g", "m", WorkflowStep.Kind.MAP, List.of("x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("no inputs");
    assertThatThrownBy(() -> WorkflowStep.reduce("g", "r", List.of()))
        .hasMessageContaining("1..1024 inputs");
    assertThatThrownBy(() -> WorkflowStep.reduce("g", "r", List.of("r")))
        .hasMessageContaining("its own input");
    assertThatThrownBy(() -> WorkflowStep.reduce("g", "r", List.of("a", "a")))
        .hasMessageContaining("named twice");
    assertThatThrownBy(() -> WorkflowStep.map("", "m")).hasMessageContaining("group must be");
    assertThatThrownBy(() -> WorkflowStep.map("g", "x".repeat(257)))
        .hasMessageContaining("member must be 1..256 characters, was 257");
    assertThatThrownBy(() -> WorkflowStep.map(null, "m")).isInstanceOf(NullPointerException.class);
  }

  @Test
  void builderBoundsAreChecked() {
    WorkflowRouter.Builder b = WorkflowRouter.builder(engine());
    assertThatThrownBy(() -> b.maxQueued(0)).hasMessageContaining("maxQueued must be in");
    assertThatThrownBy(() -> b.maxPendingTokens(0)).hasMessageContaining("maxPendingTokens");
    assertThatThrownBy(() -> b.maxKvUsage(0)).hasMessageContaining("maxKvUsage");
    assertThatThrownBy(() -> b.reduceCostRatio(0.5)).hasMessageContaining("reduceCostRatio");
    assertThatThrownBy(() -> b.maxGroups(0)).hasMessageContaining("maxGroups");
    assertThatThrownBy(() -> b.maxMembers(0)).hasMessageContaining("maxMembers");
    assertThatThrownBy(() -> b.groupTtl(Duration.ZERO)).hasMessageContaining("groupTtl");
    assertThatThrownBy(() -> b.loadStaleAfter(Duration.ofDays(2)))
        .hasMessageContaining("loadStaleAfter");
    RoutingEngine other =
        new RoutingEngine() {
          @Override
          public RouteDecision route(RouteRequest request) {
            throw new UnsupportedOperationException();
          }

          @Override
          public BackendRegistry backends() {
            throw new UnsupportedOperationException();
          }

          @Override
          public boolean applyKvEvents(String backendId, List<? extends KvEvent> batch) {
            return false;
          }

          @Override
          public boolean applyPredicted(String backendId, long[] keys, int keyCount) {
            return false;
          }

          @Override
          public RouterSnapshot inspect() {
            throw new UnsupportedOperationException();
          }
        };
    assertThatThrownBy(() -> WorkflowRouter.builder(other))
        .hasMessageContaining("must be built by RoutingEngine.builder()");
  }
}
