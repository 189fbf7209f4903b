package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.prefixrouter.api.spi.PredictionSink;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class PredictionSharingTest {

  /** What one sink call saw, copied. */
  private record Seen(String backend, long[] keys, int held) {}

  private static RouteRequest req(int tokens, int base) {
    return RouteRequest.builder("t", "m")
        .prompt(Prompt.ofTokens(Fakes.tokens(tokens, base)))
        .maxOutputTokens(8)
        .build();
  }

  private static Routed routed(RouteDecision d) {
    assertThat(d).isInstanceOf(Routed.class);
    return (Routed) d;
  }

  @Test
  void sinkSeesTheRecordedKeysAndWhatWasHeldBefore() {
    Fakes.RecordingIndex index = new Fakes.RecordingIndex();
    index.matchBySlot.put(0, 2);
    List<Seen> seen = new ArrayList<>();
    RoutingEngine engine =
        RoutingEngine.builder()
            .hasher(new Fakes.SimpleHasher())
            .prefixIndex(index)
            .predictionSink(
                (b, keys, n, held) -> seen.add(new Seen(b.id(), Arrays.copyOf(keys, n), held)))
            .backend(Backend.of("b0", "m"))
            .build();
    routed(engine.route(req(16, 0)));
    routed(engine.route(req(3, 0))); // no full block: nothing recorded, nothing shared

    long[] expected = new long[4];
    int n = new Fakes.SimpleHasher().keys(Prompt.ofTokens(Fakes.tokens(16, 0)), 0, expected);
    assertThat(seen).hasSize(1);
    assertThat(seen.get(0).backend()).isEqualTo("b0");
    assertThat(seen.get(0).keys()).containsExactly(Arrays.copyOf(expected, n));
    assertThat(seen.get(0).held()).isEqualTo(2);
    assertThat(index.calls).containsOnlyOnce("routed 0 4");
  }

  /**
   * A sink runs with no claim on the backend held: one that removes the backend it was told about
   * (removal waits for every claim) used to spin for ever inside the route.
   */
  @Test
  void aSinkMayRemoveTheBackendItWasToldAbout() {
    RoutingEngine[] engine = new RoutingEngine[1];
    engine[0] =
        RoutingEngine.builder()
            .hasher(new Fakes.SimpleHasher())
            .prefixIndex(new Fakes.RecordingIndex())
            .predictionSink((b, keys, n, held) -> engine[0].backends().remove(b.id()))
            .backend(Backend.of("b0", "m"))
            .build();
    Routed r =
        assertTimeoutPreemptively(
            java.time.Duration.ofSeconds(10), () -> routed(engine[0].route(req(16, 0))));
    assertThat(engine[0].inspect().backend("b0")).isEmpty();
    r.lease().complete(Usage.of(16, 1));
  }

  @Test
  void appliedPredictionsReachTheIndexWithoutCountingOrSharing() {
    Fakes.RecordingIndex index = new Fakes.RecordingIndex();
    List<String> shared = new ArrayList<>();
    Fakes.RecordingListener listener = new Fakes.RecordingListener();
    RoutingEngine engine =
        RoutingEngine.builder()
            .prefixIndex(index)
            .predictionSink((b, keys, n, held) -> shared.add(b.id()))
            .listener(listener)
            .backend(Backend.of("b0", "m"))
            .backend(Backend.of("b1", "m"))
            .build();
    assertThat(engine.applyPredicted("b1", new long[] {1, 2, 3, 9}, 3)).isTrue();
    assertThat(engine.applyPredicted("gone", new long[] {1}, 1)).isFalse();
    assertThat(engine.applyPredicted("b0", new long[0], 0)).isTrue();

    assertThat(index.calls).contains("routed 1 3").doesNotContain("routed 0 0");
    assertThat(shared).isEmpty();
    assertThat(listener.events).noneMatch(e -> e.startsWith("routed"));
    assertThat(engine.inspect().routed()).isZero();
    assertThatThrownBy(() -> engine.applyPredicted("b0", new long[2], 3))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("keyCount must be in [0, 2], was 3");
  }

  @Test
  void aThrowingSinkNeitherBreaksTheRouteNorLeaksCounts() {
    PredictionSink broken =
        (b, keys, n, held) -> {
          throw new IllegalStateException("queue gone");
        };
    RoutingEngine engine =
        RoutingEngine.builder()
            .hasher(new Fakes.SimpleHasher())
            .prefixIndex(new Fakes.RecordingIndex())
            .predictionSink(broken)
            .backend(Backend.of("b0", "m"))
            .build();
    Routed r = routed(engine.route(req(16, 0)));
    assertThat(engine.inspect().backends().get(0).inFlight()).isEqualTo(1);
    r.lease().complete(new Usage(16, 1, 0));
    assertThat(engine.inspect().backends().get(0).inFlight()).isZero();
  }

  @Test
  void everySinkGetsTheKeysInOrderEvenWhenAnEarlierOneThrows() {
    List<String> calls = new java.util.ArrayList<>();
    RoutingEngine engine =
        RoutingEngine.builder()
            .hasher(new Fakes.SimpleHasher())
            .prefixIndex(new Fakes.RecordingIndex())
            .predictionSink(
                (b, keys, n, held) -> {
                  calls.add("first " + n);
                  throw new IllegalStateException("queue gone");
                })
            .predictionSink(PredictionSink.none())
            .predictionSink((b, keys, n, held) -> calls.add("second " + n))
            .backend(Backend.of("b0", "m"))
            .build();
    routed(engine.route(req(32, 0))).lease().complete(new Usage(32, 1, 0));
    assertThat(calls).containsExactly("first 8", "second 8");
  }

  @Test
  void aSinksErrorEndsTheNewLeaseAndRefundsTheTenant() {
    Fakes.CountingLimiter limiter = new Fakes.CountingLimiter(1_000);
    RoutingEngine engine =
        RoutingEngine.builder()
            .hasher(new Fakes.SimpleHasher())
            .prefixIndex(new Fakes.RecordingIndex())
            .limiter(limiter)
            .predictionSink(
                (b, keys, n, held) -> {
                  throw new AssertionError("boom");
                })
            .backend(Backend.of("b0", "m"))
            .build();
    assertThatThrownBy(() -> engine.route(req(16, 0))).isInstanceOf(AssertionError.class);
    assertThat(engine.inspect().backends().get(0).inFlight()).isZero();
    assertThat(limiter.balance("t")).isEqualTo(1_000);
  }
}
