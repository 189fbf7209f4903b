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

  @Test
  void opensAfterConsecutiveFailuresAndHalfOpensAfterCooldown() {
    CircuitBreakers b = breakers();
    b.addBackend(0);
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
  void halfOpenFailureReopens() {
    CircuitBreakers b = breakers();
    b.addBackend(0);
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
    b.addBackend(0);
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
    b.addBackend(0);
    for (int i = 0; i < 10; i++) {
      b.onFailure(0, Failure.httpStatus(404), 0);
      b.onFailure(0, Failure.of(Failure.Kind.CANCELLED), 0);
    }
    assertThat(b.state(0, 0)).isEqualTo(HealthState.CLOSED);
  }

  @Test
  void lostProbesAreReissuedAfterAnotherCooldown() {
    CircuitBreakers b = breakers();
    b.addBackend(0);
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
              b.addBackend(0);
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
  void builderValidates() {
    assertThatThrownBy(() -> CircuitBreakers.builder().minimumCalls(30).windowSize(20).build())
        .hasMessageContaining("minimumCalls");
    assertThatThrownBy(() -> CircuitBreakers.builder().failureRate(0))
        .hasMessageContaining("failureRate");
    assertThatThrownBy(() -> CircuitBreakers.builder().cooldown(Duration.ZERO))
        .hasMessageContaining("cooldown");
  }
}
