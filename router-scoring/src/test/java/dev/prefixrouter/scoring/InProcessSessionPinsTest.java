package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
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
  void aSamePinRenewsTheExpiry() {
    AtomicLong now = new AtomicLong();
    InProcessSessionPins pins = InProcessSessionPins.create(Duration.ofSeconds(2), 100, now::get);
    pins.pin("renewed", "b0");
    pins.pin("once", "b0");
    now.addAndGet(1_200_000_000L);
    pins.pin("renewed", "b0"); // 1.2 s after its first pin: renews it to 3.2 s
    now.addAndGet(1_200_000_000L);
    assertThat(pins.backendOf("once")).isNull(); // 2.4 s: pins do expire
    assertThat(pins.backendOf("renewed")).isEqualTo("b0"); // expired unless renewed
  }
}
