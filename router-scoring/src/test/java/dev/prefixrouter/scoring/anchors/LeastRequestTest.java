package dev.prefixrouter.scoring.anchors;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.scoring.FakeContext;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class LeastRequestTest {

  @Test
  void takesFewestInFlightAndRotatesTies() {
    LeastRequest s = new LeastRequest();
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
}
