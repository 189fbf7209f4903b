package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** A cold-start first token does not hold a backend's speed evidence back. */
class SpeedWarmupTest {

  /**
   * One 30 s first token against a 35 ms estimate: weighted 1 and seeding the residual scale, it
   * clamped the factor at 8, and it stayed near 3 after 200 normal first tokens.
   */
  @Test
  void aColdStartFirstTokenDoesNotHoldTheSpeedFactorBack() {
    SpeedFactor s = new SpeedFactor(0.995, 20, 8);
    s.observe(35, 30_000);
    for (int i = 0; i < 200; i++) {
      s.observe(35, 35);
    }
    assertThat(s.factor()).isLessThan(1.2);
    assertThat(s.observations()).isEqualTo(201);
  }

  /** The same for the idle-start slope of scope IDLE_SPEED. */
  @Test
  void aColdStartFirstTokenDoesNotHoldTheIdleSpeedSlopeBack() {
    IdleSpeed s = new IdleSpeed(0.995, 0.25, 3, 10, 8);
    s.observe(35, 30_000);
    for (int i = 0; i < 200; i++) {
      s.observe(35, 35);
    }
    double[] out = new double[2];
    s.slopeInto(out);
    assertThat(out[0]).isLessThan(1.2);
  }
}
