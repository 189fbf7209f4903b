package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.prefixrouter.api.spi.SessionPins;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The future-wait term: what a new session pays, and who pays nothing. */
class FutureWaitTermTest {
  private static final TtftCoefficients K = TtftCoefficients.DEFAULTS;
  private static final double TAU_MS = 4000;

  private static EstimatedTtftScorer scorer(double weight) {
    return EstimatedTtftScorer.builder()
        .calibrate(false)
        .balance(0, 0, 1)
        .futureWait(weight, Duration.ofMillis((long) TAU_MS))
        .build();
  }

  private static FakeContext request(String session, int prompt, long nowMs) {
    return FakeContext.sessionRequest(session, prompt, nowMs);
  }

  @Test
  void aNewSessionPaysTheMeanWaitOfTheBackendsPrefillWorkTimesItsExpectedFurtherRequests() {
    EstimatedTtftScorer s = scorer(32);
    assertThat(s.termNames()).contains("future-wait");
    // session s1: two requests of 4,096 uncached tokens, both on b0, 100 ms apart
    s.onRouted(request("s1", 4096, 0), 0);
    s.onRouted(request("s1", 4096, 100), 0);
    // a new session at 300 ms: b1 has had no work, b0 two prefills
    FakeContext ctx = request("s2", 1024, 300);
    s.score(ctx);
    double p = K.prefillMs(4096, 0);
    double sum = (p * Math.exp(-100 / TAU_MS) + p) * Math.exp(-200 / TAU_MS);
    double squares = (p * p * Math.exp(-100 / TAU_MS) + p * p) * Math.exp(-200 / TAU_MS);
    double rho = Math.min(0.9, sum / TAU_MS);
    double wait = squares / TAU_MS / (2 * (1 - rho));
    // requests per session 1.999 (decayed by 0.999 per request), so 0.999 further ones
    double further = (0.999 + 1) / 1 - 1;
    assertThat(ctx.cost(0) - ctx.cost(1)).isCloseTo(32 * further * 2 * wait, within(1e-9));
    assertThat(ctx.cost(1)).isCloseTo(K.prefillMs(1024, 0), within(1e-9));
    assertThat(ctx.best()).isEqualTo(1);
  }

  /**
   * A session pinned elsewhere (another replica, or pins that outlived this term's record) is a
   * continuing session: the term may charge it as new, but the charge must not move its pin.
   */
  @Test
  void aPinnedSessionTheTermHasNotSeenIsNotMovedByIt() {
    String[] best = new String[2];
    for (int pinned = 0; pinned < 2; pinned++) {
      SessionPins pins = InProcessSessionPins.create(Duration.ofMinutes(5), 100);
      EstimatedTtftScorer s =
          EstimatedTtftScorer.builder()
              .calibrate(false)
              .balance(0, 0, 1)
              .futureWait(1000, Duration.ofMillis((long) TAU_MS))
              .sessionPins(pins)
              .build();
      s.onRouted(request("s1", 4096, 0), 0);
      s.onRouted(request("s1", 4096, 100), 0);
      FakeContext ctx = request("s2", 1024, 300);
      if (pinned == 1) {
        pins.pin(EstimatedTtftScorer.sessionKey(ctx.request), "b0");
      }
      s.score(ctx);
      best[pinned] = ctx.best() + " " + ctx.reason;
    }
    assertThat(best[0]).as("not pinned: the future wait on b0 sends it to b1").startsWith("1 ");
    assertThat(best[1]).as("pinned to b0: it stays").isEqualTo("0 session affinity");
  }

  /**
   * The same history at negative clock readings (System.nanoTime may be negative) costs the same.
   */
  @Test
  void aNegativeClockDecaysTheSumsAsAnyOther() {
    double[] diff = new double[2];
    long[] offsetMs = {0, -10_000_000};
    for (int k = 0; k < 2; k++) {
      EstimatedTtftScorer s = scorer(32);
      s.onRouted(request("s1", 4096, offsetMs[k]), 0);
      s.onRouted(request("s1", 4096, offsetMs[k] + 100), 0);
      FakeContext ctx = request("s2", 1024, offsetMs[k] + 300);
      s.score(ctx);
      diff[k] = ctx.cost(0) - ctx.cost(1);
    }
    assertThat(diff[0]).isPositive();
    assertThat(diff[1]).isCloseTo(diff[0], within(1e-9));
  }

  @Test
  void theWaitFadesAsTheShortestQueueApproachesTauAndIsGoneWhenTheFleetIsSaturated() {
    // the history of the first test, then the same new session with a queue on both backends
    double[] diff = new double[3];
    long[] pendingTokens = {0, 0, 0};
    double beta = K.betaMsPerToken();
    pendingTokens[1] = Math.round(TAU_MS / 2 / beta); // the shortest queue is tau / 2
    pendingTokens[2] = Math.round(TAU_MS / beta) + 1; // every queue is longer than tau
    for (int q = 0; q < 3; q++) {
      EstimatedTtftScorer s = scorer(32);
      s.onRouted(request("s1", 4096, 0), 0);
      s.onRouted(request("s1", 4096, 100), 0);
      FakeContext ctx = request("s2", 1024, 300);
      ctx.pending[0] = pendingTokens[q];
      ctx.pending[1] = pendingTokens[q];
      s.score(ctx);
      diff[q] = ctx.cost(0) - ctx.cost(1);
    }
    assertThat(diff[0]).isPositive();
    double open = 1 - pendingTokens[1] * beta / TAU_MS;
    assertThat(open).isCloseTo(0.5, within(0.01));
    assertThat(diff[1]).isCloseTo(open * diff[0], within(1e-9));
    assertThat(diff[2]).isZero();
  }

  @Test
  void theShareOfTheWaitThisPlacementKeepsFallsWithTheNewSessionsPlacedWithinAGap() {
    FutureWaitTerm t = new FutureWaitTerm(1, 0, K, Long.MAX_VALUE, 1000);
    t.onRouted(request("s1", 1024, 0), 0);
    assertThat(t.kept(2)).isEqualTo(1); // no gap seen yet
    // three new sessions start between s1's first and second request
    t.onRouted(request("s2", 1024, 10), 1);
    t.onRouted(request("s3", 1024, 20), 0);
    t.onRouted(request("s4", 1024, 30), 1);
    t.onRouted(request("s1", 1024, 100), 0);
    assertThat(t.kept(2)).isCloseTo(1 / (1 + 3 / 2.0), within(1e-12));
    assertThat(t.kept(8)).isCloseTo(1 / (1 + 3 / 8.0), within(1e-12));
    // a gap with no new session: the mean over the two gaps, the older one decayed by 0.999
    t.onRouted(request("s1", 1024, 200), 0);
    double perGap = (0.999 * 3 + 0) / (0.999 + 1);
    assertThat(t.kept(2)).isCloseTo(1 / (1 + perGap / 2), within(1e-12));
  }

  @Test
  void aNewSessionPaysOnlyTheKeptShareOfTheWait() {
    // s1's gap holds two new sessions, which run on b1 as well (same load in both scorers' b0)
    EstimatedTtftScorer kept = scorer(32);
    kept.onRouted(request("s1", 4096, 0), 0);
    kept.onRouted(request("s2", 512, 10), 1);
    kept.onRouted(request("s3", 512, 20), 1);
    kept.onRouted(request("s1", 4096, 100), 0);
    FakeContext ctx = request("s4", 1024, 300);
    kept.score(ctx);
    double tau = TAU_MS;
    double p = K.prefillMs(4096, 0);
    double q = K.prefillMs(512, 0);
    double[] sum = {
      (p * Math.exp(-100 / tau) + p) * Math.exp(-200 / tau),
      (q * Math.exp(-10 / tau) + q) * Math.exp(-280 / tau)
    };
    double[] squares = {
      (p * p * Math.exp(-100 / tau) + p * p) * Math.exp(-200 / tau),
      (q * q * Math.exp(-10 / tau) + q * q) * Math.exp(-280 / tau)
    };
    double[] wait = new double[2];
    for (int b = 0; b < 2; b++) {
      wait[b] = squares[b] / tau / (2 * (1 - Math.min(0.9, sum[b] / tau)));
    }
    // 4 requests in 3 sessions (decayed by 0.999 each), 2 new sessions in the one gap, 2 backends
    double requests = ((0.999 + 1) * 0.999 + 1) * 0.999 + 1;
    double sessions = (0.999 + 1) * 0.999 + 1;
    double further = requests / sessions - 1;
    double share = 1 / (1 + 2 / 2.0);
    assertThat(ctx.cost(0) - ctx.cost(1))
        .isCloseTo(share * 32 * further * 2 * (wait[0] - wait[1]), within(1e-9));
  }

  @Test
  void laterRequestsOfASessionAndRequestsWithoutOnePayNothing() {
    EstimatedTtftScorer s = scorer(32);
    s.onRouted(request("s1", 4096, 0), 0);
    s.onRouted(request("s1", 4096, 100), 0);
    FakeContext continuation = request("s1", 1024, 300);
    s.score(continuation);
    assertThat(continuation.cost(0)).isEqualTo(continuation.cost(1));
    FakeContext none = request(null, 1024, 300);
    s.score(none);
    assertThat(none.cost(0)).isEqualTo(none.cost(1));
    // the same new session with the term off: no difference either
    FakeContext fresh = request("s2", 1024, 300);
    scorer(0).score(fresh);
    assertThat(fresh.cost(0)).isEqualTo(fresh.cost(1));
  }

  @Test
  void aZeroTauIsLearnedAsTheMeanGapBetweenASessionsRequests() {
    FutureWaitTerm t = new FutureWaitTerm(1, 0, K, Long.MAX_VALUE, 1000);
    assertThat(t.tau()).isEqualTo(4e9); // nothing seen yet
    t.onRouted(request("s1", 1024, 0), 0);
    t.onRouted(request("s1", 1024, 1000), 0);
    t.onRouted(request("s2", 1024, 1500), 1);
    t.onRouted(request("s1", 1024, 4000), 0);
    // gaps 1 s and 3 s, the second weighted 1 and the first 0.999
    assertThat(t.tau()).isCloseTo((0.999 * 1e9 + 3e9) / 1.999, within(1e-3));
    assertThat(new FutureWaitTerm(1, 2_000_000_000L, K, Long.MAX_VALUE, 1000).tau()).isEqualTo(2e9);
  }

  @Test
  void onByDefaultOffWithWeightZeroAndValidated() {
    assertThat(EstimatedTtftScorer.builder().build().termNames()).contains("future-wait");
    assertThat(EstimatedTtftScorer.builder().without("future-wait").build().termNames())
        .doesNotContain("future-wait");
    assertThat(scorer(0).termNames()).doesNotContain("future-wait");
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().futureWait(-1, Duration.ofSeconds(4)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("weight");
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().futureWait(1, Duration.ofNanos(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("tau");
    // 0 means learned
    assertThat(EstimatedTtftScorer.builder().futureWait(1, Duration.ZERO).build().termNames())
        .contains("future-wait");
  }
}
