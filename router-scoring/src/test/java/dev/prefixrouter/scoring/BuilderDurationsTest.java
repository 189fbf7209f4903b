package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** Durations beyond what nanoseconds hold fail at build time, naming the field and the value. */
class BuilderDurationsTest {
  private static final Duration CENTURIES = Duration.ofDays(365L * 300);
  private static final Duration MAX = Duration.ofSeconds(Long.MAX_VALUE, 999_999_999);

  /** Builds with each too-long duration and expects an IAE naming {@code field} and the value. */
  private static void rejects(String field, Function<Duration, Object> build) {
    for (Duration d : new Duration[] {CENTURIES, MAX}) {
      assertThatThrownBy(() -> build.apply(d))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining(field)
          .hasMessageContaining(d.toString());
    }
  }

  @Test
  void breakerCooldown() {
    rejects("cooldown", d -> CircuitBreakers.builder().cooldown(d).build());
  }

  @Test
  void quotaPeriod() {
    rejects("period", d -> new Quota(1, 1, d, 0));
  }

  @Test
  void scorerStaleAfterAndSessionTtl() {
    rejects("staleAfter", d -> EstimatedTtftScorer.builder().staleAfter(d).build());
    rejects("sessionTtl", d -> EstimatedTtftScorer.builder().sessions(d, 10).build());
  }

  @Test
  void tenantIdleExpiry() {
    rejects("expireAfterIdle", d -> TenantTokenBuckets.builder().expireAfterIdle(d).build());
  }
}
