package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import dev.prefixrouter.api.spi.Admission;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class TenantTokenBucketsTest {
  private static final long SECOND = 1_000_000_000L;

  @Test
  void grantsUntilEmptyThenGivesAnExactRetryAfter() {
    TenantTokenBuckets b = TenantTokenBuckets.builder().defaultQuota(Quota.perSecond(100)).build();
    assertThat(b.tryAcquire("t", 60, 0).granted()).isTrue();
    assertThat(b.tryAcquire("t", 40, 0).granted()).isTrue();
    Admission denied = b.tryAcquire("t", 30, 0);
    assertThat(denied.outcome()).isEqualTo(Admission.Outcome.DENIED);
    assertThat(denied.retryAfterNanos()).isEqualTo(300_000_000L); // 30 tokens at 100/s
    assertThat(b.tryAcquire("t", 30, 299_999_999L).granted()).isFalse();
    assertThat(b.tryAcquire("t", 30, 300_000_000L).granted()).isTrue();
  }

  @Test
  void requestLargerThanTheBurstIsTooLargeNotRetryable() {
    TenantTokenBuckets b = TenantTokenBuckets.perMinute(1_000);
    Admission a = b.tryAcquire("t", 1_001, 0);
    assertThat(a.outcome()).isEqualTo(Admission.Outcome.TOO_LARGE);
    assertThat(a.message()).contains("burst of 1000");
  }

  @Test
  void overridesAndRequestLimitsApply() {
    TenantTokenBuckets b =
        TenantTokenBuckets.builder()
            .defaultQuota(Quota.perSecond(10))
            .quota("big", Quota.perSecond(1_000).withMaxRequests(2))
            .build();
    assertThat(b.quotaOf("big").capacityTokens()).isEqualTo(1_000);
    assertThat(b.tryAcquire("big", 1, 0).granted()).isTrue();
    assertThat(b.tryAcquire("big", 1, 0).granted()).isTrue();
    Admission third = b.tryAcquire("big", 1, 0);
    assertThat(third.granted()).isFalse();
    assertThat(third.message()).contains("requests");
    assertThat(b.available("big", 0))
        .as("token charge of the denied request undone")
        .isEqualTo(998);
    assertThat(b.tryAcquire("small", 11, 0).outcome()).isEqualTo(Admission.Outcome.TOO_LARGE);
  }

  @Test
  void trueUpRefundsAndChargesIntoDebt() {
    TenantTokenBuckets b = TenantTokenBuckets.builder().defaultQuota(Quota.perSecond(100)).build();
    b.tryAcquire("t", 80, 0);
    b.adjust("t", -50, 0); // used 30 of 80
    assertThat(b.available("t", 0)).isEqualTo(70);
    b.adjust("t", -1_000, 0); // refund never exceeds capacity
    assertThat(b.available("t", 0)).isEqualTo(100);
    b.adjust("t", 150, 0); // actual usage beyond the reservation: debt
    assertThat(b.available("t", 0)).isEqualTo(-50);
    assertThat(b.tryAcquire("t", 1, 0).retryAfterNanos()).isEqualTo(510_000_000L);
  }

  @Test
  void neverExceedsCapacityNorRefillsFasterThanTimeAllows() {
    qt().withExamples(200)
        .forAll(
            lists().of(integers().between(0, 200)).ofSizeBetween(1, 60),
            lists().of(integers().between(0, 50_000_000)).ofSizeBetween(1, 60))
        .checkAssert(
            (asks, gaps) -> {
              Quota q = new Quota(100, 7, Duration.ofMillis(10), 0); // 700 tokens/s, burst 100
              TenantTokenBuckets b = TenantTokenBuckets.builder().defaultQuota(q).build();
              long now = 0;
              long granted = 0;
              for (int i = 0; i < asks.size(); i++) {
                now += gaps.get(i % gaps.size());
                long before = b.available("t", now);
                assertThat(before).isLessThanOrEqualTo(100);
                if (b.tryAcquire("t", asks.get(i), now).granted()) {
                  granted += asks.get(i);
                }
                assertThat(b.available("t", now)).isBetween(0L, 100L);
                // tokens granted can never exceed the burst plus what elapsed time produced
                long producible = 100 + now * 7 / 10_000_000L;
                assertThat(granted).isLessThanOrEqualTo(producible);
              }
            });
  }

  @Test
  void trueUpConservesTokens() {
    qt().withExamples(200)
        .forAll(
            lists().of(integers().between(1, 50)).ofSizeBetween(1, 30),
            lists().of(integers().between(0, 80)).ofSizeBetween(1, 30))
        .checkAssert(
            (reserved, actual) -> {
              // no refill (1 token per year): charges must add up exactly
              Quota q = new Quota(10_000, 1, Duration.ofDays(365), 0);
              TenantTokenBuckets b = TenantTokenBuckets.builder().defaultQuota(q).build();
              long used = 0;
              for (int i = 0; i < reserved.size(); i++) {
                int r = reserved.get(i);
                int a = actual.get(i % actual.size());
                if (b.tryAcquire("t", r, 0).granted()) {
                  b.adjust("t", a - r, 0);
                  used += a;
                }
              }
              assertThat(b.available("t", 0)).isEqualTo(10_000 - used);
            });
  }

  /**
   * The fairness experiment of the reference (bench/fairness_sim.py): a greedy tenant at 100 rps
   * and a polite one at 5 rps for 10 s in 0.1 s steps, cost 1 per request, on a fake clock.
   */
  @Test
  void politeTenantIsServedFullyWithPerTenantBuckets() {
    long[] perTenant = fairness(false);
    long[] shared = fairness(true);
    assertThat(perTenant[0]).as("polite admitted, per-tenant").isEqualTo(50);
    assertThat(perTenant[1]).as("greedy admitted, per-tenant").isBetween(106L, 112L);
    assertThat(shared[0]).as("polite admitted, shared bucket").isBetween(5L, 12L);
  }

  private static long[] fairness(boolean shared) {
    // per-tenant: capacity 10, refill 10/s each; shared: one bucket 20, 20/s
    Quota q =
        shared
            ? new Quota(20, 20, Duration.ofSeconds(1), 0)
            : new Quota(10, 10, Duration.ofSeconds(1), 0);
    TenantTokenBuckets b = TenantTokenBuckets.builder().defaultQuota(q).build();
    double pendingGreedy = 0;
    double pendingPolite = 0;
    long[] admitted = new long[2];
    Random rnd = new Random(1);
    for (int step = 1; step <= 100; step++) {
      long now = step * SECOND / 10;
      pendingGreedy += 100 * 0.1;
      pendingPolite += 5 * 0.1;
      List<Integer> attempts = new ArrayList<>();
      while (pendingGreedy >= 1 - 1e-9) {
        attempts.add(1);
        pendingGreedy -= 1;
      }
      while (pendingPolite >= 1 - 1e-9) {
        attempts.add(0);
        pendingPolite -= 1;
      }
      java.util.Collections.shuffle(attempts, rnd);
      for (int who : attempts) {
        String tenant = shared ? "everyone" : (who == 0 ? "polite" : "greedy");
        if (b.tryAcquire(tenant, 1, now).granted()) {
          admitted[who]++;
        }
      }
    }
    return admitted;
  }

  @Test
  void snapshotIsBoundedAndValidationIsSpecific() {
    TenantTokenBuckets b = TenantTokenBuckets.builder().maxTenants(10).build();
    for (int i = 0; i < 5; i++) {
      b.tryAcquire("t" + i, 1, 0);
    }
    assertThat(b.snapshot(3, 0)).hasSize(3);
    assertThatThrownBy(() -> new Quota(0, 1, Duration.ofSeconds(1), 0))
        .hasMessageContaining("capacityTokens");
    assertThatThrownBy(() -> new Quota(1, 1, Duration.ZERO, 0)).hasMessageContaining("period");
    assertThatThrownBy(() -> TenantTokenBuckets.builder().maxTenants(0))
        .hasMessageContaining("maxTenants");
    assertThatThrownBy(() -> b.tryAcquire("t", -1, 0)).hasMessageContaining("tokens");
  }

  @Test
  void hugePeriodsAndElapsedTimesDoNotOverflow() {
    TenantTokenBuckets b =
        TenantTokenBuckets.builder()
            .defaultQuota(new Quota(Quota.MAX_TOKENS, Quota.MAX_TOKENS, Duration.ofDays(366), 0))
            .build();
    assertThat(b.tryAcquire("t", Quota.MAX_TOKENS, 0).granted()).isTrue();
    assertThat(b.available("t", Long.MAX_VALUE / 2)).isEqualTo(Quota.MAX_TOKENS);
  }
}
