package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class CostModelTest {

  /**
   * A pathological observation (a queued prefill of 10¹² tokens: a wrapped counter) made the
   * covariance matrix lose its positive diagonal (β stuck at its floor), the negative diagonal grew
   * by 1/λ per observation, the fit diverged (published at the band's edges) and after ~5,500 first
   * tokens every observation returned before it was counted: the model froze. It keeps learning,
   * with finite coefficients within the band, and finds β again.
   */
  @Test
  void aPathologicalObservationDoesNotFreezeTheModel() {
    TtftCoefficients p = TtftCoefficients.DEFAULTS;
    CostModel m = new CostModel(p, 0.995, 20, 8);
    SplittableRandom rnd = new SplittableRandom(6);
    m.observe(50_000_000L, 1_000, 0, 1_000_000_000_000L, 0);
    for (int i = 0; i < 8_000; i++) {
      int prompt = 100 + rnd.nextInt(8_000);
      int matched = rnd.nextInt(prompt + 1);
      double ms = 2 * p.prefillMs(prompt - matched, matched) * (1 + 0.05 * rnd.nextGaussian());
      m.observe((long) (ms * 1e6), prompt - matched, matched, 0, 0);
    }
    assertThat(m.observations()).isEqualTo(8_001);
    TtftCoefficients k = m.current();
    for (double v :
        new double[] {
          k.alphaMs(), k.betaMsPerToken(), k.gammaMsPerToken2(), k.decodeMsPerRunning()
        }) {
      assertThat(v).isFinite();
    }
    assertThat(k.betaMsPerToken()).isBetween(p.betaMsPerToken() / 8, p.betaMsPerToken() * 8);
    assertThat(m.fitted()).isTrue();
    assertThat(k.betaMsPerToken())
        .isCloseTo(2 * p.betaMsPerToken(), within(0.2 * p.betaMsPerToken()));
  }
}
