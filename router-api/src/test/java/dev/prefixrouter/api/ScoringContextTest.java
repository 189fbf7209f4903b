package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.spi.IndexSignal;
import org.junit.jupiter.api.Test;

class ScoringContextTest {

  /** A table of entries on slots {@code slots[i]}, named {@code prefix + slot}. */
  private static BackendEntry[] table(String prefix, String model, int... slots) {
    BackendEntry[] t = new BackendEntry[slots.length];
    for (int i = 0; i < slots.length; i++) {
      t[i] = new BackendEntry(slots[i], Backend.of(prefix + slots[i], model));
    }
    return t;
  }

  private static Candidates candidates(double... costs) {
    BackendEntry[] t = new BackendEntry[costs.length];
    for (int i = 0; i < costs.length; i++) {
      t[i] = new BackendEntry(i, Backend.of("b" + i, "m"));
    }
    Candidates c =
        new Candidates(costs.length)
            .reset(RouteRequest.builder("t", "m").build(), "m", 0, 16, 0, t, null);
    for (int i = 0; i < costs.length; i++) {
      c.add(i);
    }
    for (int i = 0; i < costs.length; i++) {
      c.setCost(i, costs[i]);
    }
    return c;
  }

  @Test
  void aReusedContextStartsEveryDecisionAfresh() {
    Candidates c = candidates(3, 1, 2);
    c.keys(new long[] {7, 8, 9}, 2);
    c.matched[1] = 5;
    c.sortByCost(0);
    c.setReason("first");
    c.clear();
    assertThat(c.size()).isZero();
    assertThat(c.keyCount()).isZero();
    assertThatThrownBy(c::request).isInstanceOf(NullPointerException.class);

    c.reset(
        RouteRequest.builder("u", "m2").build(),
        "m2",
        10,
        16,
        1,
        table("c", "m2", 0, 1, 2, 3, 4),
        null);
    for (int i = 0; i < 5; i++) {
      c.add(i);
    }
    assertThat(c.request().tenant()).isEqualTo("u");
    assertThat(c.size()).isEqualTo(5);
    assertThat(c.reason).isNull();
    for (int i = 0; i < 5; i++) {
      assertThat(c.matchedBlocks(i)).isZero();
      assertThat(c.cost(i)).isZero();
      assertThat(c.order()[i]).isEqualTo(i);
    }
    assertThat(c.orderIsPermutation()).isTrue();
  }

  @Test
  void signalsAskTheDecisionsIndexForTheCandidatesSlotAtTheDecisionsClock() {
    Fakes.NoOpIndex index =
        new Fakes.NoOpIndex() {
          @Override
          public long signal(int slot, IndexSignal signal, long nowNanos) {
            return signal == IndexSignal.LRU_AGE_NANOS
                ? 1_000 * slot + nowNanos
                : IndexSignal.ABSENT;
          }
        };
    Candidates c =
        new Candidates(4)
            .reset(
                RouteRequest.builder("t", "m").build(),
                "m",
                0,
                16,
                7,
                table("b", "m", 3, 1),
                index);
    c.add(0);
    c.add(1);
    assertThat(c.signal(0, IndexSignal.LRU_AGE_NANOS)).isEqualTo(3_007);
    assertThat(c.signal(1, IndexSignal.LRU_AGE_NANOS)).isEqualTo(1_007);
    assertThat(c.signal(1, IndexSignal.HELD_BLOCKS)).isEqualTo(IndexSignal.ABSENT);
    assertThatThrownBy(() -> c.signal(2, IndexSignal.LRU_AGE_NANOS))
        .isInstanceOf(IndexOutOfBoundsException.class);
    c.clear();
    c.reset(RouteRequest.builder("t", "m").build(), "m", 0, 16, 7, table("b", "m", 3), null);
    c.add(0);
    assertThat(c.signal(0, IndexSignal.LRU_AGE_NANOS))
        .as("no index: no information")
        .isEqualTo(IndexSignal.ABSENT);
  }

  @Test
  void keysBeyondTheCountAreOutOfRange() {
    Candidates c = candidates(1);
    c.keys(new long[] {7, 8, 9}, 2);
    assertThat(c.keyCount()).isEqualTo(2);
    assertThat(c.key(1)).isEqualTo(8);
    assertThatThrownBy(() -> c.key(2)).isInstanceOf(IndexOutOfBoundsException.class);
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
  void largeSetsSortLikeTheSmallOnes() {
    java.util.SplittableRandom rnd = new java.util.SplittableRandom(3);
    for (int n : new int[] {33, 100, 257}) {
      double[] costs = new double[n];
      for (int i = 0; i < n; i++) {
        costs[i] = rnd.nextInt(10); // many ties
      }
      Candidates c = candidates(costs);
      int rot = rnd.nextInt(1000);
      c.sortByCost(rot);
      int start = Math.floorMod(rot, n);
      for (int i = 1; i < n; i++) {
        int x = c.order()[i - 1];
        int y = c.order()[i];
        assertThat(costs[x]).isLessThanOrEqualTo(costs[y]);
        if (costs[x] == costs[y]) {
          assertThat(Math.floorMod(x - start, n)).isLessThan(Math.floorMod(y - start, n));
        }
      }
      assertThat(c.orderIsPermutation()).isTrue();
    }
  }

  /** Both ways of checking: bits of one long up to 64 candidates, a cleared array above. */
  @Test
  void anOrderWithARepeatedOrOutOfRangeCandidateIsNoPermutation() {
    for (int n : new int[] {1, 5, 64, 65, 100}) {
      Candidates c = candidates(new double[n]);
      int[] order = c.order();
      for (int i = 0; i < n; i++) {
        order[i] = n - 1 - i;
      }
      assertThat(c.orderIsPermutation()).as("reversed, n=%d", n).isTrue();
      int last = order[n - 1];
      order[n - 1] = order[0]; // the first candidate twice (n = 1: itself, still a permutation)
      assertThat(c.orderIsPermutation()).as("repeated, n=%d", n).isEqualTo(n == 1);
      order[n - 1] = n; // one past the last candidate
      assertThat(c.orderIsPermutation()).as("too large, n=%d", n).isFalse();
      order[n - 1] = -1;
      assertThat(c.orderIsPermutation()).as("negative, n=%d", n).isFalse();
      order[n - 1] = last;
      assertThat(c.orderIsPermutation()).as("restored, n=%d", n).isTrue();
    }
  }

  @Test
  void rejectsNaNAndOutOfRangeCandidates() {
    Candidates c = candidates(1);
    assertThatThrownBy(() -> c.setCost(0, Double.NaN)).hasMessageContaining("NaN");
    assertThatThrownBy(() -> c.cost(1)).isInstanceOf(IndexOutOfBoundsException.class);
  }

  @Test
  void theEnginesSortRanksExactlyAsTheDefaultSort() throws Throwable {
    java.util.SplittableRandom rnd = new java.util.SplittableRandom(5);
    for (int round = 0; round < 2_000; round++) {
      int n = 1 + rnd.nextInt(round % 2 == 0 ? 12 : 90); // insertion and merge sort
      double[] costs = new double[n];
      for (int i = 0; i < n; i++) {
        costs[i] = rnd.nextInt(4) == 0 ? -0.0 : rnd.nextInt(5); // many exact ties
      }
      Candidates c = candidates(costs);
      int rotation = rnd.nextInt() % 1000;
      c.sortByCost(rotation);
      int[] expected = new int[n];
      for (int i = 0; i < n; i++) {
        expected[i] = i;
      }
      dev.prefixrouter.api.spi.ScoringContext plain =
          (dev.prefixrouter.api.spi.ScoringContext)
              java.lang.reflect.Proxy.newProxyInstance(
                  getClass().getClassLoader(),
                  new Class<?>[] {dev.prefixrouter.api.spi.ScoringContext.class},
                  (proxy, m, args) ->
                      switch (m.getName()) {
                        case "size" -> n;
                        case "order" -> expected;
                        case "cost" -> costs[(int) args[0]];
                        case "sortByCost" ->
                            java.lang.reflect.InvocationHandler.invokeDefault(proxy, m, args);
                        default -> throw new UnsupportedOperationException(m.getName());
                      });
      plain.sortByCost(rotation);
      assertThat(java.util.Arrays.copyOf(c.order(), n))
          .as("n=%d rotation=%d costs=%s", n, rotation, java.util.Arrays.toString(costs))
          .containsExactly(expected);
    }
  }
}
