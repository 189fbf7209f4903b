package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/** {@link PrefixRates}: decayed rates, the age and copy guards, the bound and lost updates. */
class PrefixRatesTest {
  private static final long S = 1_000_000_000L;
  private static final long T0 = 1_000 * S;

  private final PrefixRates rates = new PrefixRates(1024, 10, 1);

  @Test
  void anUnknownPrefixHasNoRate() {
    assertThat(rates.perSecond(42, T0)).isZero();
    rates.record(7, T0, false, 2);
    assertThat(rates.perSecond(42, T0 + 5 * S)).isZero();
  }

  @Test
  void aPrefixIsReportedOnceItHasBeenCountedForTheMinimumAge() {
    rates.record(42, T0, false, 2);
    assertThat(rates.perSecond(42, T0 + S / 2)).isZero();
    rates.record(42, T0 + S / 2, false, 2); // counted 0.5 s after the first
    double expected = (2 * Math.exp(-0.05) + 2) * Math.exp(-0.05) / 10;
    assertThat(rates.perSecond(42, T0 + S)).isCloseTo(expected, within(1e-12));
  }

  @Test
  void aCopyHidesTheRateForTheMinimumAge() {
    rates.record(42, T0, false, 2);
    rates.record(42, T0 + 2 * S, true, 0); // a copy, not counted
    assertThat(rates.perSecond(42, T0 + 2 * S + S / 2)).isZero();
    assertThat(rates.perSecond(42, T0 + 3 * S)).isCloseTo(2 * Math.exp(-0.3) / 10, within(1e-12));
  }

  @Test
  void aPrefixThatWentColdAgesAgain() {
    rates.record(42, T0, false, 2);
    // 2 e^{-t/10} < 1 after 6.9 s: the next count restarts the age
    rates.record(42, T0 + 10 * S, false, 2);
    assertThat(rates.perSecond(42, T0 + 10 * S + S / 2)).isZero();
    assertThat(rates.perSecond(42, T0 + 11 * S)).isPositive();
  }

  @Test
  void aNewPrefixDisplacesTheColderOfItsSet() {
    PrefixRates one = new PrefixRates(2, 10, 0); // one set of two
    one.record(1, T0, false, 8); // hot
    one.record(2, T0, false, 1); // cold
    one.record(3, T0, false, 2); // displaces 2
    assertThat(one.perSecond(1, T0)).isCloseTo(0.8, within(1e-12));
    assertThat(one.perSecond(2, T0)).isZero();
    assertThat(one.perSecond(3, T0)).isCloseTo(0.2, within(1e-12));
  }

  @Test
  void keyZeroIsAKeyLikeAnyOther() {
    PrefixRates r = new PrefixRates(2, 10, 0);
    r.record(0, T0, false, 2);
    assertThat(r.perSecond(0, T0)).isCloseTo(0.2, within(1e-12));
  }

  @Test
  void theBoundMustBeAPowerOfTwo() {
    assertThatThrownBy(() -> new PrefixRates(3, 10, 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("power of two");
    assertThatThrownBy(() -> new PrefixRates(1, 10, 1))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void concurrentRecordsOfOnePrefixAreAllCounted() throws InterruptedException {
    int threads = 4;
    int each = 20_000;
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> ts = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      Thread th =
          new Thread(
              () -> {
                try {
                  go.await();
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                  return;
                }
                for (int i = 0; i < each; i++) {
                  rates.record(42, T0, false, 1); // one instant: no decay between the counts
                  rates.record(43 + i % 1000, T0, i % 7 == 0, 1); // other sets, other locks
                }
              });
      th.start();
      ts.add(th);
    }
    go.countDown();
    for (Thread th : ts) {
      th.join();
    }
    assertThat(rates.perSecond(42, T0 + S))
        .isCloseTo(threads * each * Math.exp(-0.1) / 10, within(1e-6));
  }
}
