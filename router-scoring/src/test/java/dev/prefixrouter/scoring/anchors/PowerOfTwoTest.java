package dev.prefixrouter.scoring.anchors;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.scoring.FakeContext;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PowerOfTwoTest {

  @Test
  void neverPicksTheWorstOfThreeWhenLoadsDiffer() {
    PowerOfTwo s = new PowerOfTwo(42);
    FakeContext ctx = new FakeContext(3);
    ctx.inFlight[0] = 9;
    ctx.inFlight[1] = 1;
    ctx.inFlight[2] = 5;
    Set<Integer> picks = new HashSet<>();
    for (int i = 0; i < 200; i++) {
      s.score(ctx);
      picks.add(ctx.best());
    }
    assertThat(picks).containsExactlyInAnyOrder(1, 2); // 0 loses every pair it is drawn in
  }

  @Test
  void equalSeedsDrawEqualSequences() {
    PowerOfTwo a = new PowerOfTwo(7);
    PowerOfTwo b = new PowerOfTwo(7);
    FakeContext ctx = new FakeContext(5);
    StringBuilder seqA = new StringBuilder();
    StringBuilder seqB = new StringBuilder();
    for (int i = 0; i < 50; i++) {
      a.score(ctx);
      seqA.append(ctx.best());
      b.score(ctx);
      seqB.append(ctx.best());
    }
    assertThat(seqA).hasToString(seqB.toString());
    assertThat(seqA.chars().distinct().count()).isGreaterThan(1); // ties drawn, not fixed
  }
}
