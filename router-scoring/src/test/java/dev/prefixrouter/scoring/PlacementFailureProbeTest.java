package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.HealthState;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteDecision;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * A placement that fails after its backend's breaker gave it a half-open probe (the scorer's {@code
 * onRoutedLease} throws, or the decision cannot be built) gives the probe back at once, as a lease
 * that ends without an outcome does: the backend is not refused for another cooldown.
 */
class PlacementFailureProbeTest {
  private static final long SECOND = 1_000_000_000L;
  private static final RouteRequest REQUEST =
      RouteRequest.builder("t", "m").prompt(Prompt.ofTokens(1, 2, 3)).build();

  /** Ranks as given; its onRoutedLease throws, or its name goes null, once told to. */
  static final class BreakingScorer implements Scorer {
    volatile boolean throwOnRouted;
    volatile boolean nameless;

    @Override
    public String name() {
      return nameless ? null : "breaking"; // null: the decision's reason, so Routed refuses it
    }

    @Override
    public void score(ScoringContext ctx) {
      ctx.sortByCost(0);
    }

    @Override
    public @Nullable Object onRoutedLease(ScoringContext ctx, int candidate) {
      if (throwOnRouted) {
        throw new IllegalStateException("scorer bug in onRoutedLease");
      }
      return null;
    }
  }

  private final AtomicLong clock = new AtomicLong(SECOND);
  private final BreakingScorer scorer = new BreakingScorer();

  /**
   * One backend "b" whose breaker opened at one failure and now, a cooldown later, is half-open.
   */
  private RoutingEngine halfOpenWithOneProbe() {
    RoutingEngine engine =
        RoutingEngine.builder()
            .ticker(clock::get)
            .scorer(scorer)
            .health(
                CircuitBreakers.builder()
                    .consecutiveFailures(1)
                    .halfOpenProbes(1)
                    .cooldown(Duration.ofSeconds(10))
                    .build())
            .backend(Backend.of("b", "m"))
            .build();
    ((Routed) engine.route(REQUEST)).lease().fail(Failure.of(Failure.Kind.CONNECT)); // opens
    clock.addAndGet(11 * SECOND);
    assertThat(health(engine)).isEqualTo(HealthState.HALF_OPEN);
    return engine;
  }

  private static HealthState health(RoutingEngine engine) {
    return engine.inspect().backend("b").orElseThrow().health();
  }

  /** The next route, at the same instant, gets the probe and closes the breaker. */
  private static void assertTheProbeIsStillThere(RoutingEngine engine) {
    RouteDecision next = engine.route(REQUEST);
    assertThat(next)
        .as("the probe was given back, not held for a cooldown")
        .isInstanceOf(Routed.class);
    ((Routed) next).lease().firstToken();
    assertThat(health(engine)).isEqualTo(HealthState.CLOSED);
  }

  @Test
  void aProbeWhoseScorerThrewInOnRoutedLeaseIsGivenBackAtOnce() {
    RoutingEngine engine = halfOpenWithOneProbe();
    scorer.throwOnRouted = true;
    assertThatThrownBy(() -> engine.route(REQUEST)).hasMessage("scorer bug in onRoutedLease");
    scorer.throwOnRouted = false;
    assertTheProbeIsStillThere(engine);
  }

  @Test
  void aProbeWhoseDecisionCouldNotBeBuiltIsGivenBackAtOnce() {
    RoutingEngine engine = halfOpenWithOneProbe();
    scorer.nameless = true;
    assertThatThrownBy(() -> engine.route(REQUEST))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("reason");
    scorer.nameless = false;
    assertTheProbeIsStillThere(engine);
  }
}
