package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.spi.IndexSignal;
import dev.prefixrouter.api.spi.RoutingListener;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class RoutingEngineTest {
  private final AtomicLong clock = new AtomicLong(1_000_000_000L);

  private RoutingEngineBuilder builder() {
    return RoutingEngine.builder().ticker(clock::get);
  }

  private static RouteRequest req(String model) {
    return RouteRequest.builder("t", model)
        .prompt(Prompt.ofTokens(Fakes.tokens(16, 0)))
        .maxOutputTokens(8)
        .build();
  }

  private static Routed routed(RouteDecision d) {
    assertThat(d).isInstanceOf(Routed.class);
    return (Routed) d;
  }

  private static Rejected rejected(RouteDecision d) {
    assertThat(d).isInstanceOf(Rejected.class);
    return (Rejected) d;
  }

  @Test
  void routesWithBuiltInPartsOnly() {
    RoutingEngine engine = RoutingEngine.builder().backend(Backend.of("b0", "m")).build();
    Routed r = routed(engine.route(req("m")));
    assertThat(r.backendId()).isEqualTo("b0");
    assertThat(r.resolvedModel()).isEqualTo("m");
    assertThat(r.matchedTokens()).isZero();
    assertThat(r.promptTokens()).isEqualTo(16);
    assertThat(r.attempt()).isZero();
  }

  @Test
  void leastInFlightSpreadsOpenRequestsAndRotatesTies() {
    RoutingEngine engine =
        builder()
            .backend(Backend.of("a", "m"))
            .backend(Backend.of("b", "m"))
            .backend(Backend.of("c", "m"))
            .build();
    List<String> chosen = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      chosen.add(routed(engine.route(req("m"))).backendId());
    }
    assertThat(chosen.subList(0, 3)).containsExactlyInAnyOrder("a", "b", "c");
    assertThat(chosen.subList(3, 6)).containsExactlyInAnyOrder("a", "b", "c");
    assertThat(engine.inspect().backends()).allSatisfy(b -> assertThat(b.inFlight()).isEqualTo(2));
  }

  @Test
  void weightScalesLeastInFlight() {
    RoutingEngine engine =
        builder()
            .backend(Backend.of("big", "m").withWeight(3))
            .backend(Backend.of("small", "m"))
            .build();
    for (int i = 0; i < 8; i++) {
      engine.route(req("m"));
    }
    RouterSnapshot s = engine.inspect();
    assertThat(s.backend("big").orElseThrow().inFlight()).isEqualTo(6);
    assertThat(s.backend("small").orElseThrow().inFlight()).isEqualTo(2);
  }

  @Test
  void theSnapshotAndTheScorerSeeTheIndexsSignalsAtTheEnginesClock() {
    long[] seen = new long[2];
    Fakes.NoOpIndex index =
        new Fakes.NoOpIndex() {
          @Override
          public long signal(int slot, IndexSignal signal, long nowNanos) {
            return switch (signal) {
              case LRU_AGE_NANOS -> slot == 0 ? IndexSignal.ABSENT : nowNanos - 5;
              case HELD_BLOCKS -> 10 + slot;
              default -> IndexSignal.ABSENT;
            };
          }
        };
    RoutingEngine engine =
        builder()
            .prefixIndex(index)
            .scorer(
                new dev.prefixrouter.api.spi.Scorer() {
                  @Override
                  public String name() {
                    return "ages";
                  }

                  @Override
                  public void score(dev.prefixrouter.api.spi.ScoringContext ctx) {
                    for (int i = 0; i < ctx.size(); i++) {
                      seen[ctx.slot(i)] = ctx.signal(i, IndexSignal.LRU_AGE_NANOS);
                    }
                  }
                })
            .backend(Backend.of("a", "m"))
            .backend(Backend.of("b", "m"))
            .build();
    engine.route(req("m"));
    assertThat(seen).containsExactly(IndexSignal.ABSENT, clock.get() - 5);
    RouterSnapshot s = engine.inspect();
    BackendSnapshot a = s.backend("a").orElseThrow();
    BackendSnapshot b = s.backend("b").orElseThrow();
    assertThat(a.lruAgeNanos()).isEmpty();
    assertThat(a.indexSignals()).containsExactly(Map.entry(IndexSignal.HELD_BLOCKS, 10L));
    assertThat(b.lruAgeNanos()).hasValue(clock.get() - 5);
    assertThat(b.indexSignals())
        .containsOnly(
            Map.entry(IndexSignal.LRU_AGE_NANOS, clock.get() - 5),
            Map.entry(IndexSignal.HELD_BLOCKS, 11L));
  }

  @Test
  void fallbacksAreTheNextRankedCandidatesUpToTheLimit() {
    RoutingEngine engine =
        builder()
            .maxFallbacks(2)
            .backend(Backend.of("a", "m"))
            .backend(Backend.of("b", "m"))
            .backend(Backend.of("c", "m"))
            .backend(Backend.of("d", "m"))
            .build();
    Routed r = routed(engine.route(req("m")));
    assertThat(r.fallbacks()).hasSize(2).doesNotContain(r.backendId()).doesNotContainNull();
    assertThat(r.fallbacks()).isEqualTo(List.copyOf(r.fallbacks()));
    assertThat(r.fallbacks().hashCode()).isEqualTo(List.copyOf(r.fallbacks()).hashCode());
    assertThatThrownBy(() -> r.fallbacks().add("x"))
        .isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> r.fallbacks().set(0, "x"))
        .isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void unknownModelIsRejectedByTheModelFilter() {
    RoutingEngine engine = builder().backend(Backend.of("b0", "m")).build();
    Rejected x = rejected(engine.route(req("other")));
    assertThat(x.reason()).isEqualTo(RejectReason.NO_ELIGIBLE_BACKEND);
    assertThat(x.emptiedBy()).isEqualTo(EligibilityFilter.MODEL);
    assertThat(x.message()).contains("other");
  }

  @Test
  void emptyEngineRejectsByModel() {
    Rejected x = rejected(builder().build().route(req("m")));
    assertThat(x.emptiedBy()).isEqualTo(EligibilityFilter.MODEL);
  }

  @Test
  void eachFilterIsReportedWhenItEmptiesTheSet() {
    RoutingEngine engine =
        builder()
            .health(new Fakes.SimpleBreaker(1))
            .backend(Backend.of("a", "m").withCapability("vision").withLabel("zone", "eu"))
            .build();
    engine.backends().drain("a");
    assertThat(rejected(engine.route(req("m"))).emptiedBy()).isEqualTo(EligibilityFilter.DRAINING);
    engine.backends().undrain("a");

    RouteRequest needsGpu = req("m").toBuilder().requireCapability("gpu-h100").build();
    assertThat(rejected(engine.route(needsGpu)).emptiedBy())
        .isEqualTo(EligibilityFilter.CAPABILITY);
    RouteRequest needsUs = req("m").toBuilder().requireLabel("zone", "us").build();
    assertThat(rejected(engine.route(needsUs)).emptiedBy()).isEqualTo(EligibilityFilter.LABEL);
    RouteRequest fits =
        req("m").toBuilder().requireCapability("vision").requireLabel("zone", "eu").build();
    Routed r = routed(engine.route(fits));
    r.lease().fail(Failure.of(Failure.Kind.CONNECT));
    assertThat(rejected(engine.route(req("m"))).emptiedBy()).isEqualTo(EligibilityFilter.HEALTH);
  }

  @Test
  void filterReportedIsTheOneThatRemovedTheLastCandidate() {
    // a is draining (filter 1), b lacks the capability (filter 3): the set empties at CAPABILITY.
    RoutingEngine engine =
        builder()
            .backend(Backend.of("a", "m").withCapability("vision"))
            .backend(Backend.of("b", "m"))
            .build();
    engine.backends().drain("a");
    RouteRequest vision = req("m").toBuilder().requireCapability("vision").build();
    assertThat(rejected(engine.route(vision)).emptiedBy()).isEqualTo(EligibilityFilter.CAPABILITY);
  }

  @Test
  void unhealthyBackendIsSkippedAndTransitionIsReported() {
    Fakes.RecordingListener listener = new Fakes.RecordingListener();
    RoutingEngine engine =
        builder()
            .health(new Fakes.SimpleBreaker(1))
            .listener(listener)
            .backend(Backend.of("a", "m"))
            .backend(Backend.of("b", "m"))
            .build();
    Routed first = routed(engine.route(req("m")));
    first.lease().fail(Failure.of(Failure.Kind.TIMEOUT));
    assertThat(listener.events).contains("health " + first.backendId() + " CLOSED->OPEN");
    for (int i = 0; i < 5; i++) {
      assertThat(routed(engine.route(req("m"))).backendId()).isNotEqualTo(first.backendId());
    }
    assertThat(engine.inspect().backend(first.backendId()).orElseThrow().health())
        .isEqualTo(HealthState.OPEN);
  }

  @Test
  void failuresReportedOutsideALeaseFeedTheBreaker() {
    Fakes.RecordingListener listener = new Fakes.RecordingListener();
    RoutingEngine engine =
        builder()
            .health(new Fakes.SimpleBreaker(2))
            .listener(listener)
            .backend(Backend.of("a", "m"))
            .backend(Backend.of("b", "m"))
            .build();
    assertThat(engine.backends().reportFailure("a", Failure.of(Failure.Kind.CANCELLED))).isTrue();
    assertThat(engine.backends().reportFailure("a", Failure.of(Failure.Kind.CONNECT))).isTrue();
    assertThat(engine.inspect().backend("a").orElseThrow().health()).isEqualTo(HealthState.CLOSED);
    assertThat(engine.backends().reportFailure("a", Failure.of(Failure.Kind.TIMEOUT))).isTrue();
    assertThat(listener.events).contains("health a CLOSED->OPEN");
    for (int i = 0; i < 5; i++) {
      assertThat(routed(engine.route(req("m"))).backendId()).isEqualTo("b");
    }
    assertThat(engine.backends().reportFailure("gone", Failure.of(Failure.Kind.CONNECT))).isFalse();
  }

  @Test
  void cancelledAndClientErrorsDoNotFeedTheBreaker() {
    RoutingEngine engine =
        builder().health(new Fakes.SimpleBreaker(1)).backend(Backend.of("a", "m")).build();
    routed(engine.route(req("m"))).lease().fail(Failure.of(Failure.Kind.CANCELLED));
    routed(engine.route(req("m"))).lease().fail(Failure.httpStatus(400));
    assertThat(engine.inspect().backend("a").orElseThrow().health()).isEqualTo(HealthState.CLOSED);
  }

  @Test
  void aliasResolvesBeforeEligibility() {
    RoutingEngine engine =
        builder()
            .modelAlias("gpt-4", "llama-3-70b")
            .backend(Backend.of("b", "llama-3-70b"))
            .build();
    Routed r = routed(engine.route(req("gpt-4")));
    assertThat(r.resolvedModel()).isEqualTo("llama-3-70b");
    assertThat(r.request().model()).isEqualTo("gpt-4");
  }

  @Test
  void splitIsStickyPerSession() {
    RoutingEngine engine =
        builder()
            .modelSplit("chat", Map.of("v1", 50, "v2", 50))
            .backend(Backend.of("b1", "v1"))
            .backend(Backend.of("b2", "v2"))
            .build();
    for (int s = 0; s < 20; s++) {
      RouteRequest r = req("chat").toBuilder().session("session-" + s).build();
      String model = routed(engine.route(r)).resolvedModel();
      for (int k = 0; k < 5; k++) {
        assertThat(routed(engine.route(r)).resolvedModel()).isEqualTo(model);
      }
    }
  }

  @Test
  void builderRejectsBadModelRouting() {
    assertThatThrownBy(() -> builder().modelAlias("a", "b").modelAlias("b", "c").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("another alias");
    assertThatThrownBy(() -> builder().modelAlias("x", "x"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> builder().modelSplit("m", Map.of("a", 0))).hasMessageContaining("sum");
    assertThatThrownBy(() -> builder().modelSplit("m", Map.of("a", -1)))
        .hasMessageContaining("weight");
    assertThatThrownBy(
            () -> builder().modelSplit("m", Map.of("n", 1)).modelSplit("n", Map.of("o", 1)).build())
        .hasMessageContaining("split or aliased");
    assertThatThrownBy(
            () -> builder().backend(Backend.of("a", "m")).backend(Backend.of("a", "m")).build())
        .hasMessageContaining("duplicate backend id 'a'");
    assertThatThrownBy(() -> builder().maxBackends(0)).hasMessageContaining("maxBackends");
    assertThatThrownBy(() -> builder().retryBudget(17)).hasMessageContaining("retryBudget");
  }

  @Test
  void maxBackendsIsEnforcedAndSlotsAreReusedAfterRemoval() {
    Fakes.RecordingIndex index = new Fakes.RecordingIndex();
    RoutingEngine engine =
        builder()
            .maxBackends(2)
            .prefixIndex(index)
            .backend(Backend.of("a", "m"))
            .backend(Backend.of("b", "m"))
            .build();
    assertThatThrownBy(() -> engine.backends().add(Backend.of("c", "m")))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("maxBackends 2");
    assertThat(engine.backends().remove("a")).isTrue();
    engine.backends().add(Backend.of("c", "m"));
    assertThat(index.calls).containsSubsequence("add 0 0", "add 1 0", "remove 0", "add 0 0");
    assertThat(engine.backends().remove("a")).isFalse();
  }

  @Test
  void replacingABackendKeepsItsStateAndUpdatesCapacity() {
    Fakes.RecordingIndex index = new Fakes.RecordingIndex();
    RoutingEngine engine =
        builder().prefixIndex(index).backend(Backend.of("a", "m").withCapacityBlocks(10)).build();
    engine.route(req("m"));
    engine.backends().add(Backend.of("a", "m", "m2").withCapacityBlocks(20));
    assertThat(index.calls).contains("capacity 0 20");
    assertThat(engine.inspect().backend("a").orElseThrow().inFlight()).isEqualTo(1);
    assertThat(routed(engine.route(req("m2"))).backendId()).isEqualTo("a");
  }

  @Test
  void updateChangesOnlyExistingBackends() {
    Fakes.RecordingIndex index = new Fakes.RecordingIndex();
    RoutingEngine engine = builder().prefixIndex(index).backend(Backend.of("a", "m")).build();
    assertThat(engine.backends().update("a", b -> b.withCapacityBlocks(99))).isTrue();
    assertThat(engine.backends().get("a").orElseThrow().capacityBlocks()).isEqualTo(99);
    assertThat(index.calls).contains("capacity 0 99");
    assertThat(engine.backends().update("zz", b -> b)).isFalse();
    assertThat(engine.backends().get("zz")).isEmpty();
    assertThatThrownBy(() -> engine.backends().update("a", b -> Backend.of("other", "m")))
        .hasMessageContaining("must keep the id");
  }

  @Test
  void afterRemoveNoDecisionNamesTheBackend() {
    RoutingEngine engine =
        builder().backend(Backend.of("a", "m")).backend(Backend.of("b", "m")).build();
    Routed open = routed(engine.route(req("m")));
    engine.backends().remove(open.backendId());
    for (int i = 0; i < 10; i++) {
      assertThat(routed(engine.route(req("m"))).backendId()).isNotEqualTo(open.backendId());
    }
    open.lease().complete(Usage.of(16, 1)); // a lease of a removed backend still ends normally
    assertThat(open.lease().isEnded()).isTrue();
  }

  @Test
  void drainAndUndrainOfUnknownBackendThrow() {
    RoutingEngine engine = builder().build();
    assertThatThrownBy(() -> engine.backends().drain("x"))
        .isInstanceOf(java.util.NoSuchElementException.class)
        .hasMessageContaining("'x'");
    assertThat(engine.backends().reportLoad("x", LoadReport.of(1, 1, 0.5))).isFalse();
    assertThat(engine.applyKvEvents("x", List.of(AllBlocksCleared.INSTANCE))).isFalse();
  }

  @Test
  void inspectReflectsInFlightDrainingAndLoadReports() {
    RoutingEngine engine =
        builder().backend(Backend.of("a", "m")).backend(Backend.of("b", "m")).build();
    Routed r1 = routed(engine.route(req("m")));
    Routed r2 = routed(engine.route(req("m")));
    engine.backends().drain("b");
    engine.backends().reportLoad("a", new LoadReport(3, 2, 0.5, Duration.ofMillis(100)));
    clock.addAndGet(50_000_000L);
    RouterSnapshot s = engine.inspect();
    BackendSnapshot a = s.backend("a").orElseThrow();
    assertThat(s.inFlight()).isEqualTo(2);
    assertThat(a.lastLoad()).isEqualTo(new LoadReport(3, 2, 0.5, Duration.ofMillis(100)));
    assertThat(a.loadAgeNanos()).isEqualTo(150_000_000L);
    assertThat(s.backend("b").orElseThrow().draining()).isTrue();
    assertThat(s.backend("b").orElseThrow().lastLoad()).isNull();
    assertThat(s.backend("b").orElseThrow().loadAgeNanos()).isNull();
    assertThat(s.routed()).isEqualTo(2);

    r1.lease().firstToken();
    BackendSnapshot afterFirst = engine.inspect().backend(r1.backendId()).orElseThrow();
    assertThat(afterFirst.runningDecodes()).isEqualTo(1);
    assertThat(afterFirst.pendingPrefillTokens()).isZero();
    r1.lease().complete(Usage.of(16, 4));
    r2.lease().fail(Failure.of(Failure.Kind.CONNECT));
    assertThat(engine.inspect().inFlight()).isZero();
    assertThat(engine.inspect().backends())
        .allSatisfy(
            b -> {
              assertThat(b.runningDecodes()).isZero();
              assertThat(b.pendingPrefillTokens()).isZero();
            });
  }

  @Test
  void pendingPrefillCountsOnlyUncachedTokens() {
    Fakes.RecordingIndex index = new Fakes.RecordingIndex();
    index.matchBySlot.put(0, 3); // 3 blocks of 4 tokens cached on slot 0
    RoutingEngine engine =
        builder()
            .hasher(new Fakes.SimpleHasher())
            .prefixIndex(index)
            .backend(Backend.of("a", "m"))
            .build();
    Routed r = routed(engine.route(req("m")));
    assertThat(r.matchedTokens()).isEqualTo(12);
    assertThat(engine.inspect().backend("a").orElseThrow().pendingPrefillTokens()).isEqualTo(4);
    assertThat(index.calls).contains("routed 0 4");
    assertThat(engine.inspect().backend("a").orElseThrow().predictedHitRatio()).isEqualTo(0.75);
  }

  @Test
  void rateLimitedRequestIsRejectedWithRetryAfterAndTooLargeWithoutOne() {
    Fakes.CountingLimiter limiter = new Fakes.CountingLimiter(30);
    RoutingEngine engine = builder().limiter(limiter).backend(Backend.of("a", "m")).build();
    routed(engine.route(req("m"))); // 16 + 8 = 24 tokens
    Rejected limited = rejected(engine.route(req("m")));
    assertThat(limited.reason()).isEqualTo(RejectReason.RATE_LIMITED);
    assertThat(limited.retryAfter()).isEqualTo(Duration.ofSeconds(1));
    assertThat(limited.retryable()).isTrue();
    RouteRequest huge = req("m").toBuilder().maxOutputTokens(1000).build();
    Rejected tooLarge = rejected(engine.route(huge));
    assertThat(tooLarge.reason()).isEqualTo(RejectReason.REQUEST_TOO_LARGE);
    assertThat(tooLarge.retryable()).isFalse();
    assertThat(engine.inspect().rejected())
        .containsEntry(RejectReason.RATE_LIMITED, 1L)
        .containsEntry(RejectReason.REQUEST_TOO_LARGE, 1L);
  }

  @Test
  void aRequestsOtherPromptsAreReservedAndChargedLikeItsPrompt() {
    Fakes.CountingLimiter limiter = new Fakes.CountingLimiter(1000);
    RoutingEngine engine = builder().limiter(limiter).backend(Backend.of("a", "m")).build();
    // a completions body with many prompts, routed on its first: the rest is prefilled too
    RouteRequest batch = req("m").toBuilder().additionalPromptTokens(2000).build();
    assertThat(batch.promptTokens()).isEqualTo(2016);
    assertThat(rejected(engine.route(batch)).reason()).isEqualTo(RejectReason.REQUEST_TOO_LARGE);
    Routed r = routed(engine.route(req("m").toBuilder().additionalPromptTokens(500).build()));
    assertThat(r.promptTokens()).isEqualTo(516);
    assertThat(limiter.balance("t")).isEqualTo(1000 - 516 - 8);
    r.lease().firstToken();
    r.lease().fail(Failure.of(Failure.Kind.CANCELLED)); // no usage known: the prompts are charged
    assertThat(limiter.balance("t")).isEqualTo(1000 - 516);
    assertThatThrownBy(() -> req("m").toBuilder().additionalPromptTokens(-1).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("additionalPromptTokens");
  }

  @Test
  void limiterIsRefundedWhenNoBackendIsEligibleAndTrueUpOnCompletion() {
    Fakes.CountingLimiter limiter = new Fakes.CountingLimiter(1000);
    RoutingEngine engine = builder().limiter(limiter).backend(Backend.of("a", "m")).build();
    rejected(engine.route(req("unknown")));
    assertThat(limiter.balance("t")).isEqualTo(1000);
    Routed r = routed(engine.route(req("m")));
    assertThat(limiter.balance("t")).isEqualTo(1000 - 24);
    r.lease().complete(Usage.of(16, 2));
    assertThat(limiter.balance("t")).isEqualTo(1000 - 18);
    r.lease().complete(Usage.of(16, 100)); // ignored
    assertThat(limiter.balance("t")).isEqualTo(1000 - 18);
  }

  @Test
  void failureAfterFirstTokenChargesThePromptOnly() {
    Fakes.CountingLimiter limiter = new Fakes.CountingLimiter(1000);
    RoutingEngine engine = builder().limiter(limiter).backend(Backend.of("a", "m")).build();
    Routed r = routed(engine.route(req("m")));
    r.lease().firstToken();
    r.lease().fail(Failure.of(Failure.Kind.ENGINE_ERROR));
    assertThat(limiter.balance("t")).isEqualTo(1000 - 16);
    assertThat(rejected(r.lease().failover()).reason()).isEqualTo(RejectReason.NOT_RETRYABLE);
  }

  @Test
  void failoverExcludesFailedBackendsAndRespectsTheBudget() {
    Fakes.CountingLimiter limiter = new Fakes.CountingLimiter(1000);
    RoutingEngine engine =
        builder()
            .retryBudget(2)
            .limiter(limiter)
            .backend(Backend.of("a", "m"))
            .backend(Backend.of("b", "m"))
            .backend(Backend.of("c", "m"))
            .backend(Backend.of("d", "m"))
            .build();
    Routed r0 = routed(engine.route(req("m")));
    assertThat(rejected(r0.lease().failover()).reason())
        .as("failover of an open lease")
        .isEqualTo(RejectReason.NOT_RETRYABLE);
    r0.lease().fail(Failure.of(Failure.Kind.CONNECT));
    Routed r1 = routed(r0.lease().failover());
    assertThat(r1.attempt()).isEqualTo(1);
    assertThat(rejected(r0.lease().failover()).reason()).isEqualTo(RejectReason.NOT_RETRYABLE);
    r1.lease().fail(Failure.of(Failure.Kind.SERVER_ERROR));
    Routed r2 = routed(r1.lease().failover());
    Set<String> used = new HashSet<>(List.of(r0.backendId(), r1.backendId(), r2.backendId()));
    assertThat(used).hasSize(3);
    assertThat(limiter.balance("t")).isEqualTo(1000 - 24);
    r2.lease().fail(Failure.of(Failure.Kind.CONNECT));
    Rejected out = rejected(r2.lease().failover());
    assertThat(out.reason()).isEqualTo(RejectReason.RETRY_BUDGET_EXHAUSTED);
    assertThat(limiter.balance("t")).isEqualTo(1000);
    assertThat(engine.inspect().failovers()).isEqualTo(2);
    assertThat(engine.inspect().inFlight()).isZero();
    RouterSnapshot s = engine.inspect();
    assertThat(s.routed()).as("one request, whatever its failovers").isEqualTo(1);
    assertThat(s.backends().stream().mapToLong(BackendSnapshot::routed).sum())
        .as("placements: the first and two failovers")
        .isEqualTo(3);
  }

  @Test
  void routedTotalKeepsABackendBeingRemovedWhileItsClaimsEnd() throws Exception {
    java.util.concurrent.CountDownLatch inWrite = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.atomic.AtomicBoolean block =
        new java.util.concurrent.atomic.AtomicBoolean();
    Fakes.NoOpIndex blocking =
        new Fakes.NoOpIndex() {
          @Override
          public void recordRouted(long[] keys, int keyCount, int slot, long nowNanos) {
            if (block.get()) { // the route holds its claim on the backend while it waits here
              inWrite.countDown();
              try {
                release.await();
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            }
          }
        };
    RoutingEngine engine =
        builder()
            .hasher(new Fakes.SimpleHasher())
            .prefixIndex(blocking)
            .backend(Backend.of("a", "m"))
            .build();
    for (int i = 0; i < 3; i++) {
      routed(engine.route(req("m"))).lease().complete(Usage.of(16, 4));
    }
    block.set(true);
    Thread router = new Thread(() -> engine.route(req("m")));
    router.start();
    assertThat(inWrite.await(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
    Thread remover = new Thread(() -> engine.backends().remove("a"));
    remover.start();
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (!engine.backends().all().isEmpty() && System.nanoTime() < deadline) {
      Thread.onSpinWait(); // until the removal has taken "a" out of the table
    }
    assertThat(engine.backends().all()).isEmpty();
    assertThat(remover.isAlive()).as("removal waits for the open claim").isTrue();
    assertThat(engine.inspect().routed()).as("out of the table, not yet folded in").isEqualTo(4);
    release.countDown();
    router.join(10_000);
    remover.join(10_000);
    assertThat(remover.isAlive()).isFalse();
    assertThat(engine.inspect().routed()).isEqualTo(4);
  }

  @Test
  void routedCountSurvivesTheRemovalOfTheBackendsItWentTo() {
    RoutingEngine engine =
        builder().backend(Backend.of("a", "m")).backend(Backend.of("b", "m")).build();
    for (int i = 0; i < 6; i++) {
      routed(engine.route(req("m"))).lease().complete(Usage.of(16, 4));
    }
    long onA = engine.inspect().backend("a").orElseThrow().routed();
    assertThat(onA).isPositive();
    assertThat(engine.backends().remove("a")).isTrue();
    assertThat(engine.inspect().routed()).isEqualTo(6);
    routed(engine.route(req("m"))).lease().complete(Usage.of(16, 4));
    assertThat(engine.inspect().routed()).isEqualTo(7);
    assertThat(engine.inspect().backend("b").orElseThrow().routed()).isEqualTo(7 - onA);
  }

  /**
   * A lease the client cancelled is not failed over: a failover raced by a cancel (a timer's
   * failover on another thread) would charge the tenant again and leave a lease no one ends.
   */
  @Test
  void aCancelledLeaseIsNotFailedOver() {
    Fakes.CountingLimiter limiter = new Fakes.CountingLimiter(1000);
    RoutingEngine engine =
        builder()
            .limiter(limiter)
            .backend(Backend.of("a", "m"))
            .backend(Backend.of("b", "m"))
            .build();
    Routed r = routed(engine.route(req("m")));
    r.lease().fail(Failure.of(Failure.Kind.CANCELLED));
    r.lease().fail(Failure.of(Failure.Kind.TIMEOUT)); // the timer's failure, late: ignored
    Rejected x = rejected(r.lease().failover());
    assertThat(x.reason()).isEqualTo(RejectReason.NOT_RETRYABLE);
    assertThat(x.message()).contains("cancelled");
    assertThat(engine.inspect().inFlight()).isZero();
    assertThat(limiter.balance("t")).as("refunded, not charged again").isEqualTo(1000);
  }

  @Test
  void failoverWithEveryBackendFailedReportsExcluded() {
    RoutingEngine engine = builder().backend(Backend.of("a", "m")).build();
    Routed r = routed(engine.route(req("m")));
    r.lease().fail(Failure.of(Failure.Kind.CONNECT));
    Rejected x = rejected(r.lease().failover());
    assertThat(x.reason()).isEqualTo(RejectReason.NO_ELIGIBLE_BACKEND);
    assertThat(x.emptiedBy()).isEqualTo(EligibilityFilter.EXCLUDED);
  }

  @Test
  void throwingListenerNeverBreaksRouting() {
    RoutingListener bad =
        new RoutingListener() {
          @Override
          public void onRouted(Routed routed) {
            throw new IllegalStateException("boom");
          }

          @Override
          public void onCompleted(Routed routed, Usage usage, long durationNanos) {
            throw new IllegalStateException("boom");
          }
        };
    Fakes.RecordingListener good = new Fakes.RecordingListener();
    RoutingEngine engine =
        builder().listener(bad).listener(good).backend(Backend.of("a", "m")).build();
    Routed r = routed(engine.route(req("m")));
    clock.addAndGet(7);
    r.lease().firstToken();
    r.lease().complete(Usage.of(16, 1));
    assertThat(good.events).containsSubsequence("added a", "routed a", "first a 7", "completed a");
  }

  @Test
  void sloAdmissionShedsOnlySheddableRequestsWhenTheScorerEstimatesTtft() {
    Scorer ttft =
        new Scorer() {
          @Override
          public String name() {
            return "fixed-ttft";
          }

          @Override
          public void score(ScoringContext ctx) {
            for (int i = 0; i < ctx.size(); i++) {
              ctx.setCost(i, 500.0);
            }
            ctx.sortByCost(0);
          }

          @Override
          public OptionalLong estimatedTtftNanos(ScoringContext ctx, int candidate) {
            return OptionalLong.of(Duration.ofMillis(500).toNanos());
          }
        };
    RoutingEngine engine = builder().scorer(ttft).backend(Backend.of("a", "m")).build();
    RouteRequest tight = req("m").toBuilder().ttftBudget(Duration.ofMillis(200)).build();
    routed(engine.route(tight));
    Rejected shed = rejected(engine.route(tight.toBuilder().sheddable(true).build()));
    assertThat(shed.reason()).isEqualTo(RejectReason.OVERLOADED);
    assertThat(shed.retryAfter()).isEqualTo(Duration.ofMillis(300));
    assertThat(shed.message())
        .isEqualTo("best estimated TTFT 500.0 ms exceeds the budget of 200.0 ms");
    routed(
        engine.route(tight.toBuilder().sheddable(true).ttftBudget(Duration.ofMillis(600)).build()));
    RoutingEngine noEstimate = builder().backend(Backend.of("a", "m")).build();
    routed(
        noEstimate.route(
            tight.toBuilder().sheddable(true).ttftBudget(Duration.ofNanos(1)).build()));
  }

  /**
   * A rule that ranks a holder first at a cost over the budget (session or prefix affinity) must
   * not shed a request another backend can serve within it: the check read the first ranked only.
   */
  @Test
  void sloAdmissionServesFromTheBestRankedCandidateWithinTheBudget() {
    Scorer promoting =
        new Scorer() {
          @Override
          public String name() {
            return "promoting";
          }

          @Override
          public void score(ScoringContext ctx) {
            for (int i = 0; i < ctx.size(); i++) {
              ctx.setCost(i, ctx.backend(i).id().equals("holder") ? 500.0 : 100.0);
            }
            ctx.sortByCost(0);
            int[] order = ctx.order(); // the holder moves first, as an affinity rule moves it
            for (int r = 0; r < ctx.size(); r++) {
              if (ctx.backend(order[r]).id().equals("holder")) {
                int h = order[r];
                System.arraycopy(order, 0, order, 1, r);
                order[0] = h;
                break;
              }
            }
          }

          @Override
          public OptionalLong estimatedTtftNanos(ScoringContext ctx, int candidate) {
            return OptionalLong.of((long) (ctx.cost(candidate) * 1e6));
          }
        };
    RoutingEngine engine =
        builder()
            .scorer(promoting)
            .backend(Backend.of("holder", "m"))
            .backend(Backend.of("other", "m"))
            .build();
    RouteRequest tight =
        req("m").toBuilder().sheddable(true).ttftBudget(Duration.ofMillis(200)).build();
    Routed r = routed(engine.route(tight));
    assertThat(r.backendId()).isEqualTo("other");
    assertThat(r.fallbacks()).containsExactly("holder");
    assertThat(r.reason()).startsWith("slo:");
    RouteRequest loose = tight.toBuilder().ttftBudget(Duration.ofMillis(600)).build();
    assertThat(routed(engine.route(loose)).backendId()).as("within: as ranked").isEqualTo("holder");
    Rejected shed =
        rejected(engine.route(tight.toBuilder().ttftBudget(Duration.ofMillis(50)).build()));
    assertThat(shed.message())
        .isEqualTo("best estimated TTFT 100.0 ms exceeds the budget of 50.0 ms");
  }

  @Test
  void scorerThatBreaksTheOrderIsAProgrammingError() {
    Scorer broken =
        new Scorer() {
          @Override
          public String name() {
            return "broken";
          }

          @Override
          public void score(ScoringContext ctx) {
            ctx.order()[0] = 7;
          }
        };
    Fakes.CountingLimiter limiter = new Fakes.CountingLimiter(100);
    RoutingEngine engine =
        builder().scorer(broken).limiter(limiter).backend(Backend.of("a", "m")).build();
    assertThatThrownBy(() -> engine.route(req("m")))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("broken");
    assertThat(limiter.balance("t")).isEqualTo(100);
  }

  @Test
  void kvEventsReachTheIndexUnderTheBackendsSlot() {
    Fakes.RecordingIndex index = new Fakes.RecordingIndex();
    RoutingEngine engine =
        builder()
            .prefixIndex(index)
            .backend(Backend.of("a", "m"))
            .backend(Backend.of("b", "m"))
            .build();
    assertThat(engine.applyKvEvents("b", List.of(BlockRemoved.of(1L), AllBlocksCleared.INSTANCE)))
        .isTrue();
    assertThat(index.calls).containsSubsequence("event 1 BlockRemoved", "event 1 AllBlocksCleared");
  }

  @Test
  void prefixIsolationAndCacheSaltChangeTheSeed() {
    List<Long> seeds = new ArrayList<>();
    dev.prefixrouter.api.spi.BlockHasher seedRecorder =
        new dev.prefixrouter.api.spi.BlockHasher() {
          @Override
          public int keys(Prompt prompt, long seed, long[] out) {
            seeds.add(seed);
            return 0;
          }

          @Override
          public int tokensPerBlock() {
            return 16;
          }
        };
    RoutingEngine shared = builder().hasher(seedRecorder).backend(Backend.of("a", "m")).build();
    shared.route(req("m"));
    shared.route(RouteRequest.builder("u", "m").build());
    shared.route(req("m").toBuilder().cacheSalt("s1").build());
    RoutingEngine isolated =
        builder().hasher(seedRecorder).prefixIsolation(true).backend(Backend.of("a", "m")).build();
    isolated.route(req("m"));
    isolated.route(RouteRequest.builder("u", "m").build());
    assertThat(seeds.get(0)).isZero();
    assertThat(seeds.get(1)).isZero();
    assertThat(seeds.get(2)).isNotZero();
    assertThat(seeds.get(3)).isNotEqualTo(seeds.get(4)).isNotZero();
  }

  @Test
  void routeRejectsNull() {
    RoutingEngine engine = builder().build();
    assertThatThrownBy(() -> engine.route(null)).isInstanceOf(NullPointerException.class);
  }
}
