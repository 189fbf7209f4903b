package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The extra-work term: the M/G/1 wait a candidate's prefill beyond the least imposes on the
 * requests that reach that backend after it, the discount for a copy of a hot prefix, and the
 * bounds of its settings.
 */
class ExtraWorkTermTest {
  private static final TtftCoefficients K = TtftCoefficients.DEFAULTS;
  private static final int PREFIX_BLOCKS = 128; // a 2,048-token group prompt
  private static final int PROMPT = 2304; // the group prompt plus a 256-token question

  /** Only the queue-prefill term and the one under test. */
  private static EstimatedTtftScorer.Builder plain() {
    return EstimatedTtftScorer.builder()
        .calibrate(false)
        .balance(0, 0, 1)
        .futureWait(0, Duration.ZERO)
        .parallelStart(0)
        .releaseParallelSiblings(false)
        .replicaValue(0, 0)
        .congestionWeight(0)
        .prefixAffinity(0, 0)
        .cachePressure(0, 4);
  }

  private static long[] keys(long base) {
    long[] k = new long[PROMPT / 16];
    for (int i = 0; i < k.length; i++) {
      k[i] = base + i;
    }
    return k;
  }

  /** A request of the group prompt at {@code nowMs}: b0 holds the group prompt, b1 nothing. */
  private static FakeContext request(long nowMs) {
    FakeContext ctx = new FakeContext(2);
    ctx.promptTokens = PROMPT;
    ctx.keys = keys(1000);
    ctx.now = nowMs * 1_000_000L;
    ctx.matchedBlocks[0] = PREFIX_BLOCKS;
    ctx.pending[1] = 16; // b1 has a prefill queued: it pays (an idle candidate does not)
    return ctx;
  }

  /**
   * b1's history: {@code count} cold requests of other prompts routed to it, {@code everyMs} apart
   * from 0 (each a whole prefill there).
   */
  private static void coldHistory(EstimatedTtftScorer s, int count, long everyMs) {
    for (int k = 0; k < count; k++) {
      FakeContext ctx = new FakeContext(2);
      ctx.promptTokens = PROMPT;
      ctx.keys = keys(1_000_000L * (k + 2));
      ctx.now = k * everyMs * 1_000_000L;
      s.onRouted(ctx, 1);
    }
  }

  /** The decayed count and prefill sum of {@link #coldHistory} at {@code nowMs}, per 2 s. */
  private static double[] load(int count, long everyMs, long nowMs) {
    double n = 0;
    double sum = 0;
    for (int k = 0; k < count; k++) {
      double f = Math.exp(-(nowMs - k * everyMs) / 2000.0);
      n += f;
      sum += f * K.prefillMs(PROMPT, 0);
    }
    return new double[] {n / 2000, Math.min(0.9, sum / 2000)};
  }

  @Test
  void aCopyOntoABusyBackendPaysTheWaitItsExtraPrefillImposesThere() {
    EstimatedTtftScorer on = plain().extraWork(2, 0).build();
    EstimatedTtftScorer off = plain().extraWork(0, 0).build();
    assertThat(EstimatedTtftScorer.builder().build().termNames()).contains("extra-work");
    assertThat(off.termNames()).doesNotContain("extra-work");
    // b1 took 80 cold prompts 12 ms apart (83 a second, each 45 ms of prefill: rho capped)
    coldHistory(on, 80, 12);
    coldHistory(off, 80, 12);
    FakeContext a = request(1000);
    FakeContext b = request(1000);
    on.score(a);
    off.score(b);

    double[] lr = load(80, 12, 1000);
    double ds = K.prefillMs(PROMPT, 0) - K.prefillMs(PROMPT - 2048, 2048);
    double price = 2 * lr[0] * ds * ds / (2 * (1 - lr[1]));
    assertThat(lr[1]).isEqualTo(0.9); // capped
    assertThat(a.cost(1)).isCloseTo(b.cost(1) + price, within(1e-6));
    assertThat(a.cost(0)).as("the least prefill pays nothing").isEqualTo(b.cost(0));
  }

  @Test
  void inOverloadTheRequestStaysOnItsHolderInsteadOfReprefillingElsewhere() {
    EstimatedTtftScorer on = plain().extraWork(2, 0).build();
    EstimatedTtftScorer off = plain().extraWork(0, 0).build();
    coldHistory(on, 80, 12);
    coldHistory(off, 80, 12);
    // the holder's queue is longer than the copy's extra prefill: for this request alone moving
    // is faster, for the requests that reach b1 after it not
    long pending = (long) (3 * K.prefillMs(PROMPT, 0) / K.betaMsPerToken());
    FakeContext a = request(1000);
    FakeContext b = request(1000);
    a.pending[0] = pending;
    b.pending[0] = pending;
    on.score(a);
    off.score(b);
    assertThat(b.best()).isEqualTo(1);
    assertThat(a.best()).isEqualTo(0);
  }

  @Test
  void aBackendNoRequestWasRoutedToAndEqualPrefillsPayNothing() {
    EstimatedTtftScorer on = plain().extraWork(2, 0).build();
    EstimatedTtftScorer off = plain().extraWork(0, 0).build();
    FakeContext a = request(1000);
    FakeContext b = request(1000);
    on.score(a);
    off.score(b);
    assertThat(a.cost(1)).as("no load recorded on b1").isEqualTo(b.cost(1));

    coldHistory(on, 80, 12);
    FakeContext both = request(1000);
    both.matchedBlocks[1] = PREFIX_BLOCKS; // both hold the prompt: no extra work anywhere
    FakeContext plainBoth = request(1000);
    plainBoth.matchedBlocks[1] = PREFIX_BLOCKS;
    on.score(both);
    off.score(plainBoth);
    assertThat(both.cost(1)).isEqualTo(plainBoth.cost(1));
  }

  @Test
  void aCopyOfAHotPrefixPaysLessByItsRate() {
    EstimatedTtftScorer hot = plain().extraWork(2, 1).build();
    EstimatedTtftScorer full = plain().extraWork(2, 0).build();
    coldHistory(hot, 80, 12);
    coldHistory(full, 80, 12);
    // the group prompt was reused on b0 by 50 requests, 20 ms apart, up to t = 980 ms
    for (int k = 0; k < 50; k++) {
      FakeContext r = request(k * 20L);
      hot.onRouted(r, 0);
      full.onRouted(r, 0);
    }
    FakeContext a = request(1000);
    FakeContext b = request(1000);
    FakeContext none = request(1000);
    hot.score(a);
    full.score(b);
    plain().extraWork(0, 0).build().score(none);

    double rate = 0;
    for (int k = 0; k < 50; k++) {
      rate += Math.exp(-(1000 - k * 20.0) / 10_000);
    }
    rate /= 10; // per second, 10 s time constant
    double price = b.cost(1) - none.cost(1);
    assertThat(price).isGreaterThan(0);
    assertThat(a.cost(1) - none.cost(1)).isCloseTo(price / (1 + rate), within(1e-6));
  }

  @Test
  void anIdleCandidatePaysNothingUnlessEveryCandidateIsPriced() {
    EstimatedTtftScorer on =
        plain().extraWork(2, 0).extraWorkIdleShare(Double.POSITIVE_INFINITY).build();
    EstimatedTtftScorer all =
        plain()
            .extraWork(2, 0)
            .extraWorkIdleShare(0)
            .extraWorkIdleWeight(1)
            .extraWorkIdleMinUtilisation(0)
            .build();
    EstimatedTtftScorer off = plain().extraWork(0, 0).build();
    coldHistory(on, 80, 12);
    coldHistory(all, 80, 12);
    FakeContext a = request(1000);
    FakeContext b = request(1000);
    FakeContext c = request(1000);
    a.pending[1] = 0;
    b.pending[1] = 0;
    c.pending[1] = 0;
    on.score(a);
    all.score(b);
    off.score(c);
    assertThat(a.cost(1)).as("idle: the copy starts at once").isEqualTo(c.cost(1));
    assertThat(b.cost(1)).isGreaterThan(c.cost(1) + 100);
  }

  @Test
  void anIdleCandidatePaysOnceEnoughOfTheOthersAreBusy() {
    EstimatedTtftScorer half = plain().extraWork(2, 0).extraWorkIdleShare(0.5).build();
    EstimatedTtftScorer off = plain().extraWork(0, 0).build();
    coldHistory(half, 80, 12);
    FakeContext busyHolder = request(1000); // b0 busy, b1 idle: half the candidates busy
    busyHolder.pending[0] = 16;
    busyHolder.pending[1] = 0;
    FakeContext none = request(1000);
    none.pending[0] = 16;
    none.pending[1] = 0;
    half.score(busyHolder);
    off.score(none);
    assertThat(busyHolder.cost(1)).isGreaterThan(none.cost(1) + 100);
    FakeContext idle = request(1000); // nobody busy: the idle copy pays nothing
    idle.pending[1] = 0;
    FakeContext idleOff = request(1000);
    idleOff.pending[1] = 0;
    half.score(idle);
    off.score(idleOff);
    assertThat(idle.cost(1)).isEqualTo(idleOff.cost(1));
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().extraWorkIdleShare(1.5))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("extraWorkIdleShare");
  }

  @Test
  void byDefaultAnIdleCandidatePaysHalfThePriceOnceThreeQuartersOfTheOthersAreBusy() {
    EstimatedTtftScorer on =
        plain().extraWork(2, 0).build(); // idle share 0.75, weight 0.5, rho 0.5
    EstimatedTtftScorer off = plain().extraWork(0, 0).build();
    coldHistory(on, 80, 12);
    // b0 holds the prompt, b1 idle with b1's history, b2..b4 busy: 3 of 5 busy (0.6) and then 4 of
    // 5 (0.8) with b1 idle in both
    FakeContext below = fiveCandidates(1000, 3);
    FakeContext belowOff = fiveCandidates(1000, 3);
    on.score(below);
    off.score(belowOff);
    assertThat(below.cost(1)).as("3 of 5 busy: idle pays nothing").isEqualTo(belowOff.cost(1));

    FakeContext above = fiveCandidates(1000, 4);
    FakeContext aboveOff = fiveCandidates(1000, 4);
    on.score(above);
    off.score(aboveOff);
    double[] lr = load(80, 12, 1000);
    double ds = K.prefillMs(PROMPT, 0) - K.prefillMs(PROMPT - 2048, 2048);
    double busyPrice = 2 * lr[0] * ds * ds / (2 * (1 - lr[1]));
    assertThat(above.cost(1)).isCloseTo(aboveOff.cost(1) + 0.5 * busyPrice, within(1e-6));

    EstimatedTtftScorer full = plain().extraWork(2, 0).extraWorkIdleWeight(1).build();
    coldHistory(full, 80, 12);
    FakeContext fullAbove = fiveCandidates(1000, 4);
    full.score(fullAbove);
    assertThat(fullAbove.cost(1)).isCloseTo(aboveOff.cost(1) + busyPrice, within(1e-6));

    EstimatedTtftScorer never = plain().extraWork(2, 0).extraWorkIdleWeight(0).build();
    coldHistory(never, 80, 12);
    FakeContext neverAbove = fiveCandidates(1000, 4);
    never.score(neverAbove);
    assertThat(neverAbove.cost(1)).isEqualTo(aboveOff.cost(1));
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().extraWorkIdleWeight(1.5))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("extraWorkIdleWeight");
  }

  @Test
  void anIdleCandidateThatWasLightlyUsedTakesItsCopyFree() {
    // the utilisation condition (the default of sessions 25-32)
    EstimatedTtftScorer on = plain().extraWork(2, 0).extraWorkIdleMinUtilisation(0.5).build();
    EstimatedTtftScorer any = plain().extraWork(2, 0).build(); // the default: no such condition
    EstimatedTtftScorer off = plain().extraWork(0, 0).build();
    // b1 took 4 cold prompts 250 ms apart: rho ~0.07 at t = 1000 ms (a burst it idled through)
    coldHistory(on, 4, 250);
    coldHistory(any, 4, 250);
    double[] lr = load(4, 250, 1000);
    assertThat(lr[1]).isLessThan(0.5);
    FakeContext a = fiveCandidates(1000, 4);
    FakeContext b = fiveCandidates(1000, 4);
    FakeContext c = fiveCandidates(1000, 4);
    on.score(a);
    any.score(b);
    off.score(c);
    assertThat(a.cost(1)).as("idle and lightly used: free").isEqualTo(c.cost(1));
    double ds = K.prefillMs(PROMPT, 0) - K.prefillMs(PROMPT - 2048, 2048);
    double busyPrice = 2 * lr[0] * ds * ds / (2 * (1 - lr[1]));
    assertThat(b.cost(1)).isCloseTo(c.cost(1) + 0.5 * busyPrice, within(1e-6));
    // busy, the same light history pays in full: the condition is on idle candidates only
    FakeContext busy = fiveCandidates(1000, 4);
    FakeContext busyOff = fiveCandidates(1000, 4);
    busy.pending[1] = 16;
    busyOff.pending[1] = 16;
    on.score(busy);
    off.score(busyOff);
    assertThat(busy.cost(1)).isCloseTo(busyOff.cost(1) + busyPrice, within(1e-6));
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().extraWorkIdleMinUtilisation(-0.1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("extraWorkIdleMinUtilisation");
  }

  /**
   * Five candidates at {@code nowMs}: b0 holds the group prompt (busy), b1 idle and cold, and
   * {@code busy - 1} of b2..b4 busy (each holding the prompt, so none of them pays).
   */
  private static FakeContext fiveCandidates(long nowMs, int busy) {
    FakeContext ctx = new FakeContext(5);
    ctx.promptTokens = PROMPT;
    ctx.keys = keys(1000);
    ctx.now = nowMs * 1_000_000L;
    for (int i = 0; i < 5; i++) {
      ctx.matchedBlocks[i] = i == 1 ? 0 : PREFIX_BLOCKS;
    }
    ctx.pending[0] = 16;
    for (int i = 2; i < 1 + busy; i++) {
      ctx.pending[i] = 16;
    }
    return ctx;
  }

  @Test
  void aRemovedBackendsLoadIsForgotten() {
    EstimatedTtftScorer on = plain().extraWork(2, 0).build();
    EstimatedTtftScorer off = plain().extraWork(0, 0).build();
    coldHistory(on, 80, 12);
    on.removeBackend(1);
    FakeContext a = request(1000);
    FakeContext b = request(1000);
    on.score(a);
    off.score(b);
    assertThat(a.cost(1)).isEqualTo(b.cost(1));
  }

  @Test
  void settingsOutOfRangeAreRejectedByName() {
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().extraWork(-1, 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("extraWork: weight");
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().extraWork(Double.NaN, 1))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().extraWork(2, -1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("groupHorizonSeconds");
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().extraWork(2, 3601))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(EstimatedTtftScorer.builder().without("extra-work").build().termNames())
        .doesNotContain("extra-work");
  }
}
