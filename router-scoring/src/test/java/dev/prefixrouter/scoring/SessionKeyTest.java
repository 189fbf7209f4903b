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

  private static String key(String tenant, String session) {
    return EstimatedTtftScorer.sessionKey(
        RouteRequest.builder(tenant, "m").session(session).build());
  }
}
