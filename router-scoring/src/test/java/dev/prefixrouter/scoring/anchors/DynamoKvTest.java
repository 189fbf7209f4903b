package dev.prefixrouter.scoring.anchors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.scoring.FakeContext;
import org.junit.jupiter.api.Test;

class DynamoKvTest {

  @Test
  void costMatchesTheClassicFormula() {
    DynamoKv s = DynamoKv.defaults();
    FakeContext routed = new FakeContext(2);
    routed.keys = new long[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    s.onRoutedLease(routed, 0); // b0 holds these 10 blocks active
    routed.keys = new long[] {1, 2, 3, 4, 5, 6, 21, 22, 23, 24};
    s.onRoutedLease(routed, 0); // and 4 more: 14 distinct, the shared 6 counted once
    FakeContext ctx = new FakeContext(2);
    ctx.promptTokens = 160; // 10 blocks of 16
    ctx.keys = new long[] {1, 2, 3, 4, 5, 6, 7, 8, 31, 32};
    ctx.matchedBlocks[0] = 8;
    ctx.pending[0] = 320;
    ctx.active[0] = 480; // tokens reserved by open requests: not Dynamo's signal
    s.score(ctx);
    // b0: prefill (320 + 32)/16 = 22; decode 14 active + 2 new = 16 → 38; b1: 160/16 + 0 + 10 = 20
    assertThat(ctx.cost(0)).isEqualTo(38.0);
    assertThat(ctx.cost(1)).isEqualTo(20.0);
    assertThat(ctx.best()).isEqualTo(1);
  }

  @Test
  void aRequestsBlocksLeaveTheActiveSetWhenItsLeaseEnds() {
    DynamoKv s = DynamoKv.defaults();
    FakeContext routed = new FakeContext(1);
    routed.keys = new long[] {1, 2, 3};
    Object first = s.onRoutedLease(routed, 0);
    Object second = s.onRoutedLease(routed, 0);
    FakeContext ctx = new FakeContext(1);
    ctx.promptTokens = 16;
    ctx.keys = new long[] {7};
    s.score(ctx);
    // prefill 16/16 = 1; decode 3 active + 1 new
    assertThat(ctx.cost(0)).isEqualTo(1 + 3 + 1);
    s.onEnded(0, first);
    s.score(ctx);
    assertThat(ctx.cost(0)).as("the other request still holds them").isEqualTo(1 + 3 + 1);
    s.onEnded(0, second);
    s.score(ctx);
    assertThat(ctx.cost(0)).isEqualTo(1 + 0 + 1);
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
