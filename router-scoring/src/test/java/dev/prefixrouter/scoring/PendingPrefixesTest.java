package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.api.spi.Scorer;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Pending prefixes: a prefix another request is still about to prefill on a busy backend counts as
 * not cached (for the terms, the rules and the engine) until the step in progress there is expected
 * to end.
 */
class PendingPrefixesTest {
  private static final TtftCoefficients K = TtftCoefficients.DEFAULTS;

  /** Only the terms under test. */
  private static EstimatedTtftScorer.Builder plain() {
    return EstimatedTtftScorer.builder()
        .calibrate(false)
        .balance(0, 0, 1)
        .futureWait(0, Duration.ZERO)
        .parallelStart(0)
        .releaseParallelSiblings(false)
        .replicaValue(0, 0.05)
        .sessions(Duration.ofMinutes(1), 0);
  }

  /** Block keys of a 4,096-token document (256 blocks) and a 256-token suffix {@code tail}. */
  private static long[] keys(int doc, int tail) {
    long[] k = new long[272];
    for (int i = 0; i < 256; i++) {
      k[i] = doc * 1_000_000L + i;
    }
    for (int i = 256; i < 272; i++) {
      k[i] = -(tail * 1_000_000L + i);
    }
    return k;
  }

  /**
   * A request on document {@code doc} with suffix {@code tail} at {@code nowMs}; two candidates, b0
   * decoding one request (busy), b1 idle.
   */
  private static FakeContext request(int doc, int tail, long nowMs, int matchedOnB0) {
    FakeContext ctx = new FakeContext(2);
    ctx.keys = keys(doc, tail);
    ctx.promptTokens = 272 * 16;
    ctx.now = nowMs * 1_000_000L;
    ctx.matchedBlocks[0] = matchedOnB0;
    ctx.inFlight[0] = 1;
    ctx.decodes[0] = 1;
    return ctx;
  }

  @Test
  void aSiblingRoutedBeforeTheStepEndsIsPricedAndCountedAsRecomputingThePrefix() {
    EstimatedTtftScorer s = plain().pendingPrefix(true).build();
    // the first request: nothing cached, to the busy b0 (a step in progress there)
    routeFirst(s);
    // a sibling 1 ms later: the index already holds the document on b0 (256 blocks)
    FakeContext sibling = scoredSibling(s);
    double queue = K.decodeMsPerRunning();
    double recompute = K.prefillMs(272 * 16, 0) - K.prefillMs(256, 4096);
    assertThat(sibling.cost(0)).isCloseTo(queue + K.prefillMs(256, 4096) + recompute, within(1e-9));
    assertThat(sibling.best())
        .as(
            "the idle backend, in parallel: %s %s %s",
            sibling.cost(0), sibling.cost(1), sibling.reason)
        .isEqualTo(1);
    assertThat(s.cachedTokens(sibling, 0)).isZero();
    assertThat(s.cachedTokens(sibling, 1)).isZero();

    // without the term the cached document on b0 wins and counts as cached
    EstimatedTtftScorer off = plain().pendingPrefix(PendingPrefixScope.OFF).build();
    routeFirst(off);
    FakeContext s2 = scoredSibling(off);
    assertThat(s2.best()).isEqualTo(0);
    assertThat(off.cachedTokens(s2, 0)).isEqualTo(4096);
  }

  @Test
  void theDefaultScopeIsOff() {
    EstimatedTtftScorer s = plain().build();
    assertThat(s.pendingPrefixScope()).isEqualTo(PendingPrefixScope.OFF);
    assertThat(plain().pendingPrefix(true).build().pendingPrefixScope())
        .isEqualTo(PendingPrefixScope.ALL);
    assertThat(plain().pendingPrefix(false).build().pendingPrefixScope())
        .isEqualTo(PendingPrefixScope.OFF);
    assertThatThrownBy(() -> plain().pendingPrefix((PendingPrefixScope) null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("pendingPrefix");
  }

  @Test
  void inSessionScopeOnlyTheSameSessionsSiblingSeesThePendingPrefix() {
    EstimatedTtftScorer s = plain().pendingPrefix(PendingPrefixScope.SESSION).build();
    FakeContext first = session(request(7, 1, 0, 0), "job-1");
    s.score(first);
    s.onRouted(first, 0); // the busy b0
    FakeContext sibling = session(request(7, 2, 1, 256), "job-1");
    s.score(sibling);
    assertThat(s.cachedTokens(sibling, 0)).isZero();
    assertThat(sibling.best()).as("the idle backend, in parallel").isEqualTo(1);

    FakeContext otherSession = session(request(7, 3, 1, 256), "job-2");
    s.score(otherSession);
    assertThat(s.cachedTokens(otherSession, 0)).isEqualTo(4096);
    assertThat(otherSession.best()).isEqualTo(0);

    FakeContext noSession = request(7, 4, 1, 256);
    s.score(noSession);
    assertThat(s.cachedTokens(noSession, 0)).isEqualTo(4096);
    assertThat(noSession.best()).isEqualTo(0);

    // the same session id of another tenant is another session
    FakeContext otherTenant = request(7, 5, 1, 256);
    otherTenant.request = RouteRequest.builder("u", "m").session("job-1").build();
    s.score(otherTenant);
    assertThat(s.cachedTokens(otherTenant, 0)).isEqualTo(4096);
  }

  @Test
  void inSessionScopeARequestWithoutASessionLeavesNothingPending() {
    EstimatedTtftScorer s = plain().pendingPrefix(PendingPrefixScope.SESSION).build();
    routeFirst(s); // no session
    FakeContext sibling = session(request(7, 2, 1, 256), "job-1");
    s.score(sibling);
    assertThat(s.cachedTokens(sibling, 0)).isEqualTo(4096);
    assertThat(scoredSibling(s).best()).isEqualTo(0);

    // in scope ALL the same two requests see it, sessions or not
    EstimatedTtftScorer all = plain().pendingPrefix(PendingPrefixScope.ALL).build();
    routeFirst(all);
    FakeContext sibling2 = session(request(7, 2, 1, 256), "job-1");
    all.score(sibling2);
    assertThat(all.cachedTokens(sibling2, 0)).isZero();
  }

  @Test
  void anIdenticalCopyOfAHeldPromptStaysWithIt() {
    for (PendingPrefixScope scope :
        new PendingPrefixScope[] {PendingPrefixScope.ALL, PendingPrefixScope.SESSION}) {
      EstimatedTtftScorer s = plain().pendingPrefix(scope).build();
      FakeContext first = session(request(7, 1, 0, 0), "job-1");
      s.score(first);
      s.onRouted(first, 0); // the busy b0
      FakeContext copy = session(request(7, 1, 1, 272), "job-1"); // the whole prompt held on b0
      s.score(copy);
      assertThat(s.cachedTokens(copy, 0)).as(scope.name()).isEqualTo(272 * 16);
      assertThat(copy.best()).as(scope.name()).isEqualTo(0);
      // a sibling with tokens of its own past the document is the case the view is for
      FakeContext sibling = session(request(7, 2, 1, 256), "job-1");
      s.score(sibling);
      assertThat(s.cachedTokens(sibling, 0)).as(scope.name()).isZero();
    }
  }

  @Test
  void afterTheStepInProgressEndsThePrefixCountsAsCached() {
    EstimatedTtftScorer s = plain().pendingPrefix(true).build();
    routeFirst(s);
    // the record lives one step intercept (alpha) after routing
    long after = (long) Math.ceil(K.alphaMs()) + 1;
    FakeContext later = request(7, 2, after, 256);
    s.score(later);
    assertThat(later.cost(0))
        .isCloseTo(K.decodeMsPerRunning() + K.prefillMs(256, 4096), within(1e-9));
    assertThat(later.best()).isEqualTo(0);
    assertThat(s.cachedTokens(later, 0)).isEqualTo(4096);
  }

  @Test
  void aRequestRoutedToAnIdleBackendLeavesNothingPending() {
    EstimatedTtftScorer s = plain().pendingPrefix(true).build();
    FakeContext first = request(7, 1, 0, 0);
    s.score(first);
    s.onRouted(first, 1); // b1: idle, its step starts at once and the sibling queues behind it
    FakeContext sibling = request(7, 2, 1, 0);
    sibling.matchedBlocks[1] = 256;
    s.score(sibling);
    assertThat(s.cachedTokens(sibling, 1)).isEqualTo(4096);
    assertThat(sibling.cost(1)).isCloseTo(K.prefillMs(256, 4096), within(1e-9));
  }

  @Test
  void aRequestOnAnotherPrefixIsNotAffected() {
    EstimatedTtftScorer s = plain().pendingPrefix(true).build();
    routeFirst(s);
    // another document whose blocks b0 holds from earlier: its chain differs at block 0
    FakeContext other = request(8, 2, 1, 256);
    s.score(other);
    assertThat(s.cachedTokens(other, 0)).isEqualTo(4096);
    assertThat(other.cost(0))
        .isCloseTo(K.decodeMsPerRunning() + K.prefillMs(256, 4096), within(1e-9));
  }

  @Test
  void onlyTheBlocksPastTheFirstRequestsMatchArePending() {
    EstimatedTtftScorer s = plain().pendingPrefix(true).build();
    // the first request found the first 64 blocks cached on b0 and brought the other 192
    FakeContext first = request(7, 1, 0, 64);
    s.score(first);
    s.onRouted(first, 0);
    FakeContext sibling = scoredSibling(s);
    assertThat(s.cachedTokens(sibling, 0)).isEqualTo(64 * 16);
  }

  @Test
  void theEngineCountsAPendingPrefixAsNotCached() {
    AtomicLong clock = new AtomicLong(1_000_000_000L);
    RoutingEngine e =
        RoutingEngine.builder()
            .ticker(clock::get)
            .hasher(new ScoringEngineTest.SimpleHasher())
            .prefixIndex(new ScoringEngineTest.MapIndex())
            .scorer(plain().pendingPrefix(true).build())
            .backend(Backend.of("a", "m"))
            .backend(Backend.of("slow", "m").withWeight(0.001)) // idle, but 1000x slower
            .build();
    // a request decoding on a: a step is in progress there
    Routed busy = (Routed) e.route(tokens(1, 1));
    assertThat(busy.backendId()).isEqualTo("a");
    busy.lease().firstToken();
    Routed first = (Routed) e.route(tokens(2, 1));
    assertThat(first.backendId()).isEqualTo("a");
    assertThat(first.matchedTokens()).isZero();
    clock.addAndGet(1_000_000L); // 1 ms: the first request's prefill has not started
    Routed sibling = (Routed) e.route(tokens(2, 2));
    assertThat(sibling.backendId()).isEqualTo("a");
    assertThat(sibling.matchedTokens()).as("the document is matched but not yet computed").isZero();
    clock.addAndGet(1_000_000_000L); // a second later the step boundary has passed
    Routed later = (Routed) e.route(tokens(2, 3));
    assertThat(later.backendId()).isEqualTo("a");
    assertThat(later.matchedTokens()).isEqualTo(4096);
    busy.lease().complete(Usage.of(16, 16));
  }

  @Test
  void whenEveryCandidateHasAPrefillQueuedAPendingPrefixCountsAsCached() {
    EstimatedTtftScorer s = plain().pendingPrefix(true).build();
    routeFirst(s);
    FakeContext sibling = request(7, 2, 1, 256);
    sibling.pending[0] = 4352; // the first request's prefill, queued on b0
    sibling.pending[1] = 1000; // and another on b1: no backend would start a recompute at once
    sibling.inFlight[1] = 1;
    s.score(sibling);
    assertThat(s.cachedTokens(sibling, 0)).isEqualTo(4096);
    sibling.pending[1] = 0;
    sibling.inFlight[1] = 0;
    s.score(sibling);
    assertThat(s.cachedTokens(sibling, 0)).isZero();
  }

  @Test
  void aRemovedBackendsRecordsGoWithIt() {
    EstimatedTtftScorer s = plain().pendingPrefix(true).build();
    routeFirst(s);
    s.removeBackend(0);
    FakeContext sibling = scoredSibling(s);
    assertThat(s.cachedTokens(sibling, 0)).isEqualTo(4096);
  }

  @Test
  void aWrappingScorerForwardsTheCachedTokens() {
    MediaAffinity m = MediaAffinity.wrap(plain().pendingPrefix(true).build());
    routeFirst(m);
    FakeContext sibling = scoredSibling(m);
    assertThat(m.cachedTokens(sibling, 0)).isZero();
    assertThat(m.cachedTokens(sibling, 1)).isZero();
  }

  @Test
  void anAnswerForAnotherDecisionIsTheMatch() {
    EstimatedTtftScorer s = plain().pendingPrefix(true).build();
    routeFirst(s);
    FakeContext sibling = scoredSibling(s);
    FakeContext other = request(7, 3, 2, 256); // not scored on this thread
    assertThat(s.cachedTokens(other, 0)).isEqualTo(4096);
  }

  /** A sibling on document 7 at 1 ms, the index holding the document on b0, scored by {@code s}. */
  private static FakeContext scoredSibling(Scorer s) {
    FakeContext sibling = request(7, 2, 1, 256);
    s.score(sibling);
    return sibling;
  }

  /** {@code ctx} as a request of {@code session} (tenant "t"). */
  private static FakeContext session(FakeContext ctx, String session) {
    ctx.request = RouteRequest.builder("t", "m").session(session).build();
    return ctx;
  }

  /** The first request on document 7 (nothing cached), scored and routed to the busy b0 at 0 ms. */
  private static void routeFirst(Scorer s) {
    FakeContext first = request(7, 1, 0, 0);
    s.score(first);
    s.onRouted(first, 0);
  }

  /** A 4,096-token document {@code doc} and a 256-token suffix {@code tail}. */
  private static RouteRequest tokens(int doc, int tail) {
    int[] ids = new int[4096 + 256];
    for (int i = 0; i < 4096; i++) {
      ids[i] = doc * 100_000 + i;
    }
    for (int i = 4096; i < ids.length; i++) {
      ids[i] = 50_000_000 + tail * 100_000 + i;
    }
    return RouteRequest.builder("t", "m").prompt(Prompt.ofTokens(ids)).maxOutputTokens(16).build();
  }
}
