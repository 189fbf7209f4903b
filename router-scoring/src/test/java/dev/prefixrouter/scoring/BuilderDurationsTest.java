package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Durations beyond what nanoseconds hold fail at build time, naming the field and the value. */
class BuilderDurationsTest {
  private static final Duration CENTURIES = Duration.ofDays(365L * 300);
  private static final Duration MAX = Duration.ofSeconds(Long.MAX_VALUE, 999_999_999);

  @Test
  void breakerCooldown() {
    for (Duration d : new Duration[] {CENTURIES, MAX}) {
      assertThatThrownBy(() -> CircuitBreakers.builder().cooldown(d).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("cooldown")
          .hasMessageContaining(d.toString());
    }
  }

  @Test
  void quotaPeriod() {
    assertThatThrownBy(() -> new Quota(1, 1, MAX, 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("period")
        .hasMessageContaining(MAX.toString());
  }

  @Test
  void scorerStaleAfterAndSessionTtl() {
    for (Duration d : new Duration[] {CENTURIES, MAX}) {
      assertThatThrownBy(() -> EstimatedTtftScorer.builder().staleAfter(d).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("staleAfter")
          .hasMessageContaining(d.toString());
      assertThatThrownBy(() -> EstimatedTtftScorer.builder().sessions(d, 10).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("sessionTtl")
          .hasMessageContaining(d.toString());
    }
  }

  @Test
  void tenantIdleExpiry() {
    for (Duration d : new Duration[] {CENTURIES, MAX}) {
      assertThatThrownBy(() -> TenantTokenBuckets.builder().expireAfterIdle(d).build())
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("expireAfterIdle")
          .hasMessageContaining(d.toString());
    }
  }
}
