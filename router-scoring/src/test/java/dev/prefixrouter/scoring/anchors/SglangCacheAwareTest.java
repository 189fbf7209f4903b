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
