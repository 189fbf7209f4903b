package dev.prefixrouter.bench.sim;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * {@link SimBackend}'s fidelity to vLLM v1's scheduler and block pool: prefix blocks cached as they
 * are scheduled, KV events once per block entering or leaving the cache, preemption and recompute,
 * admission that evicts nothing it cannot use, a decode leg on an idle backend.
 */
class SimBackendTest {

  /** Counts what the backend tells. */
  private static final class Heard implements SimBackend.Listener {
    final Map<Integer, Integer> finished = new HashMap<>();
    final Map<Integer, SimBackend.Seq> seqs = new HashMap<>();
    final Map<Long, Integer> stored = new HashMap<>();
    final Map<Long, Integer> removed = new HashMap<>();

    @Override
    public void onFirstToken(SimBackend.Seq seq, long now) {}

    @Override
    public void onFinished(SimBackend.Seq seq, long now) {
      finished.merge(seq.request.id(), 1, Integer::sum);
      seqs.put(seq.request.id(), seq);
    }

    @Override
    public void onStored(SimBackend backend, long[] keys, int from, int to, int[] tokens) {
      for (int i = from; i < to; i++) {
        stored.merge(keys[i], 1, Integer::sum);
      }
    }

    @Override
    public void onRemoved(SimBackend backend, long key) {
      removed.merge(key, 1, Integer::sum);
    }
  }

  private static SimBackend.Seq seq(int id, int[] tokens, int output) {
    SimRequest r = new SimRequest(id, 0, "t", null, tokens, output);
    long[] keys = BlockHasher.keysOf(FleetSimulator.HASHER, Prompt.ofTokens(tokens), 0);
    return new SimBackend.Seq(r, null, keys, 0);
  }

  /** Runs steps back to back until the backend is idle (or {@code maxSteps}); returns the time. */
  private static long drive(SimBackend b, long now, int maxSteps) {
    for (int i = 0; i < maxSteps; i++) {
      long d = b.planStep();
      if (d < 0) {
        break;
      }
      now += d;
      b.finishStep(now, d);
    }
    return now;
  }

  // 1. prefix blocks are cached as they are scheduled

  @Test
  void twoRequestsSharingAPrefixAdmittedInOneStepTheSecondHitsTheFirstsScheduledBlocks() {
    Heard heard = new Heard();
    SimBackend b = new SimBackend("b", BackendProfile.h100(1_000), heard);
    int[] prefix = Workloads.segment(1, 64);
    SimBackend.Seq first = seq(1, Workloads.concat(prefix, Workloads.segment(2, 20)), 4);
    SimBackend.Seq second = seq(2, Workloads.concat(prefix, Workloads.segment(3, 20)), 4);
    b.enqueue(first);
    b.enqueue(second);
    assertThat(b.planStep()).isPositive();
    assertThat(b.running).containsExactly(first, second); // admitted in the same step
    drive(b, 0, 100);
    assertThat(heard.finished).containsEntry(1, 1).containsEntry(2, 1);
    assertThat(first.hitBlocks).isZero();
    assertThat(second.hitBlocks).isEqualTo(4);
    assertThat(b.prefillTokens).isEqualTo(84 + 20);
  }

  @Test
  void aFollowerHitsTheBlocksALongPrefillHasScheduledSoFar() {
    Heard heard = new Heard();
    SimBackend b = new SimBackend("b", BackendProfile.h100(10_000), heard);
    int[] leaderPrompt = Workloads.segment(11, 20_000);
    SimBackend.Seq leader = seq(1, leaderPrompt, 2);
    b.enqueue(leader);
    long now = drive(b, 0, 1); // the first 8,192 tokens
    assertThat(leader.prefilled).isEqualTo(8_192);
    int[] shared = java.util.Arrays.copyOf(leaderPrompt, 12_000);
    SimBackend.Seq follower = seq(2, Workloads.concat(shared, Workloads.segment(12, 1_000)), 2);
    b.enqueue(follower);
    drive(b, now, 100);
    assertThat(heard.finished).containsEntry(1, 1).containsEntry(2, 1);
    // the leader's second chunk (to 16,384 tokens) was scheduled before the follower was admitted
    assertThat(follower.hitBlocks).isEqualTo(12_000 / 16);
    assertThat(b.kvUsage()).isZero();
  }

  // 2. one BlockStored per block entering the cache, one BlockRemoved per block leaving it

  @Test
  void kvEventsStoreEachBlockOnceAndRemoveItOnce() {
    Heard heard = new Heard();
    SimBackend b = new SimBackend("b", BackendProfile.h100(20), heard);
    int[] doc = Workloads.segment(21, 64); // 4 full blocks
    SimBackend.Seq x = seq(1, Workloads.concat(doc, Workloads.segment(22, 8)), 1);
    SimBackend.Seq y = seq(2, Workloads.concat(doc, Workloads.segment(23, 8)), 1);
    b.enqueue(x);
    b.enqueue(y); // same step: computed by both
    long now = drive(b, 0, 10);
    SimBackend.Seq whole = seq(3, Workloads.segment(24, 64), 1); // exactly 4 full blocks
    b.enqueue(whole);
    now = drive(b, now, 10);
    SimBackend.Seq again = seq(4, Workloads.segment(24, 64), 1); // hit capped at 3: last recomputed
    b.enqueue(again);
    now = drive(b, now, 10);
    assertThat(again.hitBlocks).isEqualTo(3);
    SimBackend.Seq flush = seq(5, Workloads.segment(25, 16 * 19), 1); // evicts everything else
    b.enqueue(flush);
    drive(b, now, 10);
    assertThat(heard.finished).hasSize(5);
    Set<Long> keys = new HashSet<>();
    for (SimBackend.Seq s : new SimBackend.Seq[] {x, y, whole, again}) {
      for (long k : s.keys) {
        keys.add(k);
      }
    }
    for (long k : keys) {
      assertThat(heard.stored.get(k)).as("stores of %d", k).isEqualTo(1);
      assertThat(heard.removed.get(k)).as("removals of %d", k).isEqualTo(1);
    }
  }

  // 3. a preemption victim is never a request that finished in the same step

  @Test
  void aRequestFinishingInTheStepThatPreemptsIsNotTheVictimAndFinishesOnce() {
    Heard heard = new Heard();
    SimBackend b = new SimBackend("b", BackendProfile.h100(6), heard);
    SimBackend.Seq a = seq(1, Workloads.segment(31, 32), 16);
    SimBackend.Seq c = seq(2, Workloads.segment(32, 32), 40);
    b.enqueue(a);
    b.enqueue(c);
    drive(b, 0, 500);
    assertThat(heard.finished).containsOnly(Map.entry(1, 1), Map.entry(2, 1));
    assertThat(a.generated).isEqualTo(16);
    assertThat(c.generated).isEqualTo(40);
    assertThat(b.hasWork()).isFalse();
    assertThat(b.kvUsage()).isZero();
  }

  @Test
  void preemptionUnderDecodeGrowthRecomputesAndEveryRequestFinishesOnce() {
    Heard heard = new Heard();
    SimBackend b = new SimBackend("b", BackendProfile.h100(12), heard);
    int[] shared = Workloads.segment(40, 32);
    SimBackend.Seq[] all = new SimBackend.Seq[4];
    for (int i = 0; i < all.length; i++) {
      all[i] = seq(i, Workloads.concat(shared, Workloads.segment(41 + i, 8)), 60 + 10 * i);
      b.enqueue(all[i]);
    }
    drive(b, 0, 5_000);
    assertThat(b.preemptions).isPositive();
    assertThat(b.hasWork()).isFalse();
    for (SimBackend.Seq s : all) {
      assertThat(heard.finished).containsEntry(s.request.id(), 1);
      assertThat(s.generated).isEqualTo(s.request.outputTokens());
    }
    assertThat(b.kvUsage()).isZero();
  }

  // 4. the reported hit is the first admission's; a recompute prefills the prompt and its output

  @Test
  void aPreemptedRequestReportsItsFirstHitAndRecomputesItsGeneratedTokens() {
    Heard heard = new Heard();
    SimBackend b = new SimBackend("b", BackendProfile.h100(6), heard);
    SimBackend.Seq a = seq(1, Workloads.segment(51, 32), 20);
    SimBackend.Seq v = seq(2, Workloads.segment(52, 40), 60);
    b.enqueue(a);
    b.enqueue(v);
    drive(b, 0, 1_000);
    assertThat(b.preemptions).isEqualTo(1);
    assertThat(heard.finished).containsOnly(Map.entry(1, 1), Map.entry(2, 1));
    assertThat(v.generated).isEqualTo(60);
    // v was admitted with nothing cached; re-admitted it hits its own 2 blocks
    assertThat(v.hitBlocks).isZero();
    // preempted at 16 generated tokens: 40 + 16 tokens again, 32 of them cached
    assertThat(b.prefillTokens).isEqualTo(32 + 40 + (40 + 16 - 32));
  }

  // 5. a failed admission evicts nothing

  @Test
  void anAdmissionThatCannotFitEvictsNothing() {
    Heard heard = new Heard();
    SimBackend b = new SimBackend("b", BackendProfile.h100(10), heard);
    SimBackend.Seq z = seq(1, Workloads.segment(61, 64), 1);
    b.enqueue(z);
    long now = drive(b, 0, 10);
    SimBackend.Seq probe = seq(9, Workloads.segment(61, 64), 1);
    assertThat(b.cachedPrefixBlocks(probe)).isEqualTo(3);
    b.enqueue(seq(2, Workloads.segment(62, 48), 100)); // 4 blocks, running
    now = drive(b, now, 1);
    SimBackend.Seq wide = seq(3, Workloads.segment(63, 160), 1); // needs 11 of the 10
    b.enqueue(wide);
    b.planStep();
    assertThat(b.waiting).containsExactly(wide);
    assertThat(b.cachedPrefixBlocks(probe)).isEqualTo(3);
    assertThat(heard.removed).isEmpty();
  }

  // 6. a decode leg decodes on an idle backend

  @Test
  void aTransferredRequestDecodesOnAnIdleBackend() {
    Heard heard = new Heard();
    SimBackend b = new SimBackend("b", BackendProfile.h100(1_000), heard);
    SimBackend.Seq s = seq(1, Workloads.segment(71, 100), 8);
    s.transferred = true;
    s.firstTokenSent = true;
    s.generated = 1;
    b.enqueue(s);
    assertThat(b.planStep()).isPositive();
    b.finishStep(1, 1);
    drive(b, 1, 100);
    assertThat(heard.finished).containsOnly(Map.entry(1, 1));
    assertThat(s.generated).isEqualTo(8);
    assertThat(b.prefillTokens).isZero();
    assertThat(b.decodeTokens).isEqualTo(7);
  }
}
