package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.scoring.anchors.ConsistentHash;
import dev.prefixrouter.scoring.anchors.DynamoKv;
import dev.prefixrouter.scoring.anchors.GatewayEstTtft;
import dev.prefixrouter.scoring.anchors.LeastRequest;
import dev.prefixrouter.scoring.anchors.LlmdWeighted;
import dev.prefixrouter.scoring.anchors.PowerOfTwo;
import dev.prefixrouter.scoring.anchors.RoundRobin;
import dev.prefixrouter.scoring.anchors.SglangCacheAware;
import org.junit.jupiter.api.Test;

/** The by-name entry point; each anchor's rule is pinned in its own test in {@code anchors}. */
class PoliciesTest {

  @Test
  void everyNameBuildsAFreshScorerWithThatName() {
    for (String name : Policies.NAMES) {
      assertThat(Policies.byName(name).name()).isEqualTo(name);
      assertThat(Policies.byName(name)).isNotSameAs(Policies.byName(name));
    }
    assertThat(Policies.byName("Round-Robin").name()).isEqualTo("round-robin");
    assertThatThrownBy(() -> Policies.byName("magic"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown policy 'magic'")
        .hasMessageContaining("round-robin");
  }

  @Test
  void namesMapToTheAnchorClasses() {
    assertThat(Policies.byName("est-ttft")).isInstanceOf(EstimatedTtftScorer.class);
    assertThat(Policies.byName("est-ttft-sticky")).isInstanceOf(EstimatedTtftScorer.class);
    assertThat(Policies.byName("round-robin")).isInstanceOf(RoundRobin.class);
    assertThat(Policies.byName("least-request")).isInstanceOf(LeastRequest.class);
    assertThat(Policies.byName("p2c")).isInstanceOf(PowerOfTwo.class);
    assertThat(Policies.byName("consistent-hash")).isInstanceOf(ConsistentHash.class);
    assertThat(Policies.byName("sglang-cache-aware")).isInstanceOf(SglangCacheAware.class);
    assertThat(Policies.byName("dynamo-kv")).isInstanceOf(DynamoKv.class);
    assertThat(Policies.byName("llmd-3-2-2")).isInstanceOf(LlmdWeighted.class);
    assertThat(Policies.byName("gateway-shipped")).isInstanceOf(GatewayEstTtft.class);
    assertThat(Policies.byName("gateway-calibrated")).isInstanceOf(GatewayEstTtft.class);
  }

  @Test
  void p2cIsSeededSoRunsRepeat() {
    FakeContext ctx = new FakeContext(4);
    StringBuilder a = new StringBuilder();
    StringBuilder b = new StringBuilder();
    var first = Policies.byName("p2c");
    var second = Policies.byName("p2c");
    for (int i = 0; i < 20; i++) {
      first.score(ctx);
      a.append(ctx.best());
      second.score(ctx);
      b.append(ctx.best());
    }
    assertThat(a).hasToString(b.toString());
  }
}
