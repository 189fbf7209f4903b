package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;

import dev.prefixrouter.api.LoadReport;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.spi.FirstTokenObservation;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class EstimatedTtftScorerTest {
  private final EstimatedTtftScorer scorer = EstimatedTtftScorer.builder().calibrate(false).build();

  @Test
  void prefersTheBackendHoldingThePrefix() {
    FakeContext ctx = new FakeContext(3);
    ctx.promptTokens = 4096;
    ctx.matchedBlocks[1] = 200; // 3200 tokens cached on b1
    scorer.score(ctx);
    assertThat(ctx.best()).isEqualTo(1);
    TtftCoefficients k = TtftCoefficients.DEFAULTS;
    assertThat(ctx.cost(1)).isCloseTo(k.prefillMs(896, 3200), within(1e-9));
    assertThat(ctx.reason).isEqualTo("est-ttft"); // cost and cached tokens are Routed's fields
  }

  @Test
  void aColdPromptAvoidsAThrashingCacheAndPaysForWhatItEvictsThere() {
    FakeContext ctx = new FakeContext(3);
    ctx.promptTokens = 4096;
    ctx.lruAge[0] = 1_000; // evicts blocks used 1 µs ago: thrashing
    ctx.lruAge[1] = 100_000; // the stalest cache
    ctx.lruAge[2] = 40_000; // above a quarter of the largest: no penalty
    scorer.score(ctx);
    TtftCoefficients k = TtftCoefficients.DEFAULTS;
    double own = k.prefillMs(4096, 0);
    double insert = own - k.prefillMs(0, 0);
    assertThat(ctx.cost(1)).isCloseTo(own, within(1e-9));
    assertThat(ctx.cost(2)).isCloseTo(own, within(1e-9));
    assertThat(ctx.cost(0)).isCloseTo(own + (1 - 4 * 0.01) * insert, within(1e-9));
    assertThat(ctx.order[2]).isEqualTo(0);
    assertThat(ctx.reason).as("a tie the pressure did not decide").startsWith("est-ttft, fewest");

    // 20 ms of queue on b1 and b2: b0, thrashing, has the cheapest estimate by far, and still loses
    ctx.pending[1] = (long) (20 / k.betaMsPerToken());
    ctx.pending[2] = ctx.pending[1];
    scorer.score(ctx);
    assertThat(ctx.best()).isIn(1, 2);
    assertThat(ctx.reason).isEqualTo("est-ttft, cache pressure");
  }

  @Test
  void cachePressureSparesHoldersAndBackendsWithRoomAndCanBeTurnedOff() {
    FakeContext ctx = new FakeContext(3);
    ctx.promptTokens = 4096;
    ctx.matchedBlocks[0] = 256; // holds the whole prompt: inserts nothing
    ctx.lruAge[0] = 0;
    ctx.lruAge[1] = 0; // full and thrashing, while b2 has room
    scorer.score(ctx);
    TtftCoefficients k = TtftCoefficients.DEFAULTS;
    assertThat(ctx.cost(0)).isCloseTo(k.prefillMs(0, 4096), within(1e-9));
    assertThat(ctx.cost(2)).isCloseTo(k.prefillMs(4096, 0), within(1e-9));
    assertThat(ctx.cost(1))
        .as("a full cache pays in full when another has room")
        .isCloseTo(2 * k.prefillMs(4096, 0) - k.prefillMs(0, 0), within(1e-9));

    EstimatedTtftScorer off =
        EstimatedTtftScorer.builder().calibrate(false).cachePressure(0, 4).build();
    off.score(ctx);
    assertThat(ctx.cost(1)).isCloseTo(k.prefillMs(4096, 0), within(1e-9));

    java.util.Arrays.fill(ctx.lruAge, 0); // a clock that stands still: no information
    scorer.score(ctx);
    assertThat(ctx.cost(1)).isCloseTo(k.prefillMs(4096, 0), within(1e-9));
  }

  @Test
  void cachePressureSettingsAreChecked() {
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().cachePressure(-1, 4))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("weight in [0, 100]");
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().cachePressure(1, 0.5))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("turnoverRatio in [1, 1000]");
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().cachePressure(Double.NaN, 4))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void hotPrefixSpillsExactlyWhenQueueDelayExceedsThePrefillSaved() {
    TtftCoefficients k = TtftCoefficients.DEFAULTS;
    double saved = k.prefillMs(4096, 0) - k.prefillMs(96, 4000);
    // pending prefill on the holder just below / above the saving
    long below = (long) Math.floor(saved / k.betaMsPerToken()) - 100;
    long above = (long) Math.ceil(saved / k.betaMsPerToken()) + 100;
    FakeContext ctx = new FakeContext(2);
    ctx.promptTokens = 4096;
    ctx.matchedBlocks[0] = 250;
    ctx.pending[0] = below;
    scorer.score(ctx);
    assertThat(ctx.best()).as("holder keeps it").isEqualTo(0);
    ctx.pending[0] = above;
    scorer.score(ctx);
    assertThat(ctx.best()).as("spills to the other backend").isEqualTo(1);
  }

  @Test
  void costIsNonDecreasingInUncachedTokensAndInLoad() {
    qt().withExamples(300)
        .forAll(
            integers().between(0, 8_000),
            integers().between(0, 500),
            integers().between(0, 200),
            integers().between(0, 50))
        .checkAssert(
            (prompt, cachedBlocks, pending, running) -> {
              FakeContext a = new FakeContext(1);
              a.promptTokens = prompt;
              a.matchedBlocks[0] = cachedBlocks;
              a.pending[0] = pending * 10L;
              a.decodes[0] = running;
              double base = scorer.estimate(a, 0);
              FakeContext more = new FakeContext(1);
              more.promptTokens = prompt + 16; // one more uncached block
              more.matchedBlocks[0] = cachedBlocks;
              more.pending[0] = pending * 10L;
              more.decodes[0] = running;
              assertThat(scorer.estimate(more, 0)).isGreaterThanOrEqualTo(base);
              a.pending[0] += 100;
              assertThat(scorer.estimate(a, 0)).isGreaterThanOrEqualTo(base);
              a.decodes[0] += 1;
              a.loads[0] = LoadReport.of(running + 1, 3, 0.95);
              a.loadAge[0] = 0;
              assertThat(scorer.estimate(a, 0)).isGreaterThanOrEqualTo(base);
            });
  }

  @Test
  void staleReportsFadeAndKvPressureCosts() {
    EstimatedTtftScorer scorer =
        EstimatedTtftScorer.builder().calibrate(false).congestionWeight(0).build();
    FakeContext ctx = new FakeContext(1);
    double idle = scorer.estimate(ctx, 0);
    ctx.loads[0] = LoadReport.of(0, 10, 0.5);
    ctx.loadAge[0] = 0;
    double fresh = scorer.estimate(ctx, 0);
    ctx.loadAge[0] = Duration.ofSeconds(1).toNanos();
    double half = scorer.estimate(ctx, 0);
    ctx.loadAge[0] = Duration.ofSeconds(5).toNanos();
    double stale = scorer.estimate(ctx, 0);
    assertThat(fresh - idle).isCloseTo(100.0, within(1e-6)); // 10 waiting × 10 ms
    assertThat(half - idle).isCloseTo(50.0, within(1e-6));
    assertThat(stale).isEqualTo(idle);
    ctx.loads[0] = LoadReport.of(0, 0, 0.95);
    ctx.loadAge[0] = 0;
    assertThat(scorer.estimate(ctx, 0) - idle).isCloseTo(250.0, within(1e-6));
  }

  /**
   * The second chat of a system prompt arrives while the first still prefills on the prompt's only
   * holder: an idle backend wins by a few ms, and would become a second, permanent holder.
   */
  private static FakeContext secondChatOfASystemPrompt() {
    FakeContext ctx = new FakeContext(3);
    ctx.promptTokens = 1224; // 1024 system + 200 user
    ctx.keys = new long[76];
    ctx.matchedBlocks[0] = 64; // b0 holds the system prompt
    ctx.inFlight[0] = 1; // and prefills the first chat now
    ctx.pending[0] = 1224;
    return ctx;
  }

  @Test
  void aBrieflyBusyHolderKeepsThePrefix() {
    FakeContext ctx = secondChatOfASystemPrompt();
    EstimatedTtftScorer off =
        EstimatedTtftScorer.builder().calibrate(false).prefixAffinity(0, 1).build();
    off.score(ctx);
    assertThat(ctx.best()).as("per-request TTFT alone spills").isNotEqualTo(0);
    assertThat(ctx.cost(0)).isLessThan(1.5 * ctx.cost(ctx.best()));

    ctx = secondChatOfASystemPrompt();
    scorer.score(ctx);
    assertThat(ctx.best()).isEqualTo(0);
    assertThat(ctx.reason).isEqualTo("prefix affinity");
  }

  @Test
  void prefixAffinityYieldsToABacklogOrAWideMargin() {
    FakeContext backlog = secondChatOfASystemPrompt();
    backlog.inFlight[0] = 2; // two requests wait there: a queue, not one prefill
    scorer.score(backlog);
    assertThat(backlog.best()).isNotEqualTo(0);

    FakeContext wide = secondChatOfASystemPrompt();
    EstimatedTtftScorer tight =
        EstimatedTtftScorer.builder().calibrate(false).prefixAffinity(1.05, 1).build();
    tight.score(wide);
    assertThat(wide.best()).isNotEqualTo(0);

    FakeContext lessThanHalf = secondChatOfASystemPrompt();
    lessThanHalf.keys = new long[200]; // the system prompt is under half of this prompt
    lessThanHalf.promptTokens = 3200;
    scorer.score(lessThanHalf);
    assertThat(lessThanHalf.reason).isNotEqualTo("prefix affinity");

    assertThatThrownBy(() -> EstimatedTtftScorer.builder().prefixAffinity(0.5, 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("prefixAffinity");
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().prefixAffinity(1.5, -1))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void congestionKeepsAHotPrefixOnItsHolderWhenTheOthersAreQueuedToo() {
    TtftCoefficients k = TtftCoefficients.DEFAULTS;
    double saved = k.prefillMs(4096, 0) - k.prefillMs(96, 4000);
    FakeContext ctx = new FakeContext(2);
    ctx.promptTokens = 4096;
    ctx.matchedBlocks[0] = 250;
    ctx.pending[0] = (long) Math.ceil(saved / k.betaMsPerToken()) + 100; // greedy would spill
    ctx.inFlight[0] = 8; // eight requests before their first token on each backend
    ctx.inFlight[1] = 8;
    EstimatedTtftScorer greedy =
        EstimatedTtftScorer.builder().calibrate(false).congestionWeight(0).build();
    greedy.score(ctx);
    assertThat(ctx.best()).as("per-request TTFT alone spills").isEqualTo(1);
    EstimatedTtftScorer s = EstimatedTtftScorer.builder().calibrate(false).build();
    double before = s.estimate(ctx, 1);
    assertThat(before - greedy.estimate(ctx, 1))
        .as("8 queued × β × 4096 uncached tokens")
        .isCloseTo(8 * k.betaMsPerToken() * 4096, within(1e-6));
    s.score(ctx);
    assertThat(ctx.best()).as("the cold prefill would delay eight queued requests").isEqualTo(0);
    ctx.inFlight[1] = 0; // an idle second backend: the spill is free for everyone else
    s.score(ctx);
    assertThat(ctx.best()).isEqualTo(1);
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().congestionWeight(-1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("congestionWeight");
  }

  @Test
  void nearTiesGoToTheLessLoadedThenRotate() {
    FakeContext ctx = new FakeContext(3);
    ctx.inFlight[0] = 5;
    ctx.inFlight[1] = 1;
    ctx.inFlight[2] = 3;
    scorer.score(ctx);
    assertThat(ctx.best()).isEqualTo(1);
    FakeContext even = new FakeContext(3);
    java.util.Set<Integer> firsts = new java.util.HashSet<>();
    for (int i = 0; i < 6; i++) {
      scorer.score(even);
      firsts.add(even.best());
    }
    assertThat(firsts).containsExactlyInAnyOrder(0, 1, 2);
    assertThat(even.reason).isEqualTo("est-ttft, fewest open leases in a band of 3");
  }

  @Test
  void sessionPinHoldsUntilTheBackendIsMuchWorseOrSaturated() {
    EstimatedTtftScorer s = EstimatedTtftScorer.builder().calibrate(false).build();
    FakeContext ctx = new FakeContext(2);
    ctx.request = RouteRequest.builder("t", "m").session("chat-1").build();
    ctx.inFlight[1] = 1; // b0 wins the first time
    s.score(ctx);
    s.onRouted(ctx, ctx.best());
    assertThat(ctx.best()).isEqualTo(0);
    ctx.now += 10_000_000_000L; // the session's next request 10 s later (not a parallel sibling)
    ctx.inFlight[1] = 0;
    ctx.inFlight[0] = 3;
    ctx.decodes[0] = 3; // a little worse: 1.5 ms
    s.score(ctx);
    assertThat(ctx.best()).as("pinned despite slightly worse").isEqualTo(0);
    assertThat(ctx.reason).startsWith("session affinity");
    ctx.loads[0] = LoadReport.of(3, 0, 0.99);
    ctx.loadAge[0] = 0;
    s.score(ctx);
    assertThat(ctx.best()).as("saturated pin yields").isEqualTo(1);
    s.onRouted(ctx, ctx.best());
    ctx.loads[0] = null;
    ctx.loadAge[0] = -1;
    ctx.pending[1] = 1_000_000; // b1 now much worse than b0
    s.score(ctx);
    assertThat(ctx.best()).as("pin yields when much worse").isEqualTo(0);
  }

  @Test
  void balanceMovesAPinnedSessionOnlyWhenAllowedTo() {
    assertThat(
            sessionAfterBalancePressure(
                EstimatedTtftScorer.builder().calibrate(false).balanceMovesSessions(true)))
        .as("balanceMovesSessions(true): the balance penalty on its overloaded holder moves it")
        .isEqualTo(1);
    assertThat(sessionAfterBalancePressure(EstimatedTtftScorer.builder().calibrate(false)))
        .as("default (balanceMovesSessions(false)): only time moves it, and b0 is the faster")
        .isEqualTo(0);
    assertThat(
            sessionAfterBalancePressure(
                EstimatedTtftScorer.builder().calibrate(false).balanceMovesSessions(false)))
        .isEqualTo(0);
    // a pin that is much slower in time still yields with balanceMovesSessions(false)
    EstimatedTtftScorer s =
        EstimatedTtftScorer.builder().calibrate(false).balanceMovesSessions(false).build();
    FakeContext ctx = heldOnB0(s);
    ctx.pending[0] = 1_000_000; // a long prefill queue on the holder
    s.score(ctx);
    assertThat(ctx.best()).isEqualTo(1);
  }

  /**
   * b0 holds a session's whole prompt and took 2,000 decisions of its prefix group (twice its fair
   * share); where does the pinned session's next request go?
   */
  private static int sessionAfterBalancePressure(EstimatedTtftScorer.Builder builder) {
    EstimatedTtftScorer s = builder.build();
    FakeContext ctx = heldOnB0(s);
    s.score(ctx);
    return ctx.best();
  }

  private static FakeContext heldOnB0(EstimatedTtftScorer s) {
    FakeContext ctx = new FakeContext(2);
    ctx.keys = new long[64];
    java.util.Arrays.fill(ctx.keys, 7L);
    ctx.matchedBlocks[0] = 64;
    for (int i = 0; i < 2_000; i++) {
      s.onRouted(ctx, 0); // decisions recorded without scoring: no balance replica made yet
    }
    ctx.request = RouteRequest.builder("t", "m").session("chat-1").build();
    s.onRouted(ctx, 0); // the session's earlier request went to b0
    ctx.now += 10_000_000_000L; // its next one 10 s later (not a parallel sibling)
    return ctx;
  }

  @Test
  void aHotPrefixThatOverloadsItsHolderIsReplicatedButAColdOneIsNot() {
    EstimatedTtftScorer s = EstimatedTtftScorer.builder().calibrate(false).build();
    FakeContext hot = new FakeContext(2);
    hot.promptTokens = 1024;
    hot.keys = new long[64];
    java.util.Arrays.fill(hot.keys, 7L);
    hot.matchedBlocks[0] = 64; // held on b0 only
    int toB1 = 0;
    for (int i = 0; i < 2_000; i++) {
      s.score(hot);
      s.onRouted(hot, hot.best());
      if (hot.best() == 1) {
        toB1++;
      }
    }
    assertThat(toB1).as("hot prefix spills once b0 carries far more than its share").isPositive();
    EstimatedTtftScorer t = EstimatedTtftScorer.builder().calibrate(false).build();
    // b0 overloaded by many distinct prefixes, each a small share; a cold prefix stays put
    FakeContext many = new FakeContext(2);
    many.promptTokens = 1024;
    many.keys = new long[64];
    many.matchedBlocks[0] = 64;
    for (int i = 0; i < 2_000; i++) {
      java.util.Arrays.fill(many.keys, 1_000L + i);
      t.score(many);
      t.onRouted(many, 0); // pretend b0 took them all
    }
    java.util.Arrays.fill(many.keys, 99L);
    t.score(many);
    assertThat(many.best()).as("a prefix with a tiny share is not moved").isEqualTo(0);
  }

  @Test
  void replicasMadeForBalanceArePacedPerTargetBackend() {
    assertThat(replicasOntoTheIdleBackend(EstimatedTtftScorer.builder().calibrate(false)))
        .as("default: one new group per 300 decisions onto b1, the others stay on b0")
        .isEqualTo(1);
    assertThat(
            replicasOntoTheIdleBackend(
                EstimatedTtftScorer.builder().calibrate(false).balanceReplicaInterval(0)))
        .as("pacing off: every overloaded group stampedes onto b1")
        .isEqualTo(4);
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().balanceReplicaInterval(-1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("balanceReplicaInterval");
  }

  /**
   * {@code bandKeepsIdenticalCopies}: a holder whose queued prefill makes it tie with a cold idle
   * backend keeps the request (no copy of its prefix onto the idle one) while some candidate has a
   * prefill queued; with nothing queued anywhere (here the holder is as slow for its running
   * decodes) the band goes to fewer open leases as before.
   */
  @Test
  void aNearTieStaysWithTheHolderOnlyWhileTheFleetShowsAQueue() {
    assertThat(EstimatedTtftScorer.builder().build().bandKeepsIdenticalCopies()).isTrue();
    assertThat(nearTieChoice(false, true, 1040)).as("off: fewer open leases").isEqualTo(1);
    assertThat(nearTieChoice(true, true, 1040)).as("kept with the holder").isEqualTo(0);
    assertThat(nearTieChoice(true, false, 1040)).as("nothing queued: as before").isEqualTo(1);
    assertThat(nearTieChoice(true, true, 1100))
        .as("not an identical copy (60 tokens of its own): as before")
        .isEqualTo(1);
  }

  private static int nearTieChoice(boolean keep, boolean holderQueued, int prompt) {
    EstimatedTtftScorer s =
        EstimatedTtftScorer.builder()
            .calibrate(false)
            .prefixAffinity(0, 1) // the band alone decides
            .bandKeepsIdenticalCopies(keep)
            .build();
    FakeContext ctx = new FakeContext(2);
    ctx.promptTokens = prompt;
    ctx.keys = new long[prompt / 16];
    ctx.matchedBlocks[0] = 64; // b0 holds the first 1,024 tokens; b1 is cold and idle
    if (holderQueued) {
      // a sibling's prefill queued: about the cold prefill's time on b1
      ctx.pending[0] = prompt == 1040 ? 1_041 : 966;
      ctx.inFlight[0] = 1;
    } else {
      ctx.decodes[0] = 36; // as slow, for its running decodes: nothing queued anywhere
      ctx.inFlight[0] = 36;
    }
    s.score(ctx);
    assertThat(Math.abs(ctx.costs[0] - ctx.costs[1]))
        .as("a near tie (costs %s)", java.util.Arrays.toString(ctx.costs))
        .isLessThan(1.0);
    return ctx.best();
  }

  /**
   * b0 took 2,000 decisions for four prefix groups held only there (each half a backend's fair
   * load); then one request of each group is scored: how many go to b1, which holds none of them?
   */
  private static int replicasOntoTheIdleBackend(EstimatedTtftScorer.Builder builder) {
    EstimatedTtftScorer s = builder.build();
    FakeContext ctx = new FakeContext(2);
    ctx.promptTokens = 1024;
    ctx.keys = new long[64];
    ctx.matchedBlocks[0] = 64;
    for (int i = 0; i < 2_000; i++) {
      java.util.Arrays.fill(ctx.keys, 1 + i % 4);
      s.onRouted(ctx, 0); // recorded without scoring: b0 was the only backend then
    }
    int toB1 = 0;
    for (int g = 1; g <= 4; g++) {
      java.util.Arrays.fill(ctx.keys, g);
      s.score(ctx);
      int chosen = ctx.best();
      s.onRouted(ctx, chosen);
      toB1 += chosen;
    }
    return toB1;
  }

  @Test
  void calibrationConvergesToTheTrueCoefficientsDespiteNoiseAndOutliers() {
    TtftCoefficients truth = new TtftCoefficients(25.0, 0.04, 1.5e-6, 2.0, 50);
    EstimatedTtftScorer s =
        EstimatedTtftScorer.builder()
            .calibrateIntercept(true)
            .minObservations(50)
            .forgetting(0.999)
            .build();
    SplittableRandom rnd = new SplittableRandom(1);
    for (int i = 0; i < 5_000; i++) {
      s.onFirstToken(synthetic(truth, rnd, true));
    }
    TtftCoefficients fit = s.coefficients(0);
    assertThat(fit.alphaMs()).isCloseTo(25.0, within(10.0));
    assertThat(fit.betaMsPerToken()).isCloseTo(0.04, within(0.004));
    assertThat(fit.gammaMsPerToken2()).isCloseTo(1.5e-6, within(0.5e-6));
    assertThat(fit.decodeMsPerRunning()).isCloseTo(2.0, within(0.6));
    assertThat(s.describe(0)).containsEntry("observations", 5000.0);
    // slot 1 has no first tokens: it uses the fleet's fit (of slot 0's first tokens)
    assertThat(s.coefficients(1).betaMsPerToken()).isCloseTo(0.04, within(0.004));
  }

  /**
   * One huge first token (a cold start: 30 s) does not hold the fit back: it seeded the residual
   * scale with itself, so every later residual looked small and the fit took ~1,000 first tokens to
   * publish instead of ~50.
   */
  @Test
  void aHugeFirstTokenDoesNotHoldTheFitBack() {
    assertThat(firstTokensUntilFitted(false)).isLessThan(200);
    assertThat(firstTokensUntilFitted(true)).isLessThanOrEqualTo(4 * firstTokensUntilFitted(false));
  }

  /**
   * A first token on backend 0 whose TTFT follows {@code truth} for a random request and backend
   * state, with 5 % noise, and (with {@code outliers}) a tenfold outlier one time in twenty.
   */
  private static FirstTokenObservation synthetic(
      TtftCoefficients truth, SplittableRandom rnd, boolean outliers) {
    int prompt = 64 + rnd.nextInt(8_000);
    int matched = rnd.nextInt(prompt + 1);
    long queued = rnd.nextInt(20_000);
    int running = rnd.nextInt(40);
    int u = prompt - matched;
    double ms =
        truth.alphaMs()
            + truth.betaMsPerToken() * (u + queued)
            + truth.gammaMsPerToken2() * u * (double) (u + matched)
            + truth.decodeMsPerRunning() * running;
    ms *= 1 + 0.05 * rnd.nextGaussian(); // 5 % noise
    if (outliers && rnd.nextInt(20) == 0) {
      ms *= 10; // 5 % outliers (GC pause, preemption)
    }
    return new FirstTokenObservation(0, (long) (ms * 1e6), prompt, matched, queued, running, 0);
  }

  private static int firstTokensUntilFitted(boolean coldStart) {
    TtftCoefficients truth = new TtftCoefficients(25.0, 0.04, 1.5e-6, 2.0, 50);
    EstimatedTtftScorer s = EstimatedTtftScorer.builder().build();
    SplittableRandom rnd = new SplittableRandom(5);
    if (coldStart) {
      s.onFirstToken(new FirstTokenObservation(0, 30_000_000_000L, 1_000, 0, 0, 0, 0));
    }
    for (int i = 1; i <= 5_000; i++) {
      s.onFirstToken(synthetic(truth, rnd, false));
      if (s.describe(0).get("fitted") == 1.0) {
        return i;
      }
    }
    return Integer.MAX_VALUE;
  }

  @Test
  void calibrationKeepsThePriorsWhenTheTtftCarriesNoSignalOfThePrompt() {
    EstimatedTtftScorer s = EstimatedTtftScorer.builder().minObservations(20).build();
    SplittableRandom rnd = new SplittableRandom(3);
    for (int i = 0; i < 5_000; i++) {
      int prompt = 64 + rnd.nextInt(8_000);
      int matched = rnd.nextInt(prompt + 1);
      double ms = i % 2 == 0 ? 40 : 20 + 40 * rnd.nextDouble(); // a host's delay, not the prompt's
      s.onFirstToken(
          new FirstTokenObservation(
              0, (long) (ms * 1e6), prompt, matched, rnd.nextInt(9_000), 3, 0));
    }
    assertThat(s.coefficients(0)).isEqualTo(TtftCoefficients.DEFAULTS);
    assertThat(s.describe(0)).containsEntry("fitted", 0.0).containsEntry("observations", 5000.0);
    assertThat(s.describe(0).get("signalT")).isLessThan(2.5);
    // a constant TTFT (e.g. every first token reported at once) has no variance: no signal either
    for (int i = 0; i < 500; i++) {
      s.onFirstToken(new FirstTokenObservation(1, 0, 100 + rnd.nextInt(8_000), 0, 0, 0, 0));
    }
    assertThat(s.coefficients(1)).isEqualTo(TtftCoefficients.DEFAULTS);
  }

  /**
   * A TTFT that follows the backend's load but not the prompt (40 ms + 3 ms per running decode): it
   * correlated with the priors' whole estimate (decode·running is part of it), so the gate passed
   * and β was published at its floor (prefill nearly free, prefix affinity lost).
   */
  @Test
  void calibrationKeepsThePriorsWhenTheTtftFollowsTheLoadButNotThePrompt() {
    EstimatedTtftScorer s = EstimatedTtftScorer.builder().minObservations(20).build();
    SplittableRandom rnd = new SplittableRandom(18);
    int fitted = 0;
    double minBeta = TtftCoefficients.DEFAULTS.betaMsPerToken();
    for (int i = 0; i < 5_000; i++) {
      int prompt = 64 + rnd.nextInt(8_000 - 64 + 1);
      int matched = rnd.nextInt(prompt + 1);
      int running = rnd.nextInt(61);
      double ms = 40 + 3 * running + 5 * rnd.nextGaussian();
      s.onFirstToken(
          new FirstTokenObservation(0, (long) (ms * 1e6), prompt, matched, 0, running, 0));
      if (s.describe(0).get("fitted") == 1.0) {
        fitted++;
        minBeta = Math.min(minBeta, s.coefficients(0).betaMsPerToken());
      }
    }
    assertThat(fitted).as("first tokens after which a fit was published").isZero();
    assertThat(minBeta).isEqualTo(TtftCoefficients.DEFAULTS.betaMsPerToken());
    assertThat(s.describe(0)).containsEntry("fitted", 0.0).containsEntry("observations", 5000.0);
    assertThat(s.coefficients(0)).isEqualTo(TtftCoefficients.DEFAULTS);
    assertThat(s.describe(0).get("signalT")).isLessThan(4.0);
  }

  @Test
  void calibrationFollowsASlowerBackendAndStaysWithinTheBand() {
    TtftCoefficients p = TtftCoefficients.DEFAULTS;
    // two backends 50x apart are also outside any fleet band
    EstimatedTtftScorer s = priorsBandOnly();
    SplittableRandom rnd = new SplittableRandom(4);
    for (int i = 0; i < 3_000; i++) {
      int prompt = 100 + rnd.nextInt(8_000);
      int matched = rnd.nextInt(prompt + 1);
      // slot 0 twice as slow as the priors; slot 1 a hundred times: beyond the band
      double ms0 = 2 * p.prefillMs(prompt - matched, matched) * (1 + 0.1 * rnd.nextGaussian());
      double ms1 = 100 * p.prefillMs(prompt - matched, matched);
      s.onFirstToken(obs(0, ms0, prompt, matched));
      s.onFirstToken(obs(1, ms1, prompt, matched));
    }
    assertThat(s.describe(0)).containsEntry("fitted", 1.0);
    assertThat(s.describe(0).get("signalT")).isGreaterThan(4.0);
    assertThat(s.coefficients(0).betaMsPerToken()).isCloseTo(2 * p.betaMsPerToken(), within(0.004));
    assertThat(s.coefficients(1).betaMsPerToken()).isEqualTo(8 * p.betaMsPerToken());
    assertThat(s.coefficients(1).gammaMsPerToken2()).isLessThanOrEqualTo(8 * p.gammaMsPerToken2());
    EstimatedTtftScorer pinned =
        EstimatedTtftScorer.builder().minObservations(20).calibrationBand(1).build();
    for (int i = 0; i < 1_000; i++) {
      int prompt = 100 + rnd.nextInt(8_000);
      double ms = 50 + 0.5 * p.prefillMs(prompt, 0);
      pinned.onFirstToken(new FirstTokenObservation(0, (long) (ms * 1e6), prompt, 0, 0, 0, 0));
    }
    assertThat(pinned.coefficients(0).betaMsPerToken()).isEqualTo(p.betaMsPerToken());
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().calibrationBand(0.5))
        .hasMessageContaining("calibrationBand");
  }

  /** Feeds slot {@code slot} TTFTs of {@code factor} times the priors' prefill (10 % noise). */
  private static void feed(EstimatedTtftScorer s, int slot, double factor, int n, long seed) {
    TtftCoefficients p = TtftCoefficients.DEFAULTS;
    SplittableRandom rnd = new SplittableRandom(seed);
    for (int i = 0; i < n; i++) {
      int prompt = 100 + rnd.nextInt(8_000);
      int matched = rnd.nextInt(prompt + 1);
      double ms = factor * p.prefillMs(prompt - matched, matched) * (1 + 0.1 * rnd.nextGaussian());
      s.onFirstToken(new FirstTokenObservation(slot, (long) (ms * 1e6), prompt, matched, 0, 0, 0));
    }
  }

  /**
   * Default scope (BACKEND with the fleet band): a backend with no fit of its own (here: no first
   * token yet) is priced with the fleet's published fit, not the priors (it got the priors, 3× too
   * cheap here, and drew the traffic).
   */
  @Test
  void aBackendWithoutItsOwnFitUsesTheFleetsFit() {
    EstimatedTtftScorer backend = EstimatedTtftScorer.builder().minObservations(20).build();
    EstimatedTtftScorer fleet =
        EstimatedTtftScorer.builder()
            .minObservations(20)
            .calibrationScope(CalibrationScope.FLEET)
            .build();
    for (int round = 0; round < 500; round++) {
      for (int slot = 0; slot < 4; slot++) {
        feed(backend, slot, 3, 1, 100L * round + slot);
        feed(fleet, slot, 3, 1, 100L * round + slot); // the same first tokens: the same fleet fit
      }
    }
    backend.addBackend(4, dev.prefixrouter.api.Backend.of("b4", "m"));
    TtftCoefficients fleetFit = fleet.coefficients(4);
    assertThat(fleetFit.betaMsPerToken())
        .isGreaterThan(2 * TtftCoefficients.DEFAULTS.betaMsPerToken());
    assertThat(backend.coefficients(4)).isEqualTo(fleetFit);
    assertThat(backend.describe(4))
        .containsEntry("fitted", 1.0)
        .containsEntry("fleetFitInUse", 1.0)
        .as("the backend's own statistics, not the fleet's")
        .containsEntry("observations", 0.0)
        .containsEntry("signalT", 0.0);
    assertThat(backend.describe(0))
        .containsEntry("fleetFitInUse", 0.0)
        .containsEntry("observations", 500.0);
    FakeContext a = new FakeContext(5);
    FakeContext b = new FakeContext(5);
    a.promptTokens = 4096;
    b.promptTokens = 4096;
    backend.score(a);
    fleet.score(b);
    assertThat(a.cost(4)).as("the routing path too").isEqualTo(b.cost(4));
  }

  /**
   * The fleet band was multiplicative around the fleet's value: a fleet coefficient fitted to 0
   * (here the decode cost: three backends' TTFTs fall with running decodes) bounded every backend's
   * to [0, 0], so a backend that pays 2 ms per running decode was published at 0. Its upper bound
   * now starts from the priors' band floor.
   */
  @Test
  void aFleetCoefficientAtZeroDoesNotPinEveryBackendsAtZero() {
    TtftCoefficients p = TtftCoefficients.DEFAULTS;
    EstimatedTtftScorer s = EstimatedTtftScorer.builder().minObservations(20).build();
    SplittableRandom rnd = new SplittableRandom(5);
    for (int round = 0; round < 1_500; round++) {
      for (int slot = 0; slot < 4; slot++) {
        int prompt = 100 + rnd.nextInt(8_000);
        int matched = rnd.nextInt(prompt + 1);
        int running = rnd.nextInt(40);
        double ms = p.prefillMs(prompt - matched, matched) + (slot < 3 ? -2 : 2) * running;
        ms = Math.max(1, ms * (1 + 0.05 * rnd.nextGaussian()));
        s.onFirstToken(
            new FirstTokenObservation(slot, (long) (ms * 1e6), prompt, matched, 0, running, 0));
      }
    }
    assertThat(s.describe(0)).containsEntry("fitted", 1.0);
    assertThat(s.describe(3)).containsEntry("fitted", 1.0);
    assertThat(s.coefficients(0).decodeMsPerRunning()).isZero(); // as the fleet's
    double d3 = s.coefficients(3).decodeMsPerRunning();
    assertThat(d3).isGreaterThan(0).isLessThanOrEqualTo(2 * p.decodeMsPerRunning() / 8);
  }

  @Test
  void fleetScopeFitsOneModelForEveryBackend() {
    TtftCoefficients p = TtftCoefficients.DEFAULTS;
    EstimatedTtftScorer s =
        EstimatedTtftScorer.builder()
            .calibrateIntercept(true)
            .minObservations(20)
            .calibrationScope(CalibrationScope.FLEET)
            .build();
    feed(s, 0, 2, 2_000, 5);
    feed(s, 1, 2, 2_000, 6);
    // slot 2 never reported a first token: it still gets the fleet's fit
    assertThat(s.coefficients(2)).isEqualTo(s.coefficients(0)).isEqualTo(s.coefficients(1));
    assertThat(s.coefficients(2).betaMsPerToken()).isCloseTo(2 * p.betaMsPerToken(), within(0.004));
    assertThat(s.describe(2)).containsEntry("fitted", 1.0).containsEntry("observations", 4000.0);
  }

  @Test
  void hierarchicalScopeKeepsTheFleetFitUnlessABackendsOwnFitPredictsItBetter() {
    TtftCoefficients p = TtftCoefficients.DEFAULTS;
    EstimatedTtftScorer same =
        EstimatedTtftScorer.builder()
            .calibrateIntercept(true)
            .minObservations(20)
            .calibrationScope(CalibrationScope.HIERARCHICAL)
            .build();
    EstimatedTtftScorer mixed =
        EstimatedTtftScorer.builder()
            .calibrateIntercept(true)
            .minObservations(20)
            .calibrationScope(CalibrationScope.HIERARCHICAL)
            .build();
    // seven backends twice as slow as the priors; in the mixed fleet slot 6 six times; the
    // backends' first tokens interleave, as they do in a fleet
    for (int round = 0; round < 2_000; round++) {
      for (int slot = 0; slot < 7; slot++) {
        feed(same, slot, 2, 1, 100L * round + slot);
        feed(mixed, slot, slot == 6 ? 6 : 2, 1, 100L * round + slot);
      }
    }
    TtftCoefficients fleet = same.coefficients(7); // no observations of its own
    assertThat(fleet.betaMsPerToken()).isCloseTo(2 * p.betaMsPerToken(), within(0.004));
    for (int slot = 0; slot < 7; slot++) {
      assertThat(same.coefficients(slot)).isEqualTo(fleet);
    }
    assertThat(mixed.coefficients(6).betaMsPerToken())
        .isCloseTo(6 * p.betaMsPerToken(), within(0.012));
    assertThat(mixed.describe(6).get("fitErrorRatio")).isLessThan(0.9);
    for (int slot = 0; slot < 6; slot++) {
      assertThat(mixed.coefficients(slot).betaMsPerToken())
          .isLessThan(mixed.coefficients(6).betaMsPerToken() / 2);
    }
  }

  /**
   * A scorer of {@code scope} fed 1,500 rounds of first tokens: slots 0-3 at the priors' speed, 4-7
   * twice as slow (10 % noise), interleaved as in a fleet.
   */
  private static EstimatedTtftScorer halfTwiceAsSlow(CalibrationScope scope) {
    EstimatedTtftScorer s =
        EstimatedTtftScorer.builder()
            .calibrateIntercept(true)
            .minObservations(20)
            .calibrationScope(scope)
            .build();
    for (int round = 0; round < 1_500; round++) {
      for (int slot = 0; slot < 8; slot++) {
        feed(s, slot, slot < 4 ? 1 : 2, 1, 100L * round + slot);
      }
    }
    return s;
  }

  /**
   * A speed factor that scales a fit near a coefficient's hard bound past it: the scorer routes on
   * the scaled value, and its report shows the bound (building the report's record threw, and so
   * did every {@code inspect()}).
   */
  @Test
  void aReportOfCoefficientsScaledPastTheirBoundDoesNotThrow() {
    for (CalibrationScope scope :
        new CalibrationScope[] {CalibrationScope.FLEET_SCALED, CalibrationScope.IDLE_SPEED}) {
      TtftCoefficients slow = new TtftCoefficients(6, 9.5, 0, 0.5, 10);
      EstimatedTtftScorer s =
          EstimatedTtftScorer.builder()
              .coefficients(slow)
              .minObservations(20)
              .calibrationScope(scope)
              .build();
      SplittableRandom rnd = new SplittableRandom(3);
      for (int round = 0; round < 400; round++) {
        for (int slot = 0; slot < 4; slot++) {
          int prompt = 100 + rnd.nextInt(400);
          double ms = (slot < 2 ? 1 : 3) * slow.prefillMs(prompt, 0);
          s.onFirstToken(new FirstTokenObservation(slot, (long) (ms * 1e6), prompt, 0, 0, 0, 0));
        }
      }
      for (int slot = 0; slot < 4; slot++) {
        assertThat(s.coefficients(slot).betaMsPerToken())
            .as("%s slot %d", scope, slot)
            .isBetween(1e-6, 10.0);
        assertThat(s.describe(slot)).containsKey("betaMsPerToken");
      }
    }
  }

  /**
   * A fleet fit held at the band's edge (8× the prior β) times a speed factor above 1 was used as
   * is, up to 64× the prior, though the calibration band is 8×: the scaled coefficients are held
   * within the band, on the routing path and in the report.
   */
  @Test
  void speedScaledCoefficientsStayWithinTheCalibrationBand() {
    TtftCoefficients p = TtftCoefficients.DEFAULTS;
    for (CalibrationScope scope :
        new CalibrationScope[] {CalibrationScope.FLEET_SCALED, CalibrationScope.IDLE_SPEED}) {
      EstimatedTtftScorer s =
          EstimatedTtftScorer.builder().minObservations(20).calibrationScope(scope).build();
      for (int round = 0; round < 1_000; round++) {
        for (int slot = 0; slot < 4; slot++) {
          feed(s, slot, slot < 3 ? 10 : 40, 1, 100L * round + slot); // fleet fit past the band
        }
      }
      assertThat(s.describe(3).get("speedFactor")).as("%s", scope).isGreaterThan(1.5);
      TtftCoefficients k = s.coefficients(3);
      assertThat(k.betaMsPerToken()).as("%s", scope).isLessThanOrEqualTo(8 * p.betaMsPerToken());
      assertThat(k.gammaMsPerToken2()).isLessThanOrEqualTo(8 * p.gammaMsPerToken2());
      assertThat(k.alphaMs()).isLessThanOrEqualTo(8 * p.alphaMs());
      FakeContext ctx = new FakeContext(4);
      ctx.promptTokens = 4096;
      s.score(ctx);
      assertThat(ctx.cost(3))
          .as("%s routes on them", scope)
          .isCloseTo(k.prefillMs(4096, 0), within(1e-9));
    }
  }

  /**
   * First tokens that carry no prefix signal leave the fleet at its priors; the speed factors
   * learned from them all the same (a factor over the priors of the host's delay), now not.
   */
  @Test
  void speedFactorsDoNotLearnWhileTheFleetHasNoPrefixSignal() {
    for (CalibrationScope scope :
        new CalibrationScope[] {CalibrationScope.FLEET_SCALED, CalibrationScope.IDLE_SPEED}) {
      EstimatedTtftScorer s =
          EstimatedTtftScorer.builder().minObservations(20).calibrationScope(scope).build();
      SplittableRandom rnd = new SplittableRandom(21);
      for (int round = 0; round < 1_000; round++) {
        for (int slot = 0; slot < 4; slot++) {
          int prompt = 100 + rnd.nextInt(8_000);
          int matched = rnd.nextInt(prompt + 1);
          // a host's delay, not the prompt's: slot 3's host waits five times as long
          double ms = (slot < 3 ? 1 : 5) * (200 + 200 * rnd.nextDouble());
          s.onFirstToken(
              new FirstTokenObservation(slot, (long) (ms * 1e6), prompt, matched, 0, 0, 0));
        }
      }
      assertThat(s.describe(3)).as("%s", scope).containsEntry("fitted", 0.0);
      assertThat(s.describe(3)).as("%s", scope).containsEntry("speedFactor", 1.0);
      assertThat(s.coefficients(3)).as("%s", scope).isEqualTo(TtftCoefficients.DEFAULTS);
    }
  }

  @Test
  void fleetScaledScopeLearnsOneSpeedPerBackendOverTheFleetsShape() {
    TtftCoefficients p = TtftCoefficients.DEFAULTS;
    EstimatedTtftScorer s = halfTwiceAsSlow(CalibrationScope.FLEET_SCALED);
    for (int slot = 0; slot < 8; slot++) {
      double speed = s.describe(slot).get("speedFactor");
      double beta = s.coefficients(slot).betaMsPerToken();
      // the fleet's fit is the mix (about 1.5x); each slot's factor scales it to its own speed
      assertThat(beta).isCloseTo((slot < 4 ? 1 : 2) * p.betaMsPerToken(), within(0.15 * beta));
      assertThat(s.describe(slot).get("betaMsPerToken")).isEqualTo(beta);
      assertThat(speed).isBetween(slot < 4 ? 0.55 : 1.1, slot < 4 ? 0.9 : 1.6);
    }
    // a backend with no first tokens of its own gets the fleet's fit unscaled
    assertThat(s.describe(8)).containsEntry("speedFactor", 1.0);
    assertThat(s.coefficients(8)).isEqualTo(s.coefficients(8)); // stable, no factor learnt
    s.removeBackend(5);
    assertThat(s.describe(5)).containsEntry("speedFactor", 1.0);
  }

  /**
   * An equal fleet whose backends 4-7 absorbed queueing the cost model leaves out: half of each
   * backend's first tokens start idle (no prefill queued, TTFT = the priors' prefill), the other
   * half were routed behind a queue and, on backends 4-7, waited 3x what the queue's prefill costs.
   */
  private static void feedEqualFleetUnevenQueues(EstimatedTtftScorer s, int rounds) {
    TtftCoefficients p = TtftCoefficients.DEFAULTS;
    SplittableRandom rnd = new SplittableRandom(11);
    for (int round = 0; round < rounds; round++) {
      for (int slot = 0; slot < 8; slot++) {
        int prompt = 100 + rnd.nextInt(8_000);
        int matched = rnd.nextInt(prompt + 1);
        long queued = rnd.nextBoolean() ? 0 : 1 + rnd.nextInt(16_000);
        double ms =
            p.prefillMs(prompt - matched, matched) * (1 + 0.1 * rnd.nextGaussian())
                + (slot < 4 ? 1 : 3) * p.betaMsPerToken() * queued;
        s.onFirstToken(
            new FirstTokenObservation(slot, (long) (ms * 1e6), prompt, matched, queued, 0, 0));
      }
    }
  }

  @Test
  void idleSpeedScopeKeepsAnEqualFleetOnOneFitWhateverQueueingEachAbsorbed() {
    EstimatedTtftScorer idle =
        EstimatedTtftScorer.builder()
            .minObservations(20)
            .calibrationScope(CalibrationScope.IDLE_SPEED)
            .build();
    EstimatedTtftScorer own = EstimatedTtftScorer.builder().minObservations(20).build();
    feedEqualFleetUnevenQueues(idle, 1_500);
    feedEqualFleetUnevenQueues(own, 1_500);
    // per-backend fits tell the two halves apart by the queueing they absorbed
    assertThat(own.coefficients(4).betaMsPerToken())
        .isGreaterThan(1.5 * own.coefficients(0).betaMsPerToken());
    TtftCoefficients fleet = idle.coefficients(8); // no first tokens of its own
    for (int slot = 0; slot < 8; slot++) {
      assertThat(idle.describe(slot)).containsEntry("speedFactor", 1.0);
      assertThat(idle.coefficients(slot)).isEqualTo(fleet);
    }
  }

  @Test
  void idleSpeedScopeDetectsABackendTwiceAsSlowOnIdleStarts() {
    TtftCoefficients p = TtftCoefficients.DEFAULTS;
    EstimatedTtftScorer s = halfTwiceAsSlow(CalibrationScope.IDLE_SPEED);
    double fleet = s.coefficients(8).betaMsPerToken(); // the mix, about 1.5x
    assertThat(s.describe(8)).containsEntry("speedFactor", 1.0);
    for (int slot = 0; slot < 8; slot++) {
      double speed = s.describe(slot).get("speedFactor");
      assertThat(speed).isBetween(slot < 4 ? 0.55 : 1.15, slot < 4 ? 0.85 : 1.6);
      assertThat(s.coefficients(slot).betaMsPerToken())
          .isCloseTo(fleet * speed, within(1e-9 * fleet))
          .isCloseTo((slot < 4 ? 1 : 2) * p.betaMsPerToken(), within(0.2 * fleet));
    }
    s.removeBackend(5);
    assertThat(s.describe(5)).containsEntry("speedFactor", 1.0);
    // a 10 % difference is below the default margin: one fit
    EstimatedTtftScorer near =
        EstimatedTtftScorer.builder()
            .calibrateIntercept(true)
            .minObservations(20)
            .calibrationScope(CalibrationScope.IDLE_SPEED)
            .build();
    for (int round = 0; round < 1_500; round++) {
      for (int slot = 0; slot < 8; slot++) {
        feed(near, slot, slot < 4 ? 1 : 1.1, 1, 100L * round + slot);
      }
    }
    for (int slot = 0; slot < 8; slot++) {
      assertThat(near.describe(slot)).containsEntry("speedFactor", 1.0);
    }
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().calibrateIntercept(true).speedMargin(0))
        .hasMessage("speedMargin must be in (0, 10], was 0.0");
  }

  @Test
  void shrunkScopeWeighsEachBackendsOwnFitByItsDecayingEvidence() {
    TtftCoefficients p = TtftCoefficients.DEFAULTS;
    EstimatedTtftScorer s = halfTwiceAsSlow(CalibrationScope.SHRUNK);
    double fleet = s.coefficients(8).betaMsPerToken(); // no first tokens of its own
    assertThat(fleet).isBetween(1.2 * p.betaMsPerToken(), 1.8 * p.betaMsPerToken());
    for (int slot = 0; slot < 8; slot++) {
      // one first token in eight, forgotten at 0.995 per fleet first token: n = 25, w = 25/45
      double w = s.describe(slot).get("ownWeight");
      assertThat(w).isCloseTo(25.0 / 45, within(0.02));
      double own = (slot < 4 ? 1 : 2) * p.betaMsPerToken();
      assertThat(s.coefficients(slot).betaMsPerToken())
          .isCloseTo(fleet + w * (own - fleet), within(0.1 * own));
    }
    // slot 0 gets no more traffic: its own fit fades out and it is priced with the fleet's fit
    for (int round = 0; round < 300; round++) {
      for (int slot = 1; slot < 8; slot++) {
        feed(s, slot, slot < 4 ? 1 : 2, 1, 7_000L * round + slot);
      }
    }
    assertThat(s.describe(0).get("ownWeight")).isLessThan(0.001);
    assertThat(s.coefficients(0).betaMsPerToken())
        .isCloseTo(s.coefficients(8).betaMsPerToken(), within(1e-3 * fleet));
    assertThat(s.describe(8)).containsEntry("ownWeight", 0.0);
    EstimatedTtftScorer own =
        EstimatedTtftScorer.builder()
            .minObservations(20)
            .calibrationScope(CalibrationScope.SHRUNK)
            .backendShrinkage(0)
            .build();
    feed(own, 0, 1, 500, 3);
    feed(own, 1, 2, 500, 4);
    assertThat(own.coefficients(1).betaMsPerToken())
        .isCloseTo(2 * p.betaMsPerToken(), within(0.15 * 2 * p.betaMsPerToken()));
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().backendShrinkage(-1))
        .hasMessage("backendShrinkage must be in [0, 10000], was -1.0");
  }

  @Test
  void speedShrinkageKeepsAFewObservationsNearTheFleet() {
    EstimatedTtftScorer loose =
        EstimatedTtftScorer.builder()
            .calibrationScope(CalibrationScope.FLEET_SCALED)
            .speedShrinkage(0)
            .build();
    EstimatedTtftScorer tight =
        EstimatedTtftScorer.builder()
            .calibrationScope(CalibrationScope.FLEET_SCALED)
            .speedShrinkage(1_000)
            .build();
    feed(loose, 0, 3, 5, 11); // five first tokens three times slower than the priors
    feed(tight, 0, 3, 5, 11);
    assertThat(loose.describe(0).get("speedFactor")).isGreaterThan(2.4);
    assertThat(tight.describe(0).get("speedFactor")).isBetween(1.0, 1.02);
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().speedShrinkage(-1))
        .hasMessage("speedShrinkage must be in [0, 10000], was -1.0");
  }

  @Test
  void theAdvantageGateKeepsThePriorsWhileTheFitPredictsNoBetter() {
    TtftCoefficients p = TtftCoefficients.DEFAULTS;
    EstimatedTtftScorer gated =
        EstimatedTtftScorer.builder()
            .calibrateIntercept(true)
            .minObservations(20)
            .calibrationAdvantage(0.1)
            .build();
    feed(gated, 0, 1, 3_000, 7); // the priors are right: a fit cannot beat them by 10 %
    feed(gated, 1, 2, 3_000, 8); // twice as slow: the fit beats the priors by far
    assertThat(gated.coefficients(0)).isEqualTo(p);
    assertThat(gated.describe(0)).containsEntry("fitted", 0.0);
    assertThat(gated.coefficients(1).betaMsPerToken())
        .isCloseTo(2 * p.betaMsPerToken(), within(0.004));
    assertThatThrownBy(
            () -> EstimatedTtftScorer.builder().calibrateIntercept(true).calibrationAdvantage(0.95))
        .hasMessageContaining("calibrationAdvantage");
  }

  @Test
  void withoutTheInterceptTheConstantStaysThePriors() {
    TtftCoefficients p = TtftCoefficients.DEFAULTS;
    EstimatedTtftScorer s =
        EstimatedTtftScorer.builder().minObservations(20).calibrateIntercept(false).build();
    SplittableRandom rnd = new SplittableRandom(9);
    for (int i = 0; i < 3_000; i++) {
      int prompt = 100 + rnd.nextInt(8_000);
      double ms = 40 + 2 * p.prefillMs(prompt, 0); // a 40 ms constant the model may not learn
      s.onFirstToken(new FirstTokenObservation(0, (long) (ms * 1e6), prompt, 0, 0, 0, 0));
    }
    assertThat(s.coefficients(0).alphaMs()).isEqualTo(p.alphaMs());
    assertThat(s.describe(0)).containsEntry("fitted", 1.0);
    assertThat(s.coefficients(0).betaMsPerToken()).isGreaterThan(p.betaMsPerToken());
  }

  @Test
  void theFittedConstantIsPublishedOnlyWithinTheBand() {
    TtftCoefficients p = TtftCoefficients.DEFAULTS;
    EstimatedTtftScorer s = priorsBandOnly(); // the fleet band is tested below
    SplittableRandom rnd = new SplittableRandom(11);
    for (int i = 0; i < 3_000; i++) {
      int prompt = 100 + rnd.nextInt(8_000);
      int matched = rnd.nextInt(prompt + 1);
      double prefill = 2 * p.prefillMs(prompt - matched, matched); // alpha 12 ms, beta 2x
      double noise = 1 + 0.02 * rnd.nextGaussian();
      // slot 1 waits 900 ms more on every request: queueing no feature of the model explains
      s.onFirstToken(obs(0, prefill * noise, prompt, matched));
      s.onFirstToken(obs(1, (900 + prefill) * noise, prompt, matched));
    }
    assertThat(s.describe(0)).containsEntry("fitted", 1.0);
    assertThat(s.describe(1)).containsEntry("fitted", 1.0);
    assertThat(s.coefficients(0).alphaMs()).isCloseTo(2 * p.alphaMs(), within(4.0));
    assertThat(s.coefficients(1).alphaMs()).isEqualTo(8 * p.alphaMs());
    // fitted jointly with the free constant, beta is not biased by it
    assertThat(s.coefficients(1).betaMsPerToken())
        .isCloseTo(2 * p.betaMsPerToken(), within(0.2 * p.betaMsPerToken()));
  }

  /** Calibration within the priors' band alone (no fleet band), fitted after 20 first tokens. */
  private static EstimatedTtftScorer priorsBandOnly() {
    return EstimatedTtftScorer.builder()
        .minObservations(20)
        .fleetBand(Double.POSITIVE_INFINITY)
        .build();
  }

  /** A first token of {@code ms} on {@code slot}, nothing queued or running. */
  private static FirstTokenObservation obs(int slot, double ms, int prompt, int matched) {
    return new FirstTokenObservation(slot, (long) (ms * 1e6), prompt, matched, 0, 0, 0);
  }

  @Test
  void aBackendsOwnFitIsPublishedWithinTheFleetBandOfTheFleetsFit() {
    // a mixed fleet (two backends 2x slower) is fitted as it is
    EstimatedTtftScorer mixed = EstimatedTtftScorer.builder().minObservations(20).build();
    feedFleet(mixed, new double[] {1, 1, 2, 2}, 3_000, 21);
    assertThat(mixed.coefficients(2).betaMsPerToken() / mixed.coefficients(0).betaMsPerToken())
        .isCloseTo(2.0, within(0.3));
    // one backend 6x the others (the queueing it absorbed, say) is held within 2x of the fleet's
    EstimatedTtftScorer bounded = EstimatedTtftScorer.builder().minObservations(20).build();
    EstimatedTtftScorer free = priorsBandOnly();
    double[] outlier = {1, 1, 1, 6};
    feedFleet(bounded, outlier, 3_000, 22);
    feedFleet(free, outlier, 3_000, 22);
    double freeRatio =
        free.coefficients(3).betaMsPerToken() / free.coefficients(0).betaMsPerToken();
    double boundedRatio =
        bounded.coefficients(3).betaMsPerToken() / bounded.coefficients(0).betaMsPerToken();
    assertThat(freeRatio).isCloseTo(6.0, within(0.8));
    assertThat(boundedRatio).isLessThanOrEqualTo(4.0 + 1e-9); // each within 2x of one fleet fit
    assertThat(bounded.coefficients(3).decodeMsPerRunning())
        .isLessThanOrEqualTo(4 * bounded.coefficients(0).decodeMsPerRunning() + 1e-9);
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().fleetBand(0.5))
        .hasMessageContaining("fleetBand");
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().fleetBand(Double.NaN))
        .hasMessageContaining("fleetBand");
  }

  @Test
  void aBackendThatStopsGettingFirstTokensReturnsToTheFleetsFit() {
    // slot 3 looks 6x slow at first (the queueing it absorbed, say), then gets no first tokens
    // while the fleet's fit moves back to the truth: its stale bound must not keep it expensive
    double[] outlier = {1, 1, 1, 6};
    double[] starved = {1, 1, 1, Double.NaN};
    EstimatedTtftScorer stale =
        EstimatedTtftScorer.builder().minObservations(20).fleetBandEvidence(0).build();
    EstimatedTtftScorer returning =
        EstimatedTtftScorer.builder().minObservations(20).fleetBandEvidence(1).build();
    for (EstimatedTtftScorer s : List.of(stale, returning)) {
      feedFleet(s, outlier, 300, 23);
      assertThat(ratio(s, 3, 0)).isGreaterThan(1.8); // held within the band, but above the rest
      feedFleet(s, starved, 3_000, 24);
    }
    assertThat(ratio(stale, 3, 0)).isGreaterThan(1.8);
    assertThat(ratio(returning, 3, 0)).isCloseTo(1.0, within(0.15));
    assertThat(returning.describe(3).get("fleetBand")).isCloseTo(1.0, within(0.01)); // no evidence
    assertThat(returning.describe(0).get("fleetBand")).isGreaterThan(1.5); // its share of traffic
    // a backend that keeps its first tokens keeps its own fit (a mixed fleet, as above)
    EstimatedTtftScorer mixed =
        EstimatedTtftScorer.builder().minObservations(20).fleetBandEvidence(1).build();
    feedFleet(mixed, new double[] {1, 1, 2, 2}, 3_000, 21);
    assertThat(ratio(mixed, 2, 0)).isCloseTo(2.0, within(0.3));
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().fleetBandEvidence(-1))
        .hasMessageContaining("fleetBandEvidence");
  }

  /** The published β of {@code slot} over that of {@code reference}. */
  private static double ratio(EstimatedTtftScorer s, int slot, int reference) {
    return s.coefficients(slot).betaMsPerToken() / s.coefficients(reference).betaMsPerToken();
  }

  /**
   * Feeds every slot in turn TTFTs of its factor times the priors' cost (5 % noise); a NaN factor
   * skips its slot.
   */
  private static void feedFleet(EstimatedTtftScorer s, double[] factors, int rounds, long seed) {
    TtftCoefficients p = TtftCoefficients.DEFAULTS;
    SplittableRandom rnd = new SplittableRandom(seed);
    for (int i = 0; i < rounds; i++) {
      for (int slot = 0; slot < factors.length; slot++) {
        if (Double.isNaN(factors[slot])) {
          continue;
        }
        int prompt = 100 + rnd.nextInt(8_000);
        int matched = rnd.nextInt(prompt + 1);
        int running = rnd.nextInt(32);
        double ms =
            factors[slot]
                * (p.prefillMs(prompt - matched, matched) + p.decodeMsPerRunning() * running)
                * (1 + 0.05 * rnd.nextGaussian());
        s.onFirstToken(
            new FirstTokenObservation(slot, (long) (ms * 1e6), prompt, matched, 0, running, 0));
      }
    }
  }

  @Test
  void calibrationTracksDrift() {
    EstimatedTtftScorer s = EstimatedTtftScorer.builder().minObservations(20).build();
    SplittableRandom rnd = new SplittableRandom(2);
    for (double beta : new double[] {0.02, 0.06}) {
      for (int i = 0; i < 3_000; i++) {
        int prompt = 100 + rnd.nextInt(4_000);
        double ms = 10 + beta * prompt;
        s.onFirstToken(new FirstTokenObservation(0, (long) (ms * 1e6), prompt, 0, 0, 0, 0));
      }
    }
    assertThat(s.coefficients(0).betaMsPerToken()).isCloseTo(0.06, within(0.006));
  }

  @Test
  void coefficientsAreValidated() {
    assertThatThrownBy(() -> new TtftCoefficients(-1, 0.01, 0, 0, 0))
        .hasMessageContaining("alphaMs");
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().forgetting(0.5))
        .hasMessageContaining("forgetting");
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().affinityMargin(0.5, 1))
        .hasMessageContaining("affinityMargin");
  }
}
