package dev.prefixrouter.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class FleetQuotaTest {

  @Test
  void rejectsOutOfRangeFieldsNamingFieldAndValue() {
    assertThatThrownBy(() -> new FleetQuota(0, 1, Duration.ofSeconds(1)))
        .hasMessage("capacityTokens must be in [1, 2^50], was 0");
    assertThatThrownBy(() -> new FleetQuota(1, (1L << 50) + 1, Duration.ofSeconds(1)))
        .hasMessage("refillTokens must be in [1, 2^50], was 1125899906842625");
    assertThatThrownBy(() -> new FleetQuota(1, 1, Duration.ofNanos(999_999)))
        .hasMessage("period must be in [1 ms, 1 day], was PT0.000999999S");
    assertThatThrownBy(() -> new FleetQuota(1, 1, Duration.ofDays(2)))
        .hasMessage("period must be in [1 ms, 1 day], was PT48H");
  }

  @Test
  void refillTimeAndShares() {
    FleetQuota q = FleetQuota.perMinute(60_000);
    assertThat(q.nanosToRefill(1_000)).isEqualTo(1_000_000_000L);
    assertThat(q.nanosToRefill(0)).isZero();
    assertThat(q.share(4)).isEqualTo(new FleetQuota(15_000, 15_000, Duration.ofMinutes(1)));
    assertThat(new FleetQuota(3, 3, Duration.ofSeconds(1)).share(8).capacityTokens()).isEqualTo(1);
  }
}
