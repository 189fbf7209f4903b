package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class RouteSharesTest {

  /** A half-life so long that decay is below 1e-9 per decision: counts are plain counts. */
  private static RouteShares undecayed() {
    return new RouteShares(Integer.MAX_VALUE);
  }

  @Test
  void hotnessIsTheGroupsShareOverOneBackendsFairShare() {
    RouteShares shares = undecayed();
    for (int i = 0; i < 30; i++) {
      shares.record(0, 7);
    }
    for (int i = 0; i < 70; i++) {
      shares.record(1, 9);
    }
    assertThat(shares.hotness(7, 2)).isCloseTo(0.6, within(1e-4));
    assertThat(shares.hotness(9, 2)).isCloseTo(1.4, within(1e-4));
    assertThat(shares.hotness(8, 2)).as("never recorded").isZero();
    assertThat(shares.hotness(0, 2)).as("no group").isEqualTo(1.0);
  }

  @Test
  void sharesAndHotnessReadsTheGroupOnlyWhenACandidateIsAboveTheBound() {
    RouteShares shares = undecayed();
    for (int i = 0; i < 120; i++) {
      shares.record(0, 7);
    }
    for (int i = 0; i < 280; i++) {
      shares.record(1, 9);
    }
    int[] slots = {0, 1};
    double[] weights = {1, 1};
    double[] out = new double[2];
    // shares 0.6 and 1.4 of fair: above 1.03 the group's hotness is the one hotness() reports
    double hot = shares.sharesAndHotness(2, slots, weights, 7, 1.03, out);
    assertThat(out[0]).isCloseTo(0.6, within(1e-4));
    assertThat(out[1]).isCloseTo(1.4, within(1e-4));
    assertThat(hot).isCloseTo(shares.hotness(7, 2), within(1e-12)).isCloseTo(0.6, within(1e-4));
    // no candidate above 1.5: the same shares, and 0 instead of the hotness
    hot = shares.sharesAndHotness(2, slots, weights, 7, 1.5, out);
    assertThat(out[1]).isCloseTo(1.4, within(1e-4));
    assertThat(hot).isZero();
    // too little evidence (fewer than 100 decisions per candidate): NaN whatever the bound
    assertThat(undecayed().sharesAndHotness(2, slots, weights, 7, 1.03, out)).isNaN();
  }

  @Test
  void hotnessDecaysWithTheHalfLife() {
    RouteShares shares = new RouteShares(100);
    for (int i = 0; i < 100; i++) {
      shares.record(0, 7);
    }
    double before = shares.groupDecisions(7);
    for (int i = 0; i < 100; i++) {
      shares.record(1, 9); // one half-life of other decisions
    }
    assertThat(shares.groupDecisions(7)).isCloseTo(before / 2, within(1e-9));
    assertThat(shares.slotDecisions(0)).isCloseTo(before / 2, within(1e-9));
  }

  @Test
  void aLateWriterDoesNotMoveACountBackInTime() {
    RouteShares shares = new RouteShares(100);
    long early = shares.draw();
    long late = shares.draw();
    shares.record(0, 7, late); // the thread that drew later wins the race to the CAS
    shares.record(0, 7, early);
    // both decisions are counted as of the latest one: no decay has happened since
    assertThat(shares.slotDecisions(0)).isCloseTo(2.0, within(1e-12));
    assertThat(shares.groupDecisions(7)).isCloseTo(2.0, within(1e-12));
    shares.record(0, 7);
    assertThat(shares.slotDecisions(0)).isCloseTo(2.0 * Math.pow(0.5, 0.01) + 1, within(1e-12));
  }

  @Test
  void aRemovedSlotsDecisionsStopCounting() {
    RouteShares shares = undecayed();
    for (int i = 0; i < 50; i++) {
      shares.record(0, 7);
      shares.record(1, 9);
    }
    assertThat(shares.hotness(7, 2)).isCloseTo(1.0, within(1e-4));
    shares.forget(1);
    assertThat(shares.hotness(7, 2)).isCloseTo(2.0, within(1e-4));
  }

  @Test
  void groupsAreBoundedAndAColdGroupNeverDisplacesAHotOne() {
    RouteShares shares = undecayed();
    long hot = 12345;
    for (int i = 0; i < 50; i++) {
      shares.record(0, hot);
    }
    List<Long> sameSet = new ArrayList<>();
    for (long p = 1; sameSet.size() < 100; p++) {
      if (p != hot && RouteShares.setOf(p) == RouteShares.setOf(hot)) {
        sameSet.add(p);
      }
    }
    for (long p : sameSet) {
      shares.record(1, p); // each takes the set's other entry, never the hot one's
    }
    assertThat(shares.groupDecisions(hot)).isCloseTo(50, within(1e-4));
    assertThat(shares.groupDecisions(sameSet.get(99))).isCloseTo(1, within(1e-4));
    assertThat(shares.groupDecisions(sameSet.get(0))).as("evicted by a later cold group").isZero();
    for (long p = 1_000_000; p < 1_200_000; p++) {
      shares.record(2, p);
    }
    assertThat(shares.groupCount()).isLessThanOrEqualTo(RouteShares.GROUP_ENTRIES);
  }

  @Test
  @Timeout(30)
  void concurrentDecisionsAreNeverLost() throws InterruptedException {
    RouteShares shares = undecayed();
    int perThread = 10_000;
    runAtOnce(
        2,
        slot -> {
          for (int i = 0; i < perThread; i++) {
            shares.record(slot, 42); // same group, same set: CAS races on every decision
            shares.record(0, 43 + (i & 1));
          }
        });
    // decay over these 40k decisions is < 0.3 in total, so a single lost increment would show
    assertThat(shares.groupDecisions(42)).isGreaterThan(2 * perThread - 0.5);
    assertThat(shares.groupDecisions(43) + shares.groupDecisions(44))
        .isGreaterThan(2 * perThread - 0.5);
    assertThat(shares.slotDecisions(0) + shares.slotDecisions(1))
        .isGreaterThan(4 * perThread - 0.5);
  }

  @Test
  @Timeout(30)
  void countsStayExactWhileTheSlotTableGrows() throws InterruptedException {
    RouteShares shares = new RouteShares(100);
    int perThread = 20_000;
    runAtOnce(
        3,
        me -> {
          for (int i = 0; i < perThread; i++) {
            if (me < 2) {
              shares.record(0, 42, 1); // one decision number: no decay, exact counts
            } else if (i % 100 == 0) {
              shares.record(64 + i / 100, 0, 1); // grows the table under the writers
            }
          }
        });
    assertThat(shares.slotDecisions(0)).isEqualTo(2.0 * perThread);
    assertThat(shares.groupDecisions(42)).isEqualTo(2.0 * perThread);
    assertThat(shares.slotDecisions(64 + 199)).isEqualTo(1.0);
  }

  @Test
  void oneThreadReadsExactlyTheCountsOfOneSharedTable() {
    // the reference: one (value, sequence) pair per slot and group, decayed as the class does it
    RouteShares shares = new RouteShares(50);
    double decay = Math.pow(0.5, 1.0 / 50);
    double[] value = new double[5];
    long[] last = new long[5];
    java.util.SplittableRandom rnd = new java.util.SplittableRandom(3);
    for (long now = 1; now <= 3000; now++) {
      int slot = rnd.nextInt(5);
      shares.record(slot, 1 + rnd.nextInt(3));
      value[slot] = value[slot] * Math.pow(decay, now - last[slot]) + 1;
      last[slot] = now;
      if (now % 97 == 0) {
        for (int s = 0; s < 5; s++) {
          double expected = value[s] * (s == slot ? 1 : Math.pow(decay, now - last[s]));
          assertThat(shares.slotDecisions(s)).as("slot %d at %d", s, now).isEqualTo(expected);
        }
      }
    }
    assertThat(shares.stripeCount()).as("one thread never contends").isEqualTo(1);
  }

  @Test
  @Timeout(30)
  void threadsThatRecordAtOnceGetStripesAndLoseNothing() throws InterruptedException {
    RouteShares shares = undecayed();
    int perThread = 20_000;
    runAtOnce(
        2,
        slot -> {
          for (int i = 0; i < perThread; i++) {
            shares.record(slot, 42);
          }
        });
    assertThat(shares.stripeCount()).isBetween(1, RouteShares.MAX_STRIPES);
    // decay over these 40k decisions is < 0.3 in total: a lost decision would show
    assertThat(shares.slotDecisions(0)).isBetween(perThread - 0.5, (double) perThread);
    assertThat(shares.slotDecisions(1)).isBetween(perThread - 0.5, (double) perThread);
    assertThat(shares.groupDecisions(42)).isBetween(2 * perThread - 0.5, 2.0 * perThread);
    assertThat(shares.hotness(42, 2)).isCloseTo(2.0, within(1e-4));
  }

  @Test
  @Timeout(30)
  void threadsThatRecordInTurnMoveToStripesOfTheirOwn() throws InterruptedException {
    org.junit.jupiter.api.Assumptions.assumeTrue(RouteShares.MAX_STRIPES > 1, "one processor");
    RouteShares shares = new RouteShares(100);
    java.util.concurrent.Semaphore[] turn = {
      new java.util.concurrent.Semaphore(1), new java.util.concurrent.Semaphore(0)
    };
    int rounds = 1000;
    Thread[] threads = new Thread[2];
    for (int t = 0; t < 2; t++) {
      int me = t;
      threads[t] =
          new Thread(
              () -> {
                for (int i = 0; i < rounds; i++) {
                  turn[me].acquireUninterruptibly();
                  shares.record(me, 42 + me);
                  turn[1 - me].release();
                }
              });
      threads[t].start();
    }
    for (Thread t : threads) {
      t.join();
    }
    assertThat(shares.stripeCount()).isGreaterThan(1);
    // each thread's last decision is one of the two latest: strictly alternating counts, each
    // decayed by two decisions per round, whatever stripe holds them
    double perRound = Math.pow(0.5, 2.0 / 100);
    double latest = (1 - Math.pow(perRound, rounds)) / (1 - perRound);
    assertThat(shares.slotDecisions(1)).isCloseTo(latest, within(1e-6));
    assertThat(shares.slotDecisions(0)).isCloseTo(latest * Math.pow(0.5, 1.0 / 100), within(1e-6));
    assertThat(shares.hotness(43, 2))
        .isCloseTo(2 * latest / (latest * (1 + Math.pow(0.5, 1.0 / 100))), within(1e-6));
  }

  /** Runs {@code body(i)} on {@code n} threads released together, and waits for all of them. */
  private static void runAtOnce(int n, java.util.function.IntConsumer body)
      throws InterruptedException {
    CountDownLatch start = new CountDownLatch(1);
    Thread[] threads = new Thread[n];
    for (int t = 0; t < n; t++) {
      int index = t;
      threads[t] =
          new Thread(
              () -> {
                try {
                  start.await();
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                  return;
                }
                body.accept(index);
              });
      threads[t].start();
    }
    start.countDown();
    for (Thread t : threads) {
      t.join();
    }
  }
}
