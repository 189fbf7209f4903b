package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/** A scorer's per-lease token: returned when routed, handed back once when that lease ends. */
class ScorerLeaseTokenTest {

  /** Returns a fresh token per route and records the tokens ended, with their slots. */
  static final class TokenScorer implements Scorer {
    final List<Object> routed = Collections.synchronizedList(new ArrayList<>());
    final List<Object> ended = Collections.synchronizedList(new ArrayList<>());
    final List<Integer> endedSlots = Collections.synchronizedList(new ArrayList<>());

    @Override
    public String name() {
      return "tokens";
    }

    @Override
    public void score(ScoringContext ctx) {
      ctx.sortByCost(0);
    }

    @Override
    public @Nullable Object onRoutedLease(ScoringContext ctx, int candidate) {
      Object token = new Object();
      routed.add(token);
      return token;
    }

    @Override
    public void onEnded(int slot, @Nullable Object token) {
      endedSlots.add(slot);
      ended.add(token);
    }
  }

  /**
   * Returns a token per route like {@link TokenScorer} but sets no reason and loses its name once
   * told to (after the engine, which refuses a scorer without one, is built): the decision cannot
   * be built after its token was taken. Its {@code onEnded} throws once asked to.
   */
  static final class NamelessTokenScorer implements Scorer {
    final List<Object> routed = Collections.synchronizedList(new ArrayList<>());
    final List<Object> ended = Collections.synchronizedList(new ArrayList<>());
    volatile boolean nameless;
    volatile boolean throwOnEnded;

    @Override
    public String name() {
      // the scorer bug under test: the decision's reason falls back to it
      return nameless ? null : "named-until-built";
    }

    @Override
    public void score(ScoringContext ctx) {
      ctx.sortByCost(0);
    }

    @Override
    public @Nullable Object onRoutedLease(ScoringContext ctx, int candidate) {
      Object token = new Object();
      routed.add(token);
      return token;
    }

    @Override
    public void onEnded(int slot, @Nullable Object token) {
      ended.add(token);
      if (throwOnEnded) {
        throw new IllegalStateException("scorer bug in onEnded");
      }
    }
  }

  private static RouteRequest req() {
    return RouteRequest.builder("t", "m").prompt(Prompt.ofTokens(1, 2, 3)).build();
  }

  @Test
  void eachLeaseHandsItsOwnTokenBackOnceHoweverItEnds() {
    TokenScorer s = new TokenScorer();
    RoutingEngine engine =
        RoutingEngine.builder()
            .backend(Backend.of("a", "m"))
            .backend(Backend.of("b", "m"))
            .scorer(s)
            .build();
    Routed completed = (Routed) engine.route(req());
    Routed failed = (Routed) engine.route(req());
    Routed streaming = (Routed) engine.route(req());
    assertThat(s.routed).hasSize(3).doesNotHaveDuplicates();
    assertThat(s.ended).isEmpty();

    failed.lease().fail(new Failure(Failure.Kind.CONNECT, "refused"));
    streaming.lease().firstToken();
    completed.lease().complete(new Usage(3, 1, 0));
    completed.lease().complete(new Usage(3, 1, 0)); // idempotent: no second end
    assertThat(s.ended).containsExactly(s.routed.get(1), s.routed.get(0));

    Routed retried = (Routed) failed.lease().failover(); // a new lease on b, a new token
    streaming.lease().fail(new Failure(Failure.Kind.SERVER_ERROR, "broke off"));
    retried.lease().complete(new Usage(3, 1, 0));
    assertThat(s.routed).hasSize(4);
    assertThat(s.ended)
        .containsExactly(s.routed.get(1), s.routed.get(0), s.routed.get(2), s.routed.get(3));
    assertThat(s.endedSlots).containsExactly(0, 0, 0, 1);
  }

  @Test
  void aDecisionThatCannotBeBuiltAfterTheTokenWasTakenHandsItBackAndLeavesNoCounts() {
    NamelessTokenScorer s = new NamelessTokenScorer();
    Fakes.CountingLimiter limiter = new Fakes.CountingLimiter(1_000);
    RoutingEngine engine =
        RoutingEngine.builder().limiter(limiter).backend(Backend.of("a", "m")).scorer(s).build();
    s.nameless = true;

    assertThatThrownBy(() -> engine.route(req()))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("reason");
    assertThat(s.routed).hasSize(1);
    assertThat(s.ended).as("the token taken came back").containsExactly(s.routed.get(0));
    BackendSnapshot a = engine.inspect().backend("a").orElseThrow();
    assertThat(a.inFlight()).isZero();
    assertThat(a.pendingPrefillTokens()).isZero();
    assertThat(limiter.balance("t")).isEqualTo(1_000);
  }

  @Test
  void aThrowingOnEndedOnThatPathIsSuppressedNotInPlaceOfTheCause() {
    NamelessTokenScorer s = new NamelessTokenScorer();
    s.throwOnEnded = true;
    RoutingEngine engine = RoutingEngine.builder().backend(Backend.of("a", "m")).scorer(s).build();
    s.nameless = true;

    assertThatThrownBy(() -> engine.route(req()))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("reason")
        .satisfies(
            t ->
                assertThat(t.getSuppressed())
                    .singleElement()
                    .satisfies(x -> assertThat(x).hasMessage("scorer bug in onEnded")));
    assertThat(s.ended).containsExactly(s.routed.get(0));
    assertThat(engine.inspect().backend("a").orElseThrow().inFlight()).isZero();
  }
}
