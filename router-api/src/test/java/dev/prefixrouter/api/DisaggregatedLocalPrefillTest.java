package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Conditional disaggregation: {@link DisaggregatedRouter.Builder#localPrefillTokens}. */
class DisaggregatedLocalPrefillTest {
  private final AtomicLong clock = new AtomicLong(1_000_000_000L);

  private RoutingEngine engine(Backend... backends) {
    RoutingEngineBuilder b = RoutingEngine.builder().ticker(clock::get);
    for (Backend x : backends) {
      b.backend(x);
    }
    return b.build();
  }

  private static Backend p(String id) {
    return Backend.of(id, "m").withRole(Role.PREFILL).withCapacityBlocks(10_000);
  }

  private static Backend d(String id) {
    return Backend.of(id, "m").withRole(Role.DECODE).withCapacityBlocks(10_000);
  }

  private static RouteRequest req(int[] tokens) {
    return RouteRequest.builder("t", "m")
        .prompt(Prompt.ofTokens(tokens))
        .maxOutputTokens(8)
        .build();
  }

  private static PairRouted pair(PairDecision d) {
    assertThat(d).isInstanceOf(PairRouted.class);
    return (PairRouted) d;
  }

  /**
   * A backend of no role (it serves whole requests) is not a prefill backend of a pair: under the
   * rule it stayed in the ranking with the prefill-capable ones and took the prefill leg once the
   * prefill backend was busier (without the rule the leg requires {@code pd.prefill}).
   */
  @Test
  void aBackendOfNoRoleTakesNoPrefillLegWhileAPrefillBackendCan() {
    RoutingEngine e = engine(p("p0"), d("d0"), Backend.of("plain", "m").withCapacityBlocks(10_000));
    DisaggregatedRouter pd = DisaggregatedRouter.builder(e).localPrefillTokens(8).build();
    for (int i = 0; i < 6; i++) { // leases kept open: p0 is the busiest
      PairRouted r = pair(pd.route(req(Fakes.tokens(64, 100 * i))));
      assertThat(r.prefillBackend().id()).as("route %d", i).isEqualTo("p0");
    }
  }

  @Test
  void offByDefaultEveryRequestIsDisaggregated() {
    DisaggregatedRouter pd = DisaggregatedRouter.builder(engine(p("p0"), d("d0"))).build();
    PairRouted r = pair(pd.route(req(Fakes.tokens(8, 0))));
    assertThat(r.prefillBackend().id()).isEqualTo("p0");
    assertThat(r.colocated()).isFalse();
    assertThat(pd.localPairs()).isZero();
  }

  @Test
  void aShortPromptIsServedWholeOnADecodeBackendAndALongOneIsDisaggregated() {
    RoutingEngine e = engine(p("p0"), d("d0"));
    DisaggregatedRouter pd = DisaggregatedRouter.builder(e).localPrefillTokens(64).build();
    PairRouted shortOne = pair(pd.route(req(Fakes.tokens(64, 0))));
    assertThat(shortOne.prefillBackend().id()).isEqualTo("d0");
    assertThat(shortOne.decode().id()).isEqualTo("d0");
    assertThat(shortOne.colocated()).isTrue();
    assertThat(shortOne.transfer()).isZero();
    assertThat(shortOne.reason()).contains("local prefill");
    PairRouted longOne = pair(pd.route(req(Fakes.tokens(65, 10_000))));
    assertThat(longOne.prefillBackend().id()).isEqualTo("p0");
    assertThat(longOne.decode().id()).isEqualTo("d0");
    assertThat(pd.localPairs()).isEqualTo(1);
  }

  @Test
  void aLongPromptMostlyCachedOnADecodeBackendIsServedThereNotOnAnother() {
    Fakes.RecordingIndex index = new Fakes.RecordingIndex();
    RoutingEngine e =
        RoutingEngine.builder()
            .ticker(clock::get)
            .prefixIndex(index)
            .hasher(new Fakes.SimpleHasher()) // one block per 4 tokens
            .backend(p("p0"))
            .backend(d("d0"))
            .backend(d("d1"))
            .build();
    DisaggregatedRouter pd = DisaggregatedRouter.builder(e).localPrefillTokens(48).build();
    int[] prompt = Fakes.tokens(104, 0); // 26 blocks of 4
    PairRouted cold = pair(pd.route(req(prompt)));
    assertThat(cold.prefillBackend().id()).isEqualTo("p0"); // 104 uncached everywhere
    index.matchBySlot.put(2, 16); // d1 holds 64 of its tokens: 40 uncached there
    PairRouted r = pair(pd.route(req(prompt)));
    assertThat(r.prefillBackend().id()).isEqualTo("d1");
    assertThat(r.colocated()).isTrue();
    assertThat(r.prefill().matchedTokens()).isEqualTo(64);
    index.matchBySlot.put(2, 13); // 52 uncached there: over the threshold
    assertThat(pair(pd.route(req(prompt))).prefillBackend().id()).isEqualTo("p0");
  }

  @Test
  void aLocalPairsLeaseReleasesEverythingItHeld() {
    RoutingEngine e = engine(p("p0"), d("d0"));
    DisaggregatedRouter pd = DisaggregatedRouter.builder(e).localPrefillTokens(100).build();
    PairRouted r = pair(pd.route(req(Fakes.tokens(32, 0))));
    assertThat(e.inspect().backend("d0").orElseThrow().inFlight()).isEqualTo(1); // one request
    r.lease().firstToken();
    assertThat(e.inspect().backend("d0").orElseThrow().runningDecodes()).isEqualTo(1);
    assertThat(e.inspect().backend("d0").orElseThrow().inFlight()).isEqualTo(1);
    r.lease().complete(Usage.of(32, 8));
    BackendSnapshot s = e.inspect().backend("d0").orElseThrow();
    assertThat(s.inFlight()).isZero();
    assertThat(s.runningDecodes()).isZero();
    assertThat(s.pendingPrefillTokens()).isZero();
  }

  @Test
  void withNoPrefillBackendLeftALongPromptStillFallsBackToADecodeBackend() {
    DisaggregatedRouter pd =
        DisaggregatedRouter.builder(engine(d("d0"))).localPrefillTokens(16).build();
    PairRouted r = pair(pd.route(req(Fakes.tokens(200, 0))));
    assertThat(r.colocated()).isTrue();
  }

  @Test
  void onAnEmptyIndexAPairIsLocalExactlyWhenThePromptFitsTheThreshold() {
    qt().withExamples(100)
        .forAll(integers().between(1, 400), integers().between(1, 400))
        .checkAssert(
            (promptTokens, threshold) -> {
              RoutingEngine e = engine(p("p0"), p("p1"), d("d0"), d("d1"));
              DisaggregatedRouter pd =
                  DisaggregatedRouter.builder(e).localPrefillTokens(threshold).build();
              PairRouted r = pair(pd.route(req(Fakes.tokens(promptTokens, 0))));
              assertThat(r.colocated()).isEqualTo(promptTokens <= threshold);
              assertThat(r.prefillBackend().role())
                  .isEqualTo(promptTokens <= threshold ? Role.DECODE : Role.PREFILL);
              assertThat(r.decode().role()).isEqualTo(Role.DECODE);
            });
  }

  @Test
  void theThresholdIsValidated() {
    DisaggregatedRouter.Builder b = DisaggregatedRouter.builder(engine(p("p0"), d("d0")));
    assertThatThrownBy(() -> b.localPrefillTokens(-1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("localPrefillTokens");
    assertThatThrownBy(() -> b.localPrefillTokens(1_000_001))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(b.localPrefillTokens(0).build().toString()).contains("localPrefillTokens=0");
  }
}
