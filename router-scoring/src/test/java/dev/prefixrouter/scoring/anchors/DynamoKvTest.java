package dev.prefixrouter.scoring.anchors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.scoring.FakeContext;
import org.junit.jupiter.api.Test;

class DynamoKvTest {

  @Test
  void costMatchesTheClassicFormula() {
    DynamoKv s = DynamoKv.defaults();
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
  void overlapWeightScalesOnlyThePrefillLoad() {
    FakeContext ctx = new FakeContext(1);
    ctx.promptTokens = 160;
    ctx.keys = new long[10];
    ctx.pending[0] = 320;
    new DynamoKv(0).score(ctx);
    assertThat(ctx.cost(0)).isEqualTo(10.0); // decode blocks only
    new DynamoKv(2).score(ctx);
    assertThat(ctx.cost(0)).isEqualTo(2 * 30.0 + 10.0);
  }

  @Test
  void rejectsANegativeOrNonFiniteWeight() {
    assertThatThrownBy(() -> new DynamoKv(-0.5))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("overlapWeight must be finite and >= 0, was -0.5");
    assertThatThrownBy(() -> new DynamoKv(Double.POSITIVE_INFINITY))
        .hasMessage("overlapWeight must be finite and >= 0, was Infinity");
  }
}
