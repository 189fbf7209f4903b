package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class DisaggregatedRouterTest {
  private final AtomicLong clock = new AtomicLong(1_000_000_000L);
  private final Fakes.CountingLimiter limiter = new Fakes.CountingLimiter(1_000);
  private final Fakes.SimpleBreaker breaker = new Fakes.SimpleBreaker(1);

  private RoutingEngine engine(Backend... backends) {
    RoutingEngineBuilder b =
        RoutingEngine.builder().ticker(clock::get).limiter(limiter).health(breaker);
    for (Backend x : backends) {
      b.backend(x);
    }
    return b.build();
  }

  private static Backend p(String id) {
    return Backend.of(id, "m").withRole(Role.PREFILL).withCapacityBlocks(1_000);
  }

  private static Backend d(String id) {
    return Backend.of(id, "m").withRole(Role.DECODE).withCapacityBlocks(1_000);
  }

  /** 16 prompt tokens + 8 reserved output: 24 tokens reserved. */
  private static RouteRequest req() {
    return RouteRequest.builder("t", "m")
        .prompt(Prompt.ofTokens(Fakes.tokens(16, 0)))
        .maxOutputTokens(8)
        .build();
  }

  private static PairRouted pair(PairDecision d) {
    assertThat(d).isInstanceOf(PairRouted.class);
    return (PairRouted) d;
  }

  private static BackendSnapshot snap(RoutingEngine e, String id) {
    return e.inspect().backend(id).orElseThrow();
  }

  @Test
  void aScorerThatThrowsOnTheFirstTokenLeavesNoLegOpen() {
    dev.prefixrouter.api.spi.Scorer throwing =
        new dev.prefixrouter.api.spi.Scorer() {
          @Override
          public String name() {
            return "throwing";
          }

          @Override
          public void score(dev.prefixrouter.api.spi.ScoringContext ctx) {}

          @Override
          public void onFirstToken(dev.prefixrouter.api.spi.FirstTokenObservation o) {
            throw new IllegalStateException("scorer bug");
          }
        };
    RoutingEngine e =
        RoutingEngine.builder()
            .ticker(clock::get)
            .limiter(limiter)
            .health(breaker)
            .scorer(throwing)
            .backend(p("p0"))
            .backend(d("d0"))
            .build();
    DisaggregatedRouter pd = DisaggregatedRouter.builder(e).build();
    PairRouted r = pair(pd.route(req()));
    r.lease().firstToken(); // threw out of the prefill leg's first token before, leaving it open
    r.lease().complete(Usage.of(16, 8));
    assertThat(snap(e, "p0").inFlight()).isZero();
    assertThat(snap(e, "d0").inFlight()).isZero();
    assertThat(limiter.balance("t")).isEqualTo(1_000 - 24);
    // a single lease too: the scorer's throw does not escape firstToken()
    Routed single = (Routed) e.route(req().toBuilder().build());
    single.lease().firstToken();
    single.lease().complete(Usage.of(16, 8));
    assertThat(snap(e, "p0").inFlight() + snap(e, "d0").inFlight()).isZero();
  }

  @Test
  void roleIsCarriedByCapabilitiesAndReplacedByWithRole() {
    Backend b = Backend.of("b", "m").withCapability("vision");
    assertThat(b.role()).isEqualTo(Role.BOTH);
    assertThat(b.withRole(Role.PREFILL).role()).isEqualTo(Role.PREFILL);
    assertThat(b.withRole(Role.PREFILL).capabilities())
        .containsExactlyInAnyOrder("vision", Role.PREFILL_CAPABILITY);
    assertThat(b.withRole(Role.PREFILL).withRole(Role.DECODE).capabilities())
        .containsExactlyInAnyOrder("vision", Role.DECODE_CAPABILITY);
    assertThat(b.withRole(Role.BOTH).capabilities())
        .contains(Role.PREFILL_CAPABILITY, Role.DECODE_CAPABILITY);
    assertThat(b.withRole(Role.BOTH).role()).isEqualTo(Role.BOTH);
  }

  @Test
  void prefillGoesToPrefillCapableAndDecodeToDecodeCapableBackends() {
    RoutingEngine e = engine(p("p0"), d("d0"), Backend.of("plain", "m"));
    DisaggregatedRouter pd = DisaggregatedRouter.builder(e).build();
    for (int i = 0; i < 6; i++) {
      PairRouted r = pair(pd.route(req()));
      assertThat(r.prefillBackend().id()).isEqualTo("p0");
      assertThat(r.decode().id()).isEqualTo("d0");
      assertThat(r.colocated()).isFalse();
      assertThat(r.prefill().request().requiredCapabilities()).contains(Role.PREFILL_CAPABILITY);
    }
  }

  @Test
  void decodeGoesWhereTheLeastKvWorkIsAdded() {
    RoutingEngine e = engine(p("p0"), d("d0"), d("d1"));
    DisaggregatedRouter pd = DisaggregatedRouter.builder(e).build();
    PairRouted first = pair(pd.route(req()));
    PairRouted second = pair(pd.route(req()));
    assertThat(second.decode().id()).isNotEqualTo(first.decode().id());
    // the first pair ends: its decode backend is empty again and wins the next request
    first.lease().complete(Usage.of(16, 8));
    assertThat(pair(pd.route(req())).decode().id()).isEqualTo(first.decode().id());
  }

  @Test
  void transferCostSteersTheDecodeBackendToTheNearOne() {
    RoutingEngine e = engine(p("p0"), d("near"), d("far"));
    DisaggregatedRouter pd =
        DisaggregatedRouter.builder(e)
            .transferCost((from, to) -> to.id().equals("far") ? 1_000_000 : 1_000)
            .build();
    PairRouted r = pair(pd.route(req()));
    assertThat(r.decode().id()).isEqualTo("near");
    assertThat(r.transfer().toNanos()).isEqualTo(16 * 1_000L);
    // the load it adds is far smaller than 16 ms of transfer: near keeps winning
    assertThat(pair(pd.route(req())).decode().id()).isEqualTo("near");
    // the anchor's rule ignores the transfer and balances active tokens
    DisaggregatedRouter anchor =
        DisaggregatedRouter.builder(e)
            .transferCost((from, to) -> to.id().equals("far") ? 1_000_000 : 1_000)
            .decodeRule(DisaggregatedRouter.DecodeRule.LEAST_ACTIVE_TOKENS)
            .build();
    assertThat(pair(anchor.route(req())).decode().id()).isEqualTo("far");
  }

  @Test
  void aDecodeBackendOverTheKvCutoffTakesRequestsOnlyWhenAllAre() {
    RoutingEngine e = engine(p("p0"), d("d0"), d("d1"));
    DisaggregatedRouter pd = DisaggregatedRouter.builder(e).kvCutoff(0.9).build();
    pair(pd.route(req())); // one on d0 or d1
    String busy =
        e.inspect().backends().stream()
            .filter(b -> b.inFlight() == 1 && b.backend().role() == Role.DECODE)
            .findFirst()
            .orElseThrow()
            .backend()
            .id();
    String idle = busy.equals("d0") ? "d1" : "d0";
    e.backends().reportLoad(idle, LoadReport.of(3, 0, 0.95)); // idle by count, KV almost full
    assertThat(pair(pd.route(req())).decode().id()).isEqualTo(busy);
    e.backends().reportLoad(busy, LoadReport.of(3, 0, 0.97)); // both over: least projected use
    PairRouted r = pair(pd.route(req()));
    assertThat(r.decode().id()).isEqualTo(idle);
    assertThat(r.reason()).contains("over cutoff");
  }

  @Test
  void theLeaseTracksBothPhasesAndTruesUpTheTenantOnce() {
    RoutingEngine e = engine(p("p0"), d("d0"));
    PairRouted r = pair(DisaggregatedRouter.builder(e).build().route(req()));
    assertThat(limiter.balance("t")).isEqualTo(1_000 - 24);
    assertThat(snap(e, "p0").inFlight()).isEqualTo(1);
    assertThat(snap(e, "p0").pendingPrefillTokens()).isEqualTo(16);
    assertThat(snap(e, "d0").inFlight()).isEqualTo(1);
    assertThat(snap(e, "d0").runningDecodes()).isZero();

    r.lease().firstToken();
    assertThat(snap(e, "p0").inFlight()).isZero();
    assertThat(snap(e, "p0").pendingPrefillTokens()).isZero();
    assertThat(snap(e, "d0").inFlight()).isEqualTo(1);
    assertThat(snap(e, "d0").runningDecodes()).isEqualTo(1);
    assertThat(limiter.balance("t")).isEqualTo(1_000 - 24); // reservation kept while decoding
    assertThat(r.lease().isEnded()).isFalse();

    r.lease().complete(Usage.of(16, 5));
    r.lease().complete(Usage.of(16, 5)); // no-op
    r.lease().fail(Failure.of(Failure.Kind.TIMEOUT)); // no-op
    assertThat(r.lease().isEnded()).isTrue();
    assertThat(snap(e, "d0").inFlight()).isZero();
    assertThat(snap(e, "d0").runningDecodes()).isZero();
    assertThat(limiter.balance("t")).isEqualTo(1_000 - 21);
    assertThat(e.inspect().backends())
        .allSatisfy(b -> assertThat(b.health()).isEqualTo(HealthState.CLOSED));
  }

  @Test
  void completeWithoutFirstTokenEndsBothPhasesAndObservesNoTtft() {
    java.util.concurrent.atomic.AtomicInteger firstTokens =
        new java.util.concurrent.atomic.AtomicInteger();
    RoutingEngine e =
        RoutingEngine.builder()
            .ticker(clock::get)
            .limiter(limiter)
            .health(breaker)
            .backend(p("p0"))
            .backend(d("d0"))
            .listener(
                new dev.prefixrouter.api.spi.RoutingListener() {
                  @Override
                  public void onFirstToken(Routed routed, long ttftNanos) {
                    firstTokens.incrementAndGet();
                  }
                })
            .build();
    PairRouted r = pair(DisaggregatedRouter.builder(e).build().route(req()));
    r.lease().complete(Usage.of(16, 8));
    assertThat(e.inspect().backends())
        .allSatisfy(
            b -> {
              assertThat(b.inFlight()).isZero();
              assertThat(b.runningDecodes()).isZero();
              assertThat(b.pendingPrefillTokens()).isZero();
            });
    assertThat(limiter.balance("t")).isEqualTo(1_000 - 24);
    assertThat(firstTokens).hasValue(0); // the whole duration is no TTFT
    PairRouted streamed = pair(DisaggregatedRouter.builder(e).build().route(req()));
    streamed.lease().firstToken();
    assertThat(firstTokens).hasValue(1);
  }

  @Test
  void aPrefillFailureBlamesThePrefillBackendAndFailsOverToAnother() {
    RoutingEngine e = engine(p("p0"), p("p1"), d("d0"));
    DisaggregatedRouter pd = DisaggregatedRouter.builder(e).build();
    PairRouted r = pair(pd.route(req()));
    String failed = r.prefillBackend().id();
    r.lease().fail(Failure.of(Failure.Kind.CONNECT));
    assertThat(snap(e, failed).health()).isEqualTo(HealthState.OPEN);
    assertThat(snap(e, "d0").health()).isEqualTo(HealthState.CLOSED);
    assertThat(snap(e, "d0").inFlight()).isZero();
    assertThat(limiter.balance("t")).isEqualTo(1_000);

    PairRouted next = pair(r.lease().failover());
    assertThat(next.prefillBackend().id()).isNotEqualTo(failed);
    assertThat(next.decode().id()).isEqualTo("d0");
    assertThat(next.attempt()).isEqualTo(1);
    assertThat(limiter.balance("t")).isEqualTo(1_000 - 24);
    assertThat(r.lease().failover()).isInstanceOf(Rejected.class); // once only
  }

  @Test
  void aDecodeFailureBeforeTheFirstTokenBlamesTheDecodeBackendOnly() {
    RoutingEngine e = engine(p("p0"), d("d0"), d("d1"));
    DisaggregatedRouter pd = DisaggregatedRouter.builder(e).build();
    PairRouted r = pair(pd.route(req()));
    String failed = r.decode().id();
    r.lease().failDecode(Failure.of(Failure.Kind.CONNECT));
    assertThat(snap(e, failed).health()).isEqualTo(HealthState.OPEN);
    assertThat(snap(e, "p0").health()).isEqualTo(HealthState.CLOSED);
    assertThat(snap(e, "p0").inFlight()).isZero();
    assertThat(limiter.balance("t")).isEqualTo(1_000);

    PairRouted next = pair(r.lease().failover());
    assertThat(next.decode().id()).isNotEqualTo(failed);
    assertThat(next.prefillBackend().id()).isEqualTo("p0"); // not blamed, not excluded
    assertThat(limiter.balance("t")).isEqualTo(1_000 - 24);
  }

  /** Decode failures fail over within the engine's retry budget, as single routes do. */
  @Test
  void decodeFailoversStopAtTheRetryBudget() {
    RoutingEngineBuilder b =
        RoutingEngine.builder().ticker(clock::get).limiter(limiter).health(breaker).retryBudget(1);
    for (Backend x : List.of(p("p0"), d("d0"), d("d1"), d("d2"), d("d3"))) {
      b.backend(x);
    }
    DisaggregatedRouter pd = DisaggregatedRouter.builder(b.build()).build();
    PairRouted first = pair(pd.route(req()));
    first.lease().failDecode(Failure.of(Failure.Kind.CONNECT));
    PairRouted second = pair(first.lease().failover());
    assertThat(second.attempt()).isEqualTo(1);
    second.lease().failDecode(Failure.of(Failure.Kind.CONNECT));
    PairDecision third = second.lease().failover();
    assertThat(third).isInstanceOf(Rejected.class);
    assertThat(((Rejected) third).reason()).isEqualTo(RejectReason.RETRY_BUDGET_EXHAUSTED);
    assertThat(limiter.balance("t")).as("nothing left charged").isEqualTo(1_000);

    // a prefill failure after a decode failover counts the pair's attempts, not its prefill's
    PairRouted again = pair(pd.route(req()));
    again.lease().failDecode(Failure.of(Failure.Kind.CONNECT));
    PairRouted next = pair(again.lease().failover());
    next.lease().fail(Failure.of(Failure.Kind.CONNECT));
    PairDecision over = next.lease().failover();
    assertThat(over).isInstanceOf(Rejected.class);
    assertThat(((Rejected) over).reason()).isEqualTo(RejectReason.RETRY_BUDGET_EXHAUSTED);
  }

  @Test
  void aFailureAfterTheFirstTokenBlamesDecodeChargesThePromptAndIsNotRetried() {
    RoutingEngine e = engine(p("p0"), d("d0"), d("d1"));
    PairRouted r = pair(DisaggregatedRouter.builder(e).build().route(req()));
    r.lease().firstToken();
    r.lease().fail(Failure.of(Failure.Kind.SERVER_ERROR));
    assertThat(snap(e, r.decode().id()).health()).isEqualTo(HealthState.OPEN);
    assertThat(snap(e, "p0").health()).isEqualTo(HealthState.CLOSED);
    assertThat(snap(e, r.decode().id()).runningDecodes()).isZero();
    assertThat(limiter.balance("t")).isEqualTo(1_000 - 16);
    Rejected x = (Rejected) r.lease().failover();
    assertThat(x.reason()).isEqualTo(RejectReason.NOT_RETRYABLE);
  }

  /** After the first token, a failure with usage charges the output the caller received. */
  @Test
  void aLateFailureWithUsageChargesWhatWasProduced() {
    RoutingEngine e = engine(p("p0"), d("d0"), d("d1"));
    PairRouted r = pair(DisaggregatedRouter.builder(e).build().route(req()));
    r.lease().firstToken();
    r.lease().fail(Failure.of(Failure.Kind.CANCELLED), Usage.of(16, 5));
    assertThat(limiter.balance("t")).isEqualTo(1_000 - 21);
    r.lease().fail(Failure.of(Failure.Kind.CANCELLED), Usage.of(16, 9));
    assertThat(limiter.balance("t")).as("ended once").isEqualTo(1_000 - 21);
    assertThat(snap(e, r.decode().id()).inFlight()).isZero();
  }

  @Test
  void noDecodeBackendRejectsAndReleasesThePrefillLeg() {
    RoutingEngine e = engine(p("p0"), Backend.of("plain", "m"));
    PairDecision d = DisaggregatedRouter.builder(e).build().route(req());
    assertThat(d).isInstanceOf(Rejected.class);
    Rejected x = (Rejected) d;
    assertThat(x.reason()).isEqualTo(RejectReason.NO_ELIGIBLE_BACKEND);
    assertThat(x.emptiedBy()).isEqualTo(EligibilityFilter.CAPABILITY);
    assertThat(x.message()).startsWith("no decode backend");
    assertThat(snap(e, "p0").inFlight()).isZero();
    assertThat(snap(e, "p0").health()).isEqualTo(HealthState.CLOSED);
    assertThat(limiter.balance("t")).isEqualTo(1_000);
  }

  /**
   * A limiter that admits one request at a time (permits counts those held; a released permit goes
   * back) and charges no tokens.
   */
  private static dev.prefixrouter.api.spi.TenantLimiter onePermit(
      java.util.concurrent.atomic.AtomicInteger permits) {
    return new dev.prefixrouter.api.spi.TenantLimiter() {
      @Override
      public dev.prefixrouter.api.spi.Admission tryAcquire(String t, long tokens, long now) {
        if (permits.get() >= 1) {
          return dev.prefixrouter.api.spi.Admission.denied(1, "one request at a time");
        }
        permits.incrementAndGet();
        return dev.prefixrouter.api.spi.Admission.GRANTED;
      }

      @Override
      public void adjust(String t, long delta, long now) {}

      @Override
      public void release(String t, long tokens, long now) {
        permits.decrementAndGet();
      }
    };
  }

  @Test
  void aPairWithNoDecodeBackendGivesItsRequestPermitBack() {
    java.util.concurrent.atomic.AtomicInteger permits =
        new java.util.concurrent.atomic.AtomicInteger();
    dev.prefixrouter.api.spi.TenantLimiter onePermit = onePermit(permits);
    RoutingEngine e =
        RoutingEngine.builder()
            .ticker(clock::get)
            .limiter(onePermit)
            .backend(p("p0"))
            .backend(Backend.of("plain", "m"))
            .build();
    DisaggregatedRouter pd = DisaggregatedRouter.builder(e).build();
    for (int i = 0; i < 3; i++) { // the second was RATE_LIMITED: the first kept its permit
      assertThat(((Rejected) pd.route(req())).reason())
          .as("attempt " + i)
          .isEqualTo(RejectReason.NO_ELIGIBLE_BACKEND);
    }
    assertThat(permits.get()).isZero();
    assertThat(snap(e, "p0").inFlight()).isZero();
  }

  /**
   * A decode failure before the first token fails the pair over as one request: no second request
   * permit (a tenant allowed one request at a time is not rate limited for a backend's fault), one
   * routed request and one failover counted.
   */
  @Test
  void aDecodeFailoverTakesNoSecondRequestPermit() {
    java.util.concurrent.atomic.AtomicInteger permits =
        new java.util.concurrent.atomic.AtomicInteger();
    dev.prefixrouter.api.spi.TenantLimiter onePermit = onePermit(permits);
    RoutingEngine e =
        RoutingEngine.builder()
            .ticker(clock::get)
            .limiter(onePermit)
            .backend(p("p0"))
            .backend(d("d0"))
            .backend(d("d1"))
            .build();
    DisaggregatedRouter pd = DisaggregatedRouter.builder(e).build();
    PairRouted first = pair(pd.route(req()));
    first.lease().failDecode(Failure.of(Failure.Kind.CONNECT));
    PairDecision next = first.lease().failover();
    assertThat(next).isInstanceOf(PairRouted.class); // RATE_LIMITED before
    PairRouted second = (PairRouted) next;
    assertThat(second.decode().id()).isNotEqualTo(first.decode().id());
    assertThat(second.attempt()).isEqualTo(1);
    assertThat(permits.get()).isEqualTo(1);
    assertThat(e.inspect().routed()).isEqualTo(1);
    assertThat(e.inspect().failovers()).isEqualTo(1);
    second.lease().firstToken();
    second.lease().complete(Usage.of(8, 16));
    assertThat(snap(e, "p0").inFlight()).isZero();
  }

  @Test
  void noPrefillBackendRejectsThroughTheEngine() {
    RoutingEngine e = engine(d("d0"));
    Rejected x = (Rejected) DisaggregatedRouter.builder(e).build().route(req());
    assertThat(x.emptiedBy()).isEqualTo(EligibilityFilter.CAPABILITY);
    assertThat(snap(e, "d0").inFlight()).isZero();
  }

  @Test
  void aBothBackendMayServeAPairAloneWithNothingToTransfer() {
    RoutingEngine e =
        engine(Backend.of("b0", "m").withRole(Role.BOTH).withCapacityBlocks(1_000), d("far"));
    PairRouted r =
        pair(
            DisaggregatedRouter.builder(e)
                .transferCost((from, to) -> 1_000_000)
                .build()
                .route(req()));
    assertThat(r.colocated()).isTrue();
    assertThat(r.transfer().isZero()).isTrue();
    // one request on one backend counts once, while it prefills and while it decodes (its load
    // was counted twice until the first token)
    assertThat(snap(e, "b0").inFlight()).isEqualTo(1);
    r.lease().firstToken();
    assertThat(snap(e, "b0").inFlight()).isEqualTo(1);
    r.lease().complete(Usage.of(16, 8));
    assertThat(snap(e, "b0").inFlight()).isZero();
    // a pair that fails at prefill leaves nothing counted either
    PairRouted failed = pair(DisaggregatedRouter.builder(e).build().route(req()));
    failed.lease().fail(Failure.of(Failure.Kind.CONNECT));
    assertThat(snap(e, "b0").inFlight()).isZero();
    assertThat(snap(e, "far").inFlight()).isZero();
  }

  @Test
  void builderValidatesAndNamesTheField() {
    RoutingEngine e = engine(p("p0"));
    assertThatThrownBy(() -> DisaggregatedRouter.builder(e).kvCutoff(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvCutoff");
    assertThatThrownBy(() -> DisaggregatedRouter.builder(e).msPerThousandKvTokens(-1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("msPerThousandKvTokens");
    assertThatThrownBy(() -> DisaggregatedRouter.builder(e).decodeRule(null))
        .isInstanceOf(NullPointerException.class);
  }

  @Test
  void aTransferCostThatIsNotANumberIsAProgrammerError() {
    RoutingEngine e = engine(p("p0"), d("d0"));
    DisaggregatedRouter pd =
        DisaggregatedRouter.builder(e).transferCost((from, to) -> Double.NaN).build();
    assertThatThrownBy(() -> pd.route(req()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("transfer cost from 'p0' to 'd0'");
    assertThat(snap(e, "p0").inFlight()).isZero(); // the prefill leg was given back
    assertThat(limiter.balance("t")).isEqualTo(1_000);
  }
}
