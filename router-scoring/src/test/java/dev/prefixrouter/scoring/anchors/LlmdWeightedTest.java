package dev.prefixrouter.scoring.anchors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.offset;

import dev.prefixrouter.api.LoadReport;
import dev.prefixrouter.scoring.FakeContext;
import org.junit.jupiter.api.Test;

class LlmdWeightedTest {

  @Test
  void weightsPrefixThreeQueueTwoKvTwo() {
    LlmdWeighted s = LlmdWeighted.defaults();
    FakeContext ctx = new FakeContext(2);
    ctx.keys = new long[4];
    ctx.matchedBlocks[0] = 4; // prefix 1.0
    ctx.loads[0] = LoadReport.of(5, 10, 0.8); // queue score 0, kv 0.2
    ctx.loads[1] = LoadReport.of(1, 0, 0.1); // prefix 0, queue 1, kv 0.9
    ctx.loadAge[0] = 0;
    ctx.loadAge[1] = 0;
    s.score(ctx);
    assertThat(-ctx.cost(0)).isCloseTo(3 * 1.0 + 0 + 2 * 0.2, offset(1e-9));
    assertThat(-ctx.cost(1)).isCloseTo(0 + 2 * 1.0 + 2 * 0.9, offset(1e-9));
    assertThat(ctx.best()).isEqualTo(1); // 3.8 > 3.4
    assertThat(ctx.reason).isEqualTo("llm-d 3:2:2");
  }

  @Test
  void nameAndReasonFollowTheWeights() {
    assertThat(LlmdWeighted.defaults().name()).isEqualTo("llmd-3-2-2");
    assertThat(new LlmdWeighted(1, 1, 1).name()).isEqualTo("llmd-1-1-1");
    assertThat(new LlmdWeighted(2.5, 1, 0).name()).isEqualTo("llmd-2.5-1-0");
  }

  @Test
  void rejectsANegativeWeightNamingIt() {
    assertThatThrownBy(() -> new LlmdWeighted(3, -2, 2))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("queueWeight must be finite and >= 0, was -2.0");
    assertThatThrownBy(() -> new LlmdWeighted(3, 2, Double.NaN))
        .hasMessage("kvWeight must be finite and >= 0, was NaN");
  }
}
