package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class InProcessSessionPinsTest {

  @Test
  void aPinToAnotherBackendMovesTheSessionAndASamePinKeepsIt() {
    InProcessSessionPins pins = InProcessSessionPins.create(Duration.ofMinutes(5), 100);
    pins.pin("4:acmechat-1", "b0");
    pins.pin("4:acmechat-1", "b0");
    assertThat(pins.backendOf("4:acmechat-1")).isEqualTo("b0");
    pins.pin("4:acmechat-1", "b1");
    assertThat(pins.backendOf("4:acmechat-1")).isEqualTo("b1");
    pins.forgetBackend("b1");
    assertThat(pins.backendOf("4:acmechat-1")).isNull();
    assertThatThrownBy(() -> pins.pin("k", null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> pins.pin(null, "b0")).isInstanceOf(NullPointerException.class);
  }

  /** A pin to the same backend is a read, not a write: it must still renew the pin's expiry. */
  @Test
  void aSamePinRenewsTheExpiry() throws InterruptedException {
    InProcessSessionPins pins = InProcessSessionPins.create(Duration.ofMillis(2_000), 100);
    pins.pin("s", "b0");
    Thread.sleep(1_200);
    pins.pin("s", "b0"); // 1.2 s after the first pin: renews to 3.2 s
    Thread.sleep(1_200);
    assertThat(pins.backendOf("s")).isEqualTo("b0"); // 2.4 s: expired unless renewed
  }
}
