package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.prefixrouter.api.RouteRequest;
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
    FakeContext ctx = new FakeContext(2);
    ctx.request = RouteRequest.builder("t", "m").session(session).build();
    ctx.promptTokens = prompt;
    ctx.now = nowMs * 1_000_000L;
    return ctx;
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
  void offByDefaultAndValidated() {
    assertThat(EstimatedTtftScorer.builder().build().termNames()).doesNotContain("future-wait");
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
