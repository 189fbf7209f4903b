package dev.prefixrouter.scoring.anchors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.scoring.FakeContext;
import org.junit.jupiter.api.Test;

class GatewayEstTtftTest {

  @Test
  void bandAndSaturationFallback() {
    GatewayEstTtft calibrated = GatewayEstTtft.calibrated();
    FakeContext ctx = new FakeContext(3);
    ctx.promptTokens = 1568; // 98 blocks
    ctx.matchedBlocks[0] = 98;
    ctx.inFlight[0] = 10; // est 10 ms; others 78.4 ms
    calibrated.score(ctx);
    assertThat(ctx.best()).isEqualTo(0);
    ctx.inFlight[0] = 25; // > max_inflight 24: excluded
    calibrated.score(ctx);
    assertThat(ctx.best()).isIn(1, 2);
    GatewayEstTtft shipped = GatewayEstTtft.shipped();
    ctx.inFlight[0] = 1; // 200 ms service cost vs 78.4 ms prefill elsewhere
    shipped.score(ctx);
    assertThat(ctx.best()).isIn(1, 2);
    ctx.inFlight[0] = 30;
    ctx.inFlight[1] = 26;
    ctx.inFlight[2] = 27;
    calibrated.score(ctx); // all above 24: least in-flight, affinity ignored
    assertThat(ctx.best()).isEqualTo(1);
    assertThat(ctx.reason).isEqualTo("gateway-calibrated: all saturated → least in-flight");
  }

  @Test
  void withinTheBandTheLeastLoadedWinsAndTiesRotate() {
    GatewayEstTtft s = new GatewayEstTtft("g", 0.05, 1, 24, 2);
    FakeContext ctx = new FakeContext(3);
    ctx.promptTokens = 1600;
    java.util.Arrays.fill(ctx.matchedBlocks, 100); // all cached: est = in-flight ms
    ctx.inFlight[0] = 1; // 1 ms, within the 2 ms band of the best (0 ms) but busier
    StringBuilder picks = new StringBuilder();
    for (int i = 0; i < 4; i++) {
      s.score(ctx);
      picks.append(ctx.best());
    }
    assertThat(picks).hasToString("1212");
  }

  @Test
  void rejectsParametersOutOfRangeNamingThem() {
    assertThatThrownBy(() -> new GatewayEstTtft(" ", 0.05, 1, 24, 2))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("name must not be blank, was ' '");
    assertThatThrownBy(() -> new GatewayEstTtft("g", 0.05, 1, -1, 2))
        .hasMessage("maxInflight must be >= 0, was -1");
    assertThatThrownBy(() -> new GatewayEstTtft("g", -0.05, 1, 24, 2))
        .hasMessage("prefillMsPerToken must be finite and >= 0, was -0.05");
    assertThatThrownBy(() -> new GatewayEstTtft("g", 0.05, 1, 24, Double.NaN))
        .hasMessage("bandMs must be finite and >= 0, was NaN");
  }
}
