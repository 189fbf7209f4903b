package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ScoringContextTest {

  private static Candidates candidates(double... costs) {
    Candidates c =
        new Candidates(RouteRequest.builder("t", "m").build(), "m", 0, 16, 0, costs.length);
    for (int i = 0; i < costs.length; i++) {
      c.add(new BackendEntry(i, Backend.of("b" + i, "m")));
    }
    for (int i = 0; i < costs.length; i++) {
      c.setCost(i, costs[i]);
    }
    return c;
  }

  @Test
  void sortsByCostAscending() {
    Candidates c = candidates(3, 1, 2);
    c.sortByCost(0);
    assertThat(c.order()).containsExactly(1, 2, 0);
  }

  @Test
  void rotationBreaksExactTies() {
    for (int rot = 0; rot < 8; rot++) {
      Candidates c = candidates(1, 1, 1, 0.5);
      c.sortByCost(rot);
      assertThat(c.order()[0]).isEqualTo(3);
      int start = Math.floorMod(rot, 4);
      int[] expectTies = new int[3];
      int k = 0;
      for (int j = 0; j < 4; j++) {
        int cand = (start + j) % 4;
        if (cand != 3) {
          expectTies[k++] = cand;
        }
      }
      assertThat(new int[] {c.order()[1], c.order()[2], c.order()[3]}).containsExactly(expectTies);
    }
  }

  @Test
  void rejectsNaNAndOutOfRangeCandidates() {
    Candidates c = candidates(1);
    assertThatThrownBy(() -> c.setCost(0, Double.NaN)).hasMessageContaining("NaN");
    assertThatThrownBy(() -> c.cost(1)).isInstanceOf(IndexOutOfBoundsException.class);
  }
}
