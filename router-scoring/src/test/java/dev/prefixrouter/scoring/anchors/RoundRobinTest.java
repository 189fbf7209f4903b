package dev.prefixrouter.scoring.anchors;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.scoring.FakeContext;
import org.junit.jupiter.api.Test;

class RoundRobinTest {

  @Test
  void cyclesThroughTheCandidatesIgnoringLoad() {
    RoundRobin s = new RoundRobin();
    FakeContext ctx = new FakeContext(3);
    ctx.inFlight[0] = 50;
    StringBuilder seq = new StringBuilder();
    for (int i = 0; i < 6; i++) {
      s.score(ctx);
      seq.append(ctx.best());
    }
    assertThat(seq).hasToString("012012");
    assertThat(ctx.reason).isEqualTo("round-robin");
  }
}
