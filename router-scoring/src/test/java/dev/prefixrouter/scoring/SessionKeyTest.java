package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.strings;

import dev.prefixrouter.api.RouteRequest;
import org.junit.jupiter.api.Test;

/** Session pins are keyed per (tenant, session): no two distinct pairs share a key. */
class SessionKeyTest {

  @Test
  void aTenantEndingInTheSeparatorDoesNotShareAnotherTenantsPin() {
    EstimatedTtftScorer s = EstimatedTtftScorer.builder().calibrate(false).build();
    FakeContext victim = new FakeContext(2);
    victim.request = RouteRequest.builder("a", "m").session("b\u0000c").build();
    victim.inFlight[1] = 1; // b0 wins and is pinned for ("a", "b\0c")
    s.score(victim);
    s.onRouted(victim, victim.best());
    assertThat(victim.best()).isEqualTo(0);

    FakeContext other = new FakeContext(2);
    other.request = RouteRequest.builder("a\u0000b", "m").session("c").build();
    other.inFlight[0] = 3;
    other.decodes[0] = 3; // b0 slightly worse: only a pin would keep it
    s.score(other);
    assertThat(other.best()).isEqualTo(1);
    assertThat(other.reason).doesNotStartWith("session affinity");
  }

  @Test
  void distinctTenantSessionPairsNeverShareAKey() {
    // a small alphabet with the characters an encoding might use as separators
    var text = strings().betweenCodePoints(0, 0x3a).ofLengthBetween(1, 6);
    qt().withExamples(5_000)
        .forAll(text, text, text, text)
        .assuming(
            (t1, s1, t2, s2) -> !t1.isBlank() && !t2.isBlank() && !(t1.equals(t2) && s1.equals(s2)))
        .checkAssert(
            (t1, s1, t2, s2) -> {
              String k1 = key(t1, s1);
              String k2 = key(t2, s2);
              assertThat(k1).isNotEqualTo(k2);
            });
  }

  @Test
  void theKeyIsBuiltOncePerRequestAndFollowsTheNextRequestsStrings() {
    RouteRequest r = RouteRequest.builder("acme", "m").session("chat-1").build();
    String k = EstimatedTtftScorer.sessionKey(r);
    assertThat(EstimatedTtftScorer.sessionKey(r)).isSameAs(k).isEqualTo("4:acmechat-1");
    // equal text in other String objects: an equal key
    RouteRequest same =
        RouteRequest.builder(new String("acme"), "m").session(new String("chat-1")).build();
    assertThat(EstimatedTtftScorer.sessionKey(same)).isEqualTo(k);
    // the next request's own session and tenant, never the memo's
    RouteRequest next = RouteRequest.builder("acme", "m").session("chat-2").build();
    assertThat(EstimatedTtftScorer.sessionKey(next)).isEqualTo("4:acmechat-2");
    RouteRequest otherTenant = RouteRequest.builder("acme2", "m").session("chat-2").build();
    assertThat(EstimatedTtftScorer.sessionKey(otherTenant)).isEqualTo("5:acme2chat-2");
    assertThat(EstimatedTtftScorer.sessionKey(RouteRequest.builder("acme", "m").build())).isNull();
    assertThat(EstimatedTtftScorer.sessionKey(r)).isEqualTo(k);
  }

  private static String key(String tenant, String session) {
    return EstimatedTtftScorer.sessionKey(
        RouteRequest.builder(tenant, "m").session(session).build());
  }
}
