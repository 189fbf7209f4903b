package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.LoadReport;
import dev.prefixrouter.api.spi.Scorer;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Each anchor policy's rule pinned on a small hand-computed case. */
class PoliciesTest {

  @Test
  void everyNameBuildsAScorerWithThatName() {
    for (String name : Policies.NAMES) {
      assertThat(Policies.byName(name).name()).isEqualTo(name);
    }
    assertThatThrownBy(() -> Policies.byName("magic"))
        .hasMessageContaining("unknown policy 'magic'")
        .hasMessageContaining("round-robin");
  }

  @Test
  void roundRobinCycles() {
    Scorer s = Policies.byName("round-robin");
    FakeContext ctx = new FakeContext(3);
    StringBuilder seq = new StringBuilder();
    for (int i = 0; i < 6; i++) {
      s.score(ctx);
      seq.append(ctx.best());
    }
    assertThat(seq).hasToString("012012");
  }

  @Test
  void leastRequestTakesFewestInFlightAndRotatesTies() {
    Scorer s = Policies.byName("least-request");
    FakeContext ctx = new FakeContext(3);
    ctx.inFlight[0] = 2;
    ctx.inFlight[1] = 1;
    ctx.inFlight[2] = 1;
    Set<Integer> picks = new HashSet<>();
    for (int i = 0; i < 4; i++) {
      s.score(ctx);
      picks.add(ctx.best());
    }
    assertThat(picks).containsExactlyInAnyOrder(1, 2);
  }

  @Test
  void powerOfTwoNeverPicksTheWorstOfThreeWhenLoadsDiffer() {
    Scorer s = Policies.byName("p2c");
    FakeContext ctx = new FakeContext(3);
    ctx.inFlight[0] = 9;
    ctx.inFlight[1] = 1;
    ctx.inFlight[2] = 5;
    Set<Integer> picks = new HashSet<>();
    for (int i = 0; i < 200; i++) {
      s.score(ctx);
      picks.add(ctx.best());
    }
    assertThat(picks).containsExactlyInAnyOrder(1, 2); // 0 loses every pair it is drawn in
  }

  @Test
  void consistentHashUsesTheFirstBlockKeyModuloCandidates() {
    Scorer s = Policies.byName("consistent-hash");
    FakeContext ctx = new FakeContext(3);
    ctx.keys = new long[] {7, 123};
    s.score(ctx);
    assertThat(ctx.best()).isEqualTo(1); // 7 mod 3
    ctx.keys = new long[] {-1L}; // unsigned 2^64-1 mod 3 = 0
    s.score(ctx);
    assertThat(ctx.best()).isEqualTo(0);
  }

  @Test
  void sglangRoutesToTheDeepestMatchAboveThresholdElseMinLoad() {
    Scorer s = Policies.byName("sglang-cache-aware");
    FakeContext ctx = new FakeContext(3);
    ctx.keys = new long[10];
    ctx.matchedBlocks[2] = 4; // rate 0.4 > 0.3
    ctx.inFlight[2] = 20;
    s.score(ctx);
    assertThat(ctx.best()).isEqualTo(2);
    ctx.matchedBlocks[2] = 3; // rate 0.3, not above
    s.score(ctx);
    assertThat(ctx.best()).isIn(0, 1);
    // imbalance gate: gap 70 > 64 and 80 > 1.5 × 10 → min load even with a full match
    ctx.matchedBlocks[2] = 10;
    ctx.inFlight[0] = 10;
    ctx.inFlight[1] = 15;
    ctx.inFlight[2] = 80;
    s.score(ctx);
    assertThat(ctx.best()).isEqualTo(0);
  }

  @Test
  void dynamoCostMatchesTheClassicFormula() {
    Scorer s = Policies.byName("dynamo-kv");
    FakeContext ctx = new FakeContext(2);
    ctx.promptTokens = 160; // 10 blocks of 16
    ctx.keys = new long[10];
    ctx.matchedBlocks[0] = 8;
    ctx.pending[0] = 320;
    ctx.active[0] = 480;
    s.score(ctx);
    // b0: prefill (320 + 32)/16 = 22; decode 480/16 + 2 = 32 → 54; b1: 160/16 + 0 + 10 = 20
    assertThat(ctx.cost(0)).isEqualTo(54.0);
    assertThat(ctx.cost(1)).isEqualTo(20.0);
    assertThat(ctx.best()).isEqualTo(1);
  }

  @Test
  void llmdWeightsPrefixThreeQueueTwoKvTwo() {
    Scorer s = Policies.byName("llmd-3-2-2");
    FakeContext ctx = new FakeContext(2);
    ctx.keys = new long[4];
    ctx.matchedBlocks[0] = 4; // prefix 1.0
    ctx.loads[0] = LoadReport.of(5, 10, 0.8); // queue score 0, kv 0.2
    ctx.loads[1] = LoadReport.of(1, 0, 0.1); // prefix 0, queue 1, kv 0.9
    ctx.loadAge[0] = 0;
    ctx.loadAge[1] = 0;
    s.score(ctx);
    assertThat(-ctx.cost(0))
        .isCloseTo(3 * 1.0 + 0 + 2 * 0.2, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(-ctx.cost(1))
        .isCloseTo(0 + 2 * 1.0 + 2 * 0.9, org.assertj.core.data.Offset.offset(1e-9));
    assertThat(ctx.best()).isEqualTo(1); // 3.8 > 3.4
  }

  @Test
  void gatewayRuleBandAndSaturationFallback() {
    Scorer calibrated = Policies.byName("gateway-calibrated");
    FakeContext ctx = new FakeContext(3);
    ctx.promptTokens = 1568; // 98 blocks
    ctx.matchedBlocks[0] = 98;
    ctx.inFlight[0] = 10; // est 10 ms; others 78.4 ms
    calibrated.score(ctx);
    assertThat(ctx.best()).isEqualTo(0);
    ctx.inFlight[0] = 25; // > max_inflight 24: excluded
    calibrated.score(ctx);
    assertThat(ctx.best()).isIn(1, 2);
    Scorer shipped = Policies.byName("gateway-shipped");
    ctx.inFlight[0] = 1; // 200 ms service cost vs 78.4 ms prefill elsewhere
    shipped.score(ctx);
    assertThat(ctx.best()).isIn(1, 2);
    ctx.inFlight[0] = 30;
    ctx.inFlight[1] = 26;
    ctx.inFlight[2] = 27;
    calibrated.score(ctx); // all above 24: least in-flight, affinity ignored
    assertThat(ctx.best()).isEqualTo(1);
  }
}
