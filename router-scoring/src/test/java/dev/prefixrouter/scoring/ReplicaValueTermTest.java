package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The replica-value term: the credit a non-holder gets when every holder of a hot prefix is busy,
 * and the guards that keep it off idle holders, bursts and lukewarm prefixes.
 */
class ReplicaValueTermTest {
  private static final TtftCoefficients K = TtftCoefficients.DEFAULTS;
  private static final int PREFIX_BLOCKS = 192; // a 3,072-token system prompt
  private static final int PROMPT = 3372; // the prompt plus 300 tokens of question

  /** Only the queue-prefill term and the one under test. */
  private static EstimatedTtftScorer.Builder plain() {
    return EstimatedTtftScorer.builder()
        .calibrate(false)
        .balance(0, 0, 1)
        .futureWait(0, Duration.ZERO)
        .parallelStart(0)
        .releaseParallelSiblings(false)
        .congestionWeight(0)
        .cachePressure(0, 4);
  }

  private static long[] keys() {
    long[] k = new long[PROMPT / 16];
    for (int i = 0; i < k.length; i++) {
      k[i] = 1000 + i;
    }
    return k;
  }

  /** A request of the hot prefix at {@code nowMs}: b0 holds the prefix, b1 and b2 do not. */
  private static FakeContext request(long nowMs) {
    FakeContext ctx = new FakeContext(3);
    ctx.promptTokens = PROMPT;
    ctx.keys = keys();
    ctx.now = nowMs * 1_000_000L;
    ctx.matchedBlocks[0] = PREFIX_BLOCKS;
    return ctx;
  }

  /** {@code count} requests reusing the prefix on b0, every {@code everyMs} from 0. */
  private static void history(EstimatedTtftScorer s, int count, long everyMs) {
    for (int k = 0; k < count; k++) {
      s.onRouted(request(k * everyMs), 0);
    }
  }

  /** The decision: b0 (the holder) has {@code holderPending} tokens queued, b2 500, b1 none. */
  /**
   * {@code count} routed requests {@code everyMs} apart, then a decision scored at {@code nowMs}.
   */
  private static FakeContext scoredAfter(
      EstimatedTtftScorer s, int count, long everyMs, long nowMs, long holderPending) {
    history(s, count, everyMs);
    FakeContext ctx = decision(nowMs, holderPending);
    s.score(ctx);
    return ctx;
  }

  private static FakeContext decision(long nowMs, long holderPending) {
    FakeContext ctx = request(nowMs);
    ctx.pending[0] = holderPending;
    ctx.pending[2] = 500;
    return ctx;
  }

  /**
   * The prefix's rate at {@code nowMs} after {@link #history}: the sampled requests' decayed count
   * / 10 s.
   */
  private static double rate(int count, long everyMs, long nowMs) {
    double sum = 0;
    for (int k = 0; k < count; k++) {
      if (ReplicaValueTerm.sampled(k * everyMs * 1_000_000L)) { // one in four, weight four
        sum += ReplicaValueTerm.SAMPLE_EVERY * Math.exp(-(nowMs - k * everyMs) / 10_000.0);
      }
    }
    return sum / 10;
  }

  @Test
  void anIdleNonHolderIsCreditedWhenTheHotPrefixsOnlyHolderIsBusy() {
    EstimatedTtftScorer s = plain().replicaValue(10, 0.05).build();
    EstimatedTtftScorer off = plain().replicaValue(0, 0.05).build();
    assertThat(EstimatedTtftScorer.builder().build().termNames()).contains("replica-value");
    assertThat(off.termNames()).doesNotContain("replica-value");
    // 20 requests a second for ten seconds
    FakeContext on = scoredAfter(s, 200, 50, 10_000, 300);
    FakeContext without = scoredAfter(off, 200, 50, 10_000, 300);

    double r = 0.5 * K.prefillMs(300, 3072);
    // at most the copy's own prefill: priced as if it held the prompt, never below its queue
    double credit = Math.min(10 * rate(200, 50, 10_000) * r, K.prefillMs(PROMPT, 0));
    assertThat(on.cost(1)).isCloseTo(without.cost(1) - credit, within(1e-6));
    assertThat(on.cost(1)).isGreaterThanOrEqualTo(0);
    assertThat(on.reason).isEqualTo("est-ttft, replica of a busy hot prefix");
    assertThat(on.cost(0)).as("the holder").isEqualTo(without.cost(0));
    assertThat(on.cost(2)).as("a busy non-holder").isEqualTo(without.cost(2));
    assertThat(without.best()).as("for this request alone the wait is cheaper").isEqualTo(0);
    assertThat(on.best()).as("a second holder for the prefix's next requests").isEqualTo(1);
  }

  @Test
  void nothingIsCreditedWhileAHolderIsIdle() {
    EstimatedTtftScorer s = plain().replicaValue(10, 0.05).build();
    EstimatedTtftScorer off = plain().replicaValue(0, 0.05).build();
    FakeContext on = scoredAfter(s, 200, 50, 10_000, 0);
    FakeContext without = scoredAfter(off, 200, 50, 10_000, 0);
    for (int i = 0; i < 3; i++) {
      assertThat(on.cost(i)).isEqualTo(without.cost(i));
    }
    assertThat(on.best()).isEqualTo(0);
  }

  @Test
  void aBurstOfIdenticalRequestsWaitsForItsFirstPrefill() {
    // 16 copies within 45 ms (an RL rollout): the prefix was first reused 45 ms ago (no load
    // guard here, so only the age decides)
    EstimatedTtftScorer s = plain().replicaValue(100, 0).build();
    FakeContext ctx = scoredAfter(s, 15, 3, 45, 3000);
    assertThat(ctx.best()).isEqualTo(0);
    // the same burst a second later: credited
    EstimatedTtftScorer later = plain().replicaValue(100, 0).build();
    FakeContext after = scoredAfter(later, 15, 3, 1045, 3000);
    assertThat(after.best()).isEqualTo(1);
  }

  @Test
  void aLukewarmPrefixBelowTheLoadShareIsNotSpread() {
    // one request every 5 s: about 0.2 per second, under 1 % of a holder's time
    EstimatedTtftScorer gated = plain().replicaValue(1000, 0.05).build();
    EstimatedTtftScorer ungated = plain().replicaValue(1000, 0).build();
    FakeContext a = scoredAfter(gated, 12, 5000, 60_000, 300);
    FakeContext b = scoredAfter(ungated, 12, 5000, 60_000, 300);
    assertThat(a.best()).isEqualTo(0);
    assertThat(b.best()).as("the same prefix without the load guard").isEqualTo(1);
  }

  @Test
  void aSmallSharedPrefixBeforeALongPromptOfItsOwnIsNotCopied() {
    // a 2,048-token system prompt before 7,952 tokens of the request's own: the prefix is a fifth
    // of the prompt, so a copy of it saves little of the request's time wherever it runs
    EstimatedTtftScorer s = plain().replicaValue(10, 0.05).build();
    java.util.function.LongFunction<FakeContext> longPrompt =
        nowMs -> {
          FakeContext ctx = new FakeContext(3);
          ctx.promptTokens = 10_000;
          ctx.keys = new long[625];
          for (int i = 0; i < ctx.keys.length; i++) {
            ctx.keys[i] = 5000 + i;
          }
          ctx.now = nowMs * 1_000_000L;
          ctx.matchedBlocks[0] = 128;
          return ctx;
        };
    for (int k = 0; k < 200; k++) {
      s.onRouted(longPrompt.apply(k * 50L), 0);
    }
    FakeContext ctx = longPrompt.apply(10_000);
    ctx.pending[0] = 300;
    ctx.pending[2] = 500;
    s.score(ctx);
    assertThat(ctx.best()).isEqualTo(0);
  }

  @Test
  void aSaturatedNonHolderIsNotCredited() {
    EstimatedTtftScorer s = plain().replicaValue(10, 0.05).build();
    history(s, 200, 50);
    FakeContext ctx = decision(10_000, 300);
    ctx.loads[1] = dev.prefixrouter.api.LoadReport.of(0, 0, 0.99); // idle, but its KV is full
    ctx.loadAge[1] = 0;
    s.score(ctx);
    assertThat(ctx.costs[1]).isGreaterThan(ctx.costs[0]);
    assertThat(ctx.best()).isEqualTo(0);
  }

  @Test
  void aCopyStillPrefillingPacesTheNextOne() {
    // four backends: b0 holds the hot prefix; a copy goes to b1 and, while it prefills, b1 holds
    // the prefix too (predicted) and is busy: the next arrival finds every holder busy again
    EstimatedTtftScorer s = plain().replicaValue(10, 0.05).build();
    for (int k = 0; k < 200; k++) {
      FakeContext h = fourBackends(k * 50L);
      s.onRouted(h, 0);
    }
    FakeContext first = fourBackends(10_000);
    first.pending[0] = 300;
    s.score(first);
    assertThat(first.best()).isIn(1, 2, 3);
    int copy = first.best();
    s.onRouted(first, copy);
    FakeContext next = fourBackends(10_010);
    next.pending[0] = 300;
    next.matchedBlocks[copy] = PREFIX_BLOCKS;
    next.pending[copy] = 3372;
    s.score(next);
    assertThat(next.best()).as("no second copy while the first prefills").isIn(0, copy);
    FakeContext later = fourBackends(11_100); // a second on, both holders busy again
    later.pending[0] = 300;
    later.matchedBlocks[copy] = PREFIX_BLOCKS;
    later.pending[copy] = 300;
    s.score(later);
    assertThat(later.best()).isNotIn(0, copy);
  }

  private static FakeContext fourBackends(long nowMs) {
    FakeContext ctx = new FakeContext(4);
    ctx.promptTokens = PROMPT;
    ctx.keys = keys();
    ctx.now = nowMs * 1_000_000L;
    ctx.matchedBlocks[0] = PREFIX_BLOCKS;
    return ctx;
  }

  @Test
  void aPrefixThatWentColdMustAgeAgainBeforeItsNextBurstIsCopied() {
    EstimatedTtftScorer s = plain().replicaValue(100, 0).build();
    history(s, 15, 3); // a burst at 0 ms
    for (int k = 0; k < 15; k++) { // the same prefix's next burst, 90 s later
      s.onRouted(request(90_000 + 3L * k), 0);
    }
    FakeContext ctx = decision(90_045, 3000);
    s.score(ctx);
    assertThat(ctx.best()).as("45 ms into the new burst").isEqualTo(0);
  }

  @Test
  void invalidSettingsAreRejected() {
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().replicaValue(-1, 0.05))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("horizonSeconds");
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().replicaValue(10, 1.5))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("minLoad");
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().replicaValue(Double.NaN, 0.05))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
