package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.HealthState;
import java.time.Duration;
import java.util.Set;
import org.junit.jupiter.api.Test;

class CircuitBreakersTest {
  private static final dev.prefixrouter.api.Backend B = dev.prefixrouter.api.Backend.of("b", "m");

  private static final Failure CONNECT = Failure.of(Failure.Kind.CONNECT);
  private static final long SECOND = 1_000_000_000L;

  private static CircuitBreakers breakers() {
    return CircuitBreakers.builder()
        .consecutiveFailures(3)
        .failureRate(0.5)
        .windowSize(10)
        .minimumCalls(6)
        .cooldown(Duration.ofSeconds(10))
        .halfOpenProbes(2)
        .build();
  }

  /** One backend behind a breaker that opens at one failure, one probe, 10 s cooldown. */
  private static dev.prefixrouter.api.RoutingEngine onePendingProbe(
      java.util.concurrent.atomic.AtomicLong clock) {
    return dev.prefixrouter.api.RoutingEngine.builder()
        .ticker(clock::get)
        .health(
            CircuitBreakers.builder()
                .consecutiveFailures(1)
                .halfOpenProbes(1)
                .cooldown(Duration.ofSeconds(10))
                .build())
        .backend(B)
        .build();
  }

  private static final dev.prefixrouter.api.RouteRequest REQUEST =
      dev.prefixrouter.api.RouteRequest.builder("t", "m")
          .prompt(dev.prefixrouter.api.Prompt.ofTokens(1, 2, 3))
          .build();

  @Test
  void opensAfterConsecutiveFailuresAndHalfOpensAfterCooldown() {
    CircuitBreakers b = breakers();
    b.addBackend(0, B);
    b.onFailure(0, CONNECT, 0);
    b.onFailure(0, CONNECT, 0);
    assertThat(b.state(0, 0)).isEqualTo(HealthState.CLOSED);
    b.onFailure(0, CONNECT, 1);
    assertThat(b.state(0, 1)).isEqualTo(HealthState.OPEN);
    assertThat(b.tryAcquire(0, 5 * SECOND)).isFalse();
    assertThat(b.state(0, 11 * SECOND)).isEqualTo(HealthState.HALF_OPEN);
    assertThat(b.tryAcquire(0, 11 * SECOND)).isTrue();
    assertThat(b.tryAcquire(0, 11 * SECOND)).isTrue();
    assertThat(b.tryAcquire(0, 11 * SECOND)).as("probes bounded").isFalse();
    b.onSuccess(0, 12 * SECOND);
    assertThat(b.state(0, 12 * SECOND)).isEqualTo(HealthState.HALF_OPEN);
    b.onSuccess(0, 12 * SECOND);
    assertThat(b.state(0, 12 * SECOND)).isEqualTo(HealthState.CLOSED);
  }

  @Test
  void aLateSuccessOfARequestPlacedBeforeTheBreakerOpenedIsNotAProbe() {
    java.util.concurrent.atomic.AtomicLong clock =
        new java.util.concurrent.atomic.AtomicLong(SECOND);
    dev.prefixrouter.api.RoutingEngine engine = onePendingProbe(clock);
    dev.prefixrouter.api.RouteRequest req = REQUEST;
    dev.prefixrouter.api.Routed old = (dev.prefixrouter.api.Routed) engine.route(req); // closed
    ((dev.prefixrouter.api.Routed) engine.route(req)).lease().fail(CONNECT); // opens
    clock.addAndGet(11 * SECOND);
    dev.prefixrouter.api.Routed probe = (dev.prefixrouter.api.Routed) engine.route(req);
    old.lease().firstToken(); // closed the breaker before the probe answered
    assertThat(engine.inspect().backend("b").orElseThrow().health())
        .isEqualTo(HealthState.HALF_OPEN);
    probe.lease().firstToken();
    assertThat(engine.inspect().backend("b").orElseThrow().health()).isEqualTo(HealthState.CLOSED);
  }

  @Test
  void aProbeThatEndsWithoutAnOutcomeIsGivenBack() {
    java.util.concurrent.atomic.AtomicLong clock =
        new java.util.concurrent.atomic.AtomicLong(SECOND);
    dev.prefixrouter.api.RoutingEngine engine = onePendingProbe(clock);
    dev.prefixrouter.api.RouteRequest req = REQUEST;
    ((dev.prefixrouter.api.Routed) engine.route(req)).lease().fail(CONNECT); // opens
    clock.addAndGet(11 * SECOND);
    dev.prefixrouter.api.Routed probe = (dev.prefixrouter.api.Routed) engine.route(req);
    clock.addAndGet(SECOND);
    probe.lease().fail(Failure.of(Failure.Kind.CANCELLED)); // the client left: says nothing
    // the backend was refused for another whole cooldown: its one probe was never given back
    dev.prefixrouter.api.RouteDecision next = engine.route(req);
    assertThat(next).isInstanceOf(dev.prefixrouter.api.Routed.class);
    ((dev.prefixrouter.api.Routed) next).lease().firstToken();
    assertThat(engine.inspect().backend("b").orElseThrow().health()).isEqualTo(HealthState.CLOSED);
  }

  @Test
  void halfOpenFailureReopens() {
    CircuitBreakers b = breakers();
    b.addBackend(0, B);
    for (int i = 0; i < 3; i++) {
      b.onFailure(0, CONNECT, 0);
    }
    assertThat(b.tryAcquire(0, 10 * SECOND)).isTrue();
    b.onFailure(0, Failure.of(Failure.Kind.TIMEOUT), 10 * SECOND);
    assertThat(b.state(0, 10 * SECOND)).isEqualTo(HealthState.OPEN);
    assertThat(b.state(0, 19 * SECOND)).isEqualTo(HealthState.OPEN);
    assertThat(b.state(0, 20 * SECOND)).isEqualTo(HealthState.HALF_OPEN);
  }

  @Test
  void failureRateOverTheWindowOpens() {
    CircuitBreakers b = breakers();
    b.addBackend(0, B);
    // alternate: never 3 in a row, but 50 % of the window once 6 calls are in
    for (int i = 0; i < 3; i++) {
      b.onSuccess(0, 0);
      b.onFailure(0, CONNECT, 0);
    }
    assertThat(b.state(0, 0)).isEqualTo(HealthState.OPEN);
  }

  @Test
  void clientErrorsAndCancellationsDoNotCount() {
    CircuitBreakers b = breakers();
    b.addBackend(0, B);
    for (int i = 0; i < 10; i++) {
      b.onFailure(0, Failure.httpStatus(404), 0);
      b.onFailure(0, Failure.of(Failure.Kind.CANCELLED), 0);
    }
    assertThat(b.state(0, 0)).isEqualTo(HealthState.CLOSED);
  }

  @Test
  void lostProbesAreReissuedAfterAnotherCooldown() {
    CircuitBreakers b = breakers();
    b.addBackend(0, B);
    for (int i = 0; i < 3; i++) {
      b.onFailure(0, CONNECT, 0);
    }
    assertThat(b.tryAcquire(0, 10 * SECOND)).isTrue();
    assertThat(b.tryAcquire(0, 10 * SECOND)).isTrue();
    assertThat(b.tryAcquire(0, 15 * SECOND)).isFalse();
    assertThat(b.tryAcquire(0, 20 * SECOND)).as("outcomes never came").isTrue();
  }

  @Test
  void movesOnlyAlongLegalTransitions() {
    Set<String> legal =
        Set.of(
            "CLOSED->CLOSED",
            "CLOSED->OPEN",
            "OPEN->OPEN",
            "OPEN->HALF_OPEN",
            "HALF_OPEN->HALF_OPEN",
            "HALF_OPEN->OPEN",
            "HALF_OPEN->CLOSED");
    qt().withExamples(300)
        .forAll(lists().of(integers().between(0, 3)).ofSizeBetween(1, 80))
        .checkAssert(
            ops -> {
              CircuitBreakers b = breakers();
              b.addBackend(0, B);
              long now = 0;
              HealthState prev = b.state(0, now);
              for (int op : ops) {
                now += SECOND;
                switch (op) {
                  case 0 -> b.onFailure(0, CONNECT, now);
                  case 1 -> b.onSuccess(0, now);
                  case 2 -> b.tryAcquire(0, now);
                  default -> now += 4 * SECOND;
                }
                HealthState cur = b.state(0, now);
                assertThat(legal).contains(prev + "->" + cur);
                prev = cur;
              }
            });
  }

  @Test
  void aHealthyBreakerIsNotRewrittenBySuccesses() {
    CircuitBreakers b = breakers();
    b.addBackend(0, B);
    for (int i = 0; i < 10; i++) { // window size 10: the window fills
      b.onSuccess(0, i);
    }
    CircuitBreakers.State full = b.stateOf(0);
    for (int i = 0; i < 100; i++) {
      b.onSuccess(0, 10 + i);
    }
    assertThat(b.stateOf(0)).as("same object: no write per success").isSameAs(full);
    b.onFailure(0, CONNECT, 200);
    assertThat(b.stateOf(0)).isNotSameAs(full);
    assertThat(b.stateOf(0).window()).isEqualTo(1L);
  }

  /**
   * While closed, the breaker opens exactly when a reference model of the rules says so: 3
   * consecutive failures, or at least 6 outcomes of which at least half failed among the last 10.
   * Long runs of successes are likely, so the no-write path for a full window of successes is
   * exercised between failures.
   */
  @Test
  void closedStateFollowsTheWindowRules() {
    qt().withExamples(500)
        .forAll(lists().of(integers().between(0, 4)).ofSizeBetween(1, 120))
        .checkAssert(
            ops -> {
              CircuitBreakers b = breakers();
              b.addBackend(0, B);
              java.util.ArrayDeque<Boolean> window = new java.util.ArrayDeque<>();
              int consecutive = 0;
              long now = 0;
              for (int op : ops) {
                boolean failed = op == 0; // one in five outcomes fails
                now++;
                if (failed) {
                  b.onFailure(0, CONNECT, now);
                } else {
                  b.onSuccess(0, now);
                }
                window.addLast(failed);
                if (window.size() > 10) {
                  window.removeFirst();
                }
                consecutive = failed ? consecutive + 1 : 0;
                long failures = window.stream().filter(f -> f).count();
                boolean open =
                    failed
                        && (consecutive >= 3
                            || (window.size() >= 6 && failures * 2 >= window.size()));
                assertThat(b.state(0, now)).isEqualTo(open ? HealthState.OPEN : HealthState.CLOSED);
                if (open) {
                  return; // the rules after opening are the other tests' business
                }
              }
            });
  }

  @Test
  void builderValidates() {
    assertThatThrownBy(() -> CircuitBreakers.builder().minimumCalls(30).windowSize(20).build())
        .hasMessageContaining("minimumCalls");
    assertThatThrownBy(() -> CircuitBreakers.builder().failureRate(0))
        .hasMessageContaining("failureRate");
    assertThatThrownBy(() -> CircuitBreakers.builder().cooldown(Duration.ZERO))
        .hasMessageContaining("cooldown");
  }
}
