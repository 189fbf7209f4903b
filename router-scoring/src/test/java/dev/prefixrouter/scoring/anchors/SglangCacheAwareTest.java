package dev.prefixrouter.scoring.anchors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.scoring.FakeContext;
import org.junit.jupiter.api.Test;

class SglangCacheAwareTest {

  @Test
  void routesToTheDeepestMatchAboveThresholdElseMinLoad() {
    SglangCacheAware s = SglangCacheAware.defaults();
    FakeContext ctx = new FakeContext(3);
    ctx.keys = new long[10];
    ctx.matchedBlocks[2] = 4; // rate 0.4 > 0.3
    ctx.inFlight[2] = 20;
    s.score(ctx);
    assertThat(ctx.best()).isEqualTo(2);
    assertThat(ctx.reason).isEqualTo("sglang: cache hit 0.40");
    ctx.matchedBlocks[2] = 3; // rate 0.3, not above
    s.score(ctx);
    assertThat(ctx.best()).isIn(0, 1);
    assertThat(ctx.reason).isEqualTo("sglang: miss → min load");
    // imbalance gate: gap 70 > 64 and 80 > 1.5 × 10 → min load even with a full match
    ctx.matchedBlocks[2] = 10;
    ctx.inFlight[0] = 10;
    ctx.inFlight[1] = 15;
    ctx.inFlight[2] = 80;
    s.score(ctx);
    assertThat(ctx.best()).isEqualTo(0);
    assertThat(ctx.reason).isEqualTo("sglang: imbalanced → min load");
  }

  @Test
  void theGatewaysLaterRuleSendsAHitToTheLeastLoadedHolderOfTheDeepestMatch() {
    FakeContext ctx = new FakeContext(4);
    ctx.keys = new long[10];
    ctx.matchedBlocks[0] = 8;
    ctx.matchedBlocks[1] = 8;
    ctx.matchedBlocks[2] = 8;
    ctx.matchedBlocks[3] = 5; // a shallower holder does not count
    ctx.inFlight[0] = 9;
    ctx.inFlight[1] = 3;
    ctx.inFlight[2] = 6;
    ctx.inFlight[3] = 0;
    SglangCacheAware one = SglangCacheAware.defaults();
    one.score(ctx);
    assertThat(ctx.best()).as("one fixed holder").isEqualTo(0);
    SglangCacheAware smg = SglangCacheAware.smg();
    smg.score(ctx);
    assertThat(ctx.best()).isEqualTo(1);
    assertThat(ctx.reason).isEqualTo("sglang: cache hit 0.80");
    assertThat(smg.name()).isEqualTo("sglang-smg");
    // with room for two holders only, the first two in candidate order (rotating) are asked
    SglangCacheAware two = new SglangCacheAware(0.3, 64, 1.5, 2);
    two.score(ctx); // rotation 0: candidates 0 and 1
    assertThat(ctx.best()).isEqualTo(1);
    two.score(ctx); // rotation 1: candidates 1 and 2
    assertThat(ctx.best()).isEqualTo(1);
    two.score(ctx); // rotation 2: candidates 2 and 0
    assertThat(ctx.best()).isEqualTo(2);
    assertThatThrownBy(() -> new SglangCacheAware(0.3, 64, 1.5, 0))
        .hasMessage("matchedTenants must be in [1, 64], was 0");
  }

  @Test
  void rejectsParametersOutOfRangeNamingThem() {
    assertThatThrownBy(() -> new SglangCacheAware(1.5, 64, 1.5))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("cacheThreshold must be in [0, 1], was 1.5");
    assertThatThrownBy(() -> new SglangCacheAware(Double.NaN, 64, 1.5))
        .hasMessage("cacheThreshold must be in [0, 1], was NaN");
    assertThatThrownBy(() -> new SglangCacheAware(0.3, -1, 1.5))
        .hasMessage("balanceAbs must be >= 0, was -1");
    assertThatThrownBy(() -> new SglangCacheAware(0.3, 64, 0.9))
        .hasMessage("balanceRel must be finite and >= 1, was 0.9");
  }
}
