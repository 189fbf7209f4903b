package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.spi.SessionPins;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The parallel-start term and the release of parallel siblings: what a new session that sends
 * requests at once pays, where its siblings go, and that sequential sessions see nothing of it.
 */
class ParallelStartTermTest {
  private static final TtftCoefficients K = TtftCoefficients.DEFAULTS;

  /** Only the terms under test: no calibration, balance or future wait. */
  private static EstimatedTtftScorer.Builder plain() {
    return EstimatedTtftScorer.builder()
        .calibrate(false)
        .balance(0, 0, 1)
        .futureWait(0, Duration.ZERO)
        .parallelStart(0)
        .releaseParallelSiblings(false);
  }

  private static FakeContext request(String session, int prompt, long nowMs) {
    return FakeContext.sessionRequest(session, prompt, nowMs);
  }

  /** A new session on 4,096 tokens: b0 holds 1,024 of them but is decoding one request. */
  private static FakeContext newSessionBusyHolder() {
    FakeContext ctx = request("job-2", 4096, 1000);
    ctx.matchedBlocks[0] = 1024 / 16;
    ctx.inFlight[0] = 1;
    ctx.decodes[0] = 1;
    return ctx;
  }

  @Test
  void aNewSessionThatSendsRequestsAtOnceStartsWhereNoStepIsInProgress() {
    EstimatedTtftScorer s = plain().parallelStart(1).build();
    assertThat(s.termNames()).contains("parallel-start");
    // job-1: its first request on b0 at 0 ms, a sibling 1 ms later (within the first's prefill)
    s.onRouted(request("job-1", 4096, 0), 0);
    s.onRouted(request("job-1", 4096, 1), 0);
    FakeContext ctx = newSessionBusyHolder();
    s.score(ctx);
    // siblings per new session: 1 / 0.999 (the session count decayed once by the sibling)
    double siblings = 1 / 0.999;
    double repeated = K.prefillMs(3072, 0) - K.alphaMs();
    double withoutTerm = K.decodeMsPerRunning() + K.prefillMs(3072, 1024);
    assertThat(ctx.cost(0)).isCloseTo(withoutTerm + siblings * repeated, within(1e-9));
    assertThat(ctx.cost(1)).isCloseTo(K.prefillMs(4096, 0), within(1e-9));
    assertThat(ctx.best()).as("the idle backend, where its step starts at once").isEqualTo(1);

    // without the term the cached quarter on the busy holder wins
    EstimatedTtftScorer off = plain().build();
    off.onRouted(request("job-1", 4096, 0), 0);
    off.onRouted(request("job-1", 4096, 1), 0);
    FakeContext same = newSessionBusyHolder();
    off.score(same);
    assertThat(same.best()).isEqualTo(0);
  }

  @Test
  void sessionsWhoseRequestsFollowEachOtherAreChargedNothing() {
    EstimatedTtftScorer s = plain().parallelStart(1).releaseParallelSiblings(true).build();
    EstimatedTtftScorer off = plain().build();
    for (EstimatedTtftScorer x : new EstimatedTtftScorer[] {s, off}) {
      // a chat: its second request 2 s after the first, long after the first's prefill
      x.onRouted(request("chat-1", 4096, 0), 0);
      x.onRouted(request("chat-1", 4500, 2000), 0);
    }
    FakeContext a = newSessionBusyHolder();
    FakeContext b = newSessionBusyHolder();
    s.score(a);
    off.score(b);
    assertThat(a.cost(0)).isEqualTo(b.cost(0));
    assertThat(a.cost(1)).isEqualTo(b.cost(1));
    assertThat(a.best()).isEqualTo(b.best()).isEqualTo(0);
  }

  /**
   * The session's first request went to b0 (its 4,096-token document pending there behind 2,000
   * tokens of other work); a sibling matches the document on b0 only. b1 is cheaper, and b0 within
   * the session rule's margin of it.
   */
  private static FakeContext sibling(long nowMs, long pendingOnB1) {
    FakeContext ctx = request("job-1", 4352, nowMs);
    ctx.matchedBlocks[0] = 4096 / 16;
    ctx.inFlight[0] = 1;
    ctx.pending[0] = 6096;
    ctx.pending[1] = pendingOnB1;
    return ctx;
  }

  private static String route(boolean release, long nowMs, long pendingOnB1, SessionPins pins) {
    return route(release, false, nowMs, pendingOnB1, pins);
  }

  private static String route(
      boolean release, boolean onlyToIdle, long nowMs, long pendingOnB1, SessionPins pins) {
    EstimatedTtftScorer s =
        plain()
            .releaseParallelSiblings(release)
            .releaseSiblingsOnlyToIdle(onlyToIdle)
            .sessionPins(pins)
            .build();
    s.onRouted(request("job-1", 4096, 0), 0); // pins job-1 to b0
    FakeContext ctx = sibling(nowMs, pendingOnB1);
    s.score(ctx);
    s.onRouted(ctx, ctx.best());
    return ctx.best() + " " + ctx.reason + " | pin " + pins.backendOf(sessionOf(ctx));
  }

  private static String sessionOf(FakeContext ctx) {
    return EstimatedTtftScorer.sessionKey(ctx.request);
  }

  @Test
  void aParallelSiblingsRouteReadsThePinOnce() {
    for (boolean release : new boolean[] {true, false}) {
      TermsAndRulesTest.MapPins pins = new TermsAndRulesTest.MapPins();
      EstimatedTtftScorer s = plain().releaseParallelSiblings(release).sessionPins(pins).build();
      s.onRouted(request("job-1", 4096, 0), 0); // pins job-1 to b0
      int before = pins.reads;
      for (int i = 0; i < 3; i++) {
        FakeContext ctx = sibling(2 + i, 0);
        s.score(ctx);
        s.onRouted(ctx, ctx.best());
        assertThat(pins.reads).as("release %s, sibling %d", release, i).isEqualTo(before + i + 1);
        assertThat(pins.pins.get(sessionOf(ctx))).isEqualTo("b0");
      }
      // a later request of the session (past the first's prefill) is pinned where it goes
      FakeContext later = sibling(60_000, 0);
      s.score(later);
      s.onRouted(later, 1);
      assertThat(pins.reads).isEqualTo(before + 4);
      assertThat(pins.pins.get(sessionOf(later))).isEqualTo("b1");
    }
  }

  @Test
  void aParallelSiblingIsReleasedToABackendWithNoPrefillQueuedAndLeavesThePinWhereItWas() {
    SessionPins pins = InProcessSessionPins.create(Duration.ofMinutes(5), 100);
    assertThat(route(true, 2, 0, pins))
        .as("released: b1 starts its prefill at its next step; the pin stays on b0")
        .startsWith("1 ")
        .endsWith("| pin b0");
    assertThat(route(false, 2, 0, InProcessSessionPins.create(Duration.ofMinutes(5), 100)))
        .as("without the release the session rule holds it on b0")
        .isEqualTo("0 session affinity | pin b0");
  }

  @Test
  void aSiblingIsReleasedEvenWhenTheBestHasAPrefillQueuedUnlessOnlyToIdle() {
    // b1 has 1,000 tokens of prefill queued and is still the cheaper: released there (the
    // default since issue #18 session 32), held on the pin when released only to idle backends
    assertThat(route(true, 2, 1000, InProcessSessionPins.create(Duration.ofMinutes(5), 100)))
        .startsWith("1 ")
        .endsWith("| pin b0");
    assertThat(route(true, true, 2, 1000, InProcessSessionPins.create(Duration.ofMinutes(5), 100)))
        .isEqualTo("0 session affinity | pin b0");
    assertThat(route(true, true, 2, 0, InProcessSessionPins.create(Duration.ofMinutes(5), 100)))
        .as("only to idle: b1 has nothing queued")
        .startsWith("1 ");
  }

  @Test
  void aLaterRequestIsHeldOnThePinWhenTheFirstsPrefillIsDone() {
    // 2 s later the first request's prefill is long done: a later request, held as before
    for (boolean onlyToIdle : new boolean[] {false, true}) {
      assertThat(
              route(
                  true,
                  onlyToIdle,
                  2000,
                  0,
                  InProcessSessionPins.create(Duration.ofMinutes(5), 100)))
          .isEqualTo("0 session affinity | pin b0");
    }
  }

  @Test
  void requestsWithoutASessionPayNothingAndWeightsAreValidated() {
    EstimatedTtftScorer s = plain().parallelStart(1).releaseParallelSiblings(true).build();
    s.onRouted(request("job-1", 4096, 0), 0);
    s.onRouted(request("job-1", 4096, 1), 0);
    FakeContext ctx = newSessionBusyHolder();
    ctx.request = RouteRequest.builder("t", "m").build();
    s.score(ctx);
    assertThat(ctx.cost(0)).isEqualTo(K.decodeMsPerRunning() + K.prefillMs(3072, 1024));
    assertThat(EstimatedTtftScorer.defaults().termNames()).contains("parallel-start");
    assertThat(EstimatedTtftScorer.builder().without("parallel-start").build().termNames())
        .doesNotContain("parallel-start");
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().parallelStart(-1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("parallelStart");
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().parallelStart(Double.NaN))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
