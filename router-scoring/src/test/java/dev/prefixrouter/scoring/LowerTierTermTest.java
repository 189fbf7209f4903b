package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;

import org.junit.jupiter.api.Test;

/** The lower-tier credit's decision rule. */
class LowerTierTermTest {
  private static final TtftCoefficients K = TtftCoefficients.DEFAULTS;
  private static final double[] CREDITS = {0, 0.1, 0.37, 0.5, 0.8, 1};
  // built once: a scorer holds per-backend tables
  private static final EstimatedTtftScorer[] SCORERS =
      java.util.Arrays.stream(CREDITS)
          .mapToObj(LowerTierTermTest::scorer)
          .toArray(EstimatedTtftScorer[]::new);

  private static EstimatedTtftScorer scorer(double credit) {
    return EstimatedTtftScorer.builder().calibrate(false).lowerTierCredit(credit).build();
  }

  @Test
  void creditsTheFractionOfTheGpuHitsSavingAndPicksTheLowerTierHolder() {
    FakeContext ctx = new FakeContext(3);
    ctx.promptTokens = 4096;
    ctx.matchedBlocks[1] = 64; // 1024 tokens on b1's GPU
    ctx.offloadedBlocks[1] = 128; // the next 2048 on its CPU
    ctx.offloadedBlocks[2] = 10_000; // more than the prompt: capped at what is left
    scorer(0.8).score(ctx);
    double plain1 = K.prefillMs(3072, 1024);
    double saved1 = plain1 - K.prefillMs(1024, 3072);
    assertThat(ctx.cost(1)).isCloseTo(plain1 - 0.8 * saved1, within(1e-9));
    double plain2 = K.prefillMs(4096, 0);
    double saved2 = plain2 - K.prefillMs(0, 4096);
    assertThat(ctx.cost(2)).isCloseTo(plain2 - 0.8 * saved2, within(1e-9));
    assertThat(ctx.cost(0)).isCloseTo(plain2, within(1e-9));
    // b2 reloads the whole prompt (0.2 of its prefill past alpha), b1 a part of it
    assertThat(ctx.best()).isEqualTo(2);
    assertThat(ctx.reason).isEqualTo("est-ttft, lower-tier hit");
  }

  @Test
  void withoutCreditALowerTierHitIsAMissAndTheGpuHolderWins() {
    FakeContext ctx = new FakeContext(2);
    ctx.promptTokens = 4096;
    ctx.matchedBlocks[0] = 64; // 1024 on b0's GPU
    ctx.offloadedBlocks[1] = 256; // the whole prompt on b1's CPU
    EstimatedTtftScorer off = scorer(0);
    assertThat(off.termNames()).doesNotContain("lower-tier");
    off.score(ctx);
    assertThat(ctx.best()).isEqualTo(0);
    assertThat(ctx.cost(1)).isCloseTo(K.prefillMs(4096, 0), within(1e-9));
    scorer(0.8).score(ctx);
    assertThat(ctx.best()).isEqualTo(1);
    // at a credit of 0.2 the reload costs more than computing the rest behind b0's GPU hit
    scorer(0.2).score(ctx);
    assertThat(ctx.best()).isEqualTo(0);
  }

  @Test
  void aLoadedLowerTierHolderLosesWhenItsQueueCostsMoreThanTheCredit() {
    FakeContext ctx = new FakeContext(2);
    ctx.promptTokens = 4096;
    ctx.offloadedBlocks[1] = 256;
    double credit = 0.8 * (K.prefillMs(4096, 0) - K.prefillMs(0, 4096));
    ctx.pending[1] = (long) Math.ceil((credit + 10) / K.betaMsPerToken()); // queue > credit
    scorer(0.8).score(ctx);
    assertThat(ctx.best()).isEqualTo(0);
    ctx.pending[1] = (long) Math.floor((credit - 10) / K.betaMsPerToken()); // queue < credit
    scorer(0.8).score(ctx);
    assertThat(ctx.best()).isEqualTo(1);
  }

  @Test
  void theCreditIsBetweenNothingAndTheGpuHitsSavingAndGrowsWithTheFraction() {
    qt().forAll(
            integers().between(1, 8192),
            integers().between(0, 600),
            integers().between(0, 600),
            integers().between(0, CREDITS.length - 1))
        .checkAssert(
            (prompt, gpu, lower, at) -> {
              double credit = CREDITS[at];
              EstimatedTtftScorer none = SCORERS[0];
              FakeContext ctx = new FakeContext(1);
              ctx.promptTokens = prompt;
              ctx.matchedBlocks[0] = gpu;
              ctx.offloadedBlocks[0] = lower;
              none.score(ctx);
              double miss = ctx.cost(0);
              SCORERS[at].score(ctx);
              double credited = ctx.cost(0);
              // as if every lower-tier token were a GPU hit
              FakeContext hit = new FakeContext(1);
              hit.promptTokens = prompt;
              hit.matchedBlocks[0] = gpu + lower;
              none.score(hit);
              assertThat(credited).isLessThanOrEqualTo(miss + 1e-9);
              assertThat(credited).isGreaterThanOrEqualTo(hit.cost(0) - 1e-9);
              assertThat(credited)
                  .isCloseTo(miss - credit * (miss - hit.cost(0)), within(1e-6 * (1 + miss)));
            });
  }

  @Test
  void creditOutsideZeroToOneIsRejected() {
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().lowerTierCredit(1.5))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("lowerTierCredit must be in [0, 1], was 1.5");
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().lowerTierCredit(Double.NaN))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
