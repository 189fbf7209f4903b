package dev.prefixrouter.scoring.anchors;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.scoring.FakeContext;
import org.junit.jupiter.api.Test;

class ConsistentHashTest {

  @Test
  void usesTheFirstBlockKeyUnsignedModuloCandidates() {
    ConsistentHash s = new ConsistentHash();
    FakeContext ctx = new FakeContext(3);
    ctx.keys = new long[] {7, 123};
    s.score(ctx);
    assertThat(ctx.best()).isEqualTo(1); // 7 mod 3
    ctx.keys = new long[] {-1L}; // unsigned 2^64-1 mod 3 = 0
    s.score(ctx);
    assertThat(ctx.best()).isEqualTo(0);
    ctx.keys = new long[0]; // no full block: h0 = 0
    ctx.inFlight[0] = 99;
    s.score(ctx);
    assertThat(ctx.best()).isEqualTo(0);
  }
}
