package dev.prefixrouter.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class LocalBucketTest {
  private static final long SECOND = 1_000_000_000L;

  @Test
  void takesUpToCapacityThenRefillsAtTheRate() {
    LocalBucket b = new LocalBucket(new FleetQuota(100, 10, Duration.ofSeconds(1)), 0);
    assertThat(b.tryTake(100, 0)).isZero();
    assertThat(b.tryTake(10, 0)).isEqualTo(SECOND);
    assertThat(b.tryTake(10, SECOND / 2)).isEqualTo(SECOND / 2);
    assertThat(b.tryTake(10, SECOND)).isZero();
    assertThat(b.available(100 * SECOND)).isEqualTo(100);
  }

  @Test
  void keepsFractionsOfRefill() {
    LocalBucket b = new LocalBucket(new FleetQuota(100, 3, Duration.ofSeconds(1)), 0);
    b.tryTake(100, 0);
    long taken = 0;
    for (long t = 0; t < 10 * SECOND + SECOND / 7; t += SECOND / 7) {
      if (b.tryTake(1, t) == 0) {
        taken++;
      }
    }
    assertThat(taken).isEqualTo(30);
  }

  @Test
  void extraChargeLeavesDebtAndRefundStopsAtCapacity() {
    LocalBucket b = new LocalBucket(new FleetQuota(100, 10, Duration.ofSeconds(1)), 0);
    b.adjust(150, 0);
    assertThat(b.available(0)).isEqualTo(-50);
    assertThat(b.tryTake(1, SECOND)).isPositive();
    b.adjust(-1_000, SECOND);
    assertThat(b.available(SECOND)).isEqualTo(100);
  }

  /** A request larger than the share waits for a full bucket and then leaves debt. */
  @Test
  void aRequestLargerThanTheBucketTakesAFullOneIntoDebt() {
    LocalBucket b = new LocalBucket(new FleetQuota(100, 10, Duration.ofSeconds(1)), 0);
    assertThat(b.tryTake(50, 0)).isZero();
    assertThat(b.tryTake(250, 0))
        .as("waits for the 50 missing of a full bucket")
        .isEqualTo(5 * SECOND);
    assertThat(b.tryTake(250, 5 * SECOND)).isZero();
    assertThat(b.available(5 * SECOND)).isEqualTo(-150);
    assertThat(b.tryTake(1, 5 * SECOND)).isPositive();
  }
}
