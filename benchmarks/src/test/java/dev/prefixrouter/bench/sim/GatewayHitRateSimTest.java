package dev.prefixrouter.bench.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.prefixrouter.scoring.EstimatedTtftScorer;
import org.junit.jupiter.api.Test;

/** Reproduces the published gateway table with the real engine (deterministic). */
class GatewayHitRateSimTest {

  @Test
  void cpythonRandomIsReproduced() {
    assertThat(new PyRandom(1).random()).isEqualTo(0.13436424411240122);
    assertThat(new PyRandom(42).random()).isEqualTo(0.6394267984578837);
  }

  private static String pct(double r) {
    return String.format(java.util.Locale.ROOT, "%.2f", 100 * r);
  }

  @Test
  void roundRobinAndConsistentHashMatchThePublishedNumbers() {
    assertThat(pct(GatewayHitRateSim.run("round-robin", false).hitRate())).isEqualTo("40.50");
    assertThat(pct(GatewayHitRateSim.run("round-robin", true).hitRate())).isEqualTo("61.96");
    GatewayHitRateSim.Result ch = GatewayHitRateSim.run("consistent-hash", false);
    assertThat(pct(ch.hitRate())).isEqualTo("40.15");
    assertThat(ch.perBackend()).contains(3000); // collapses onto one backend
    assertThat(pct(GatewayHitRateSim.run("consistent-hash", true).hitRate())).isEqualTo("62.68");
  }

  @Test
  void thePublishedGatewayRuleReproducesItsOwnResult() {
    assertThat(pct(GatewayHitRateSim.run("gateway-calibrated", false).hitRate()))
        .isEqualTo("99.31");
  }

  @Test
  void ourScorerMeetsTheTargetOnThePublishedSeeds() {
    // the target: >= 99.3 % on both distributions with every backend within 5 % of the
    // mean (needs the paced balance replicas: without them uniform is 99.05 %)
    for (boolean skewed : new boolean[] {false, true}) {
      GatewayHitRateSim.Result r = GatewayHitRateSim.run("est-ttft", skewed);
      assertThat(r.hitRate()).isGreaterThanOrEqualTo(0.993);
      assertThat(r.maxDeviationFromMean()).isLessThan(0.05);
      GatewayHitRateSim.Result sticky = GatewayHitRateSim.run("est-ttft-sticky", skewed);
      assertThat(sticky.hitRate()).isGreaterThan(0.993);
    }
  }

  @Test
  void cachePressureMeetsTheSkewedTargetOnMostOtherSeeds() {
    // without it, balance replicates the hottest document onto caches already full and they
    // thrash: 1 seed of 10 meets the target; with it, 8 (benchmarks/README.md)
    int with = 0;
    int without = 0;
    for (int seed = 1; seed <= 10; seed++) {
      EstimatedTtftScorer on = EstimatedTtftScorer.builder().calibrate(false).build();
      EstimatedTtftScorer off =
          EstimatedTtftScorer.builder().calibrate(false).cachePressure(0, 4).build();
      with += GatewayHitRateSim.meetsTarget(GatewayHitRateSim.run(on, "on", true, seed)) ? 1 : 0;
      without +=
          GatewayHitRateSim.meetsTarget(GatewayHitRateSim.run(off, "off", true, seed)) ? 1 : 0;
    }
    assertThat(with).isGreaterThanOrEqualTo(8);
    assertThat(without).isLessThanOrEqualTo(1);
  }

  @Test
  void calibrationKeepsTheCacheWhenTheObservedTtftCarriesNoPrefixSignal() {
    // first tokens reported after a fixed 24 ms or a random 1..47 ms, whatever the prompt: fitted
    // blindly, prefill came out nearly free and the hit rate fell to 59.4 % (uniform, constant)
    for (boolean skewed : new boolean[] {false, true}) {
      for (GatewayHitRateSim.FirstTokens f :
          new GatewayHitRateSim.FirstTokens[] {
            GatewayHitRateSim.FirstTokens.CONSTANT, GatewayHitRateSim.FirstTokens.RANDOM
          }) {
        EstimatedTtftScorer off = EstimatedTtftScorer.builder().calibrate(false).build();
        EstimatedTtftScorer on = EstimatedTtftScorer.builder().build();
        double hitOff = GatewayHitRateSim.run(off, "off", skewed, 1, f).hitRate();
        double hitOn = GatewayHitRateSim.run(on, "on", skewed, 1, f).hitRate();
        assertThat(hitOn).as("%s %s", f, skewed).isCloseTo(hitOff, within(0.01));
        assertThat(on.describe(0)).containsEntry("fitted", 0.0);
      }
    }
  }
}
