package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class PublishedCoefficientsTest {

  @Test
  void readsWhatWasSetAndSnapshotsIt() {
    PublishedCoefficients p = new PublishedCoefficients(TtftCoefficients.DEFAULTS);
    assertThat(p.snapshot()).isEqualTo(TtftCoefficients.DEFAULTS);
    p.set(1, 0.5, 1e-4, 2, 3);
    double[] out = new double[7];
    p.readInto(out, 2);
    assertThat(out).containsExactly(0, 0, 1, 0.5, 1e-4, 2, 3);
    assertThat(p.snapshot()).isEqualTo(new TtftCoefficients(1, 0.5, 1e-4, 2, 3));
  }

  @Test
  @Timeout(30)
  void aReaderNeverSeesTwoFitsMixed() throws InterruptedException {
    PublishedCoefficients p =
        new PublishedCoefficients(new TtftCoefficients(1, 1e-3, 1e-7, 1, 1)); // v = 1
    AtomicBoolean stop = new AtomicBoolean();
    Thread writer =
        new Thread(
            () -> {
              for (int v = 1; !stop.get(); v = v % 999 + 1) {
                p.set(v, v * 1e-3, v * 1e-7, v, v); // each fit: every value a function of v
              }
            });
    writer.start();
    AtomicLong torn = new AtomicLong();
    double[] out = new double[5];
    long end = System.nanoTime() + 300_000_000L;
    long reads = 0;
    // 300 ms and at least 10,000 reads: a reader descheduled for the whole window would read none
    while (System.nanoTime() < end || reads < 10_000) {
      p.readInto(out, 0);
      double v = out[0];
      if (out[1] != v * 1e-3 || out[2] != v * 1e-7 || out[3] != v || out[4] != v) {
        torn.incrementAndGet();
      }
      reads++;
    }
    stop.set(true);
    writer.join();
    assertThat(reads).isPositive();
    assertThat(torn.get()).isZero();
  }
}
