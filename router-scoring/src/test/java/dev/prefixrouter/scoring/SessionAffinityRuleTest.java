package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Backend;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class SessionAffinityRuleTest {
  /**
   * The engine tells its parts of a removal only once the removed backend's leases have ended; a
   * backend added again under the same id meanwhile holds a new slot, and the pins made for it
   * since must survive the old slot's removal.
   */
  @Test
  void aBackendAddedAgainBeforeItsRemovalEndedKeepsItsNewPins() {
    InProcessSessionPins pins = InProcessSessionPins.create(Duration.ofMinutes(5), 100);
    SessionAffinityRule rule = new SessionAffinityRule(0.5, 10, pins, false, new CostTerm[0], null);
    Backend b1 = Backend.of("b1", "m");
    rule.addBackend(0, b1);
    rule.addBackend(1, b1); // re-added while slot 0's removal waits for its leases
    pins.pin("s", "b1");
    rule.removeBackend(0);
    assertThat(pins.backendOf("s")).isEqualTo("b1");
    rule.removeBackend(1); // gone for good: its pins go
    assertThat(pins.backendOf("s")).isNull();
  }
}
