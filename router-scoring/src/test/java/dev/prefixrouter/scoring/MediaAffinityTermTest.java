package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.spi.Scorer;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class MediaAffinityTermTest {
  private final AtomicLong clock = new AtomicLong(1_000_000_000L);

  private RoutingEngine engine(Scorer scorer) {
    return RoutingEngine.builder()
        .ticker(clock::get)
        .backend(Backend.of("a", "m"))
        .backend(Backend.of("b", "m"))
        .scorer(scorer)
        .build();
  }

  private static Scorer withTerm(MediaAffinityTerm.Builder term) {
    return EstimatedTtftScorer.builder().addTerm(term.build()).build();
  }

  private static RouteRequest req(String... media) {
    RouteRequest.Builder b =
        RouteRequest.builder("t", "m").prompt(Prompt.ofTokens(1, 2, 3)).maxOutputTokens(8);
    for (String m : media) {
      b.media(m);
    }
    return b.build();
  }

  private static Routed routed(RoutingEngine e, RouteRequest r) {
    return (Routed) e.route(r);
  }

  private static String other(String id) {
    return id.equals("a") ? "b" : "a";
  }

  @Test
  void theTermIsAddedAfterTheBuiltInOnes() {
    EstimatedTtftScorer s =
        EstimatedTtftScorer.builder().addTerm(MediaAffinityTerm.builder().build()).build();
    assertThat(s.termNames()).endsWith(MediaAffinityTerm.NAME);
  }

  @Test
  void aBusyHolderOfTheImageWinsOverAnIdleBackendByTheEncodeItSaves() {
    // control: without the term, the second request goes to the idle backend
    RoutingEngine plain = engine(EstimatedTtftScorer.defaults());
    Routed p1 = routed(plain, req("img-x"));
    p1.lease().firstToken();
    assertThat(routed(plain, req("img-x")).backendId()).isEqualTo(other(p1.backendId()));

    RoutingEngine e = engine(withTerm(MediaAffinityTerm.builder().encodeMillis(40)));
    Routed first = routed(e, req("img-x"));
    first.lease().firstToken(); // decoding there: costs more than the idle backend
    Routed second = routed(e, req("img-x"));
    assertThat(second.backendId()).isEqualTo(first.backendId());
    assertThat(second.reason()).contains("media affinity");
    // another image: no credit anywhere, the idle backend wins
    assertThat(routed(e, req("img-y")).backendId()).isEqualTo(other(first.backendId()));
  }

  @Test
  void aHolderWithMaxQueuedRequestsWaitingGetsNoCredit() {
    RoutingEngine bounded =
        engine(withTerm(MediaAffinityTerm.builder().encodeMillis(40).maxQueued(2)));
    String holder = routed(bounded, req("img-x")).backendId();
    assertThat(routed(bounded, req("img-x")).backendId()).isEqualTo(holder); // 1 queued: room
    assertThat(routed(bounded, req("img-x")).backendId()).isEqualTo(other(holder)); // 2: none

    RoutingEngine unbounded =
        engine(withTerm(MediaAffinityTerm.builder().encodeMillis(40).maxQueued(1_000_000)));
    String h = routed(unbounded, req("img-x")).backendId();
    assertThat(routed(unbounded, req("img-x")).backendId()).isEqualTo(h);
    assertThat(routed(unbounded, req("img-x")).backendId()).isEqualTo(h);
  }

  @Test
  void aRequestWithoutMediaCostsWhatItCostsWithoutTheTerm() {
    RoutingEngine plain = engine(EstimatedTtftScorer.defaults());
    RoutingEngine e = engine(withTerm(MediaAffinityTerm.builder()));
    routed(e, req("img-x")).lease().firstToken();
    routed(plain, req("img-x")).lease().firstToken();
    for (int i = 0; i < 4; i++) {
      Routed x = routed(plain, req());
      Routed y = routed(e, req());
      assertThat(y.cost()).isEqualTo(x.cost());
      assertThat(y.reason()).doesNotContain("media");
    }
  }

  @Test
  void aDigestCountsOnlyWithinItsTtlAndTheLastPerBackendItems() {
    RoutingEngine e =
        engine(
            withTerm(
                MediaAffinityTerm.builder()
                    .encodeMillis(40)
                    .perBackend(1)
                    .ttl(Duration.ofSeconds(10))));
    Routed x = routed(e, req("img-x"));
    x.lease().firstToken();
    clock.addAndGet(Duration.ofSeconds(11).toNanos());
    assertThat(routed(e, req("img-x")).backendId()).isEqualTo(other(x.backendId())); // expired

    // two images on one backend: with room for one digest only one still counts (40 ms more)
    double[] cost = new double[3];
    for (int perBackend : new int[] {1, 2}) {
      RoutingEngine lru =
          engine(withTerm(MediaAffinityTerm.builder().encodeMillis(40).perBackend(perBackend)));
      Routed first = routed(lru, req("img-x", "img-z"));
      first.lease().firstToken();
      Routed again = routed(lru, req("img-x", "img-z"));
      assertThat(again.backendId()).isEqualTo(first.backendId());
      cost[perBackend] = again.cost();
    }
    assertThat(cost[1] - cost[2]).isCloseTo(40.0, within(1e-6));
  }

  @Test
  void builderBoundsAreChecked() {
    MediaAffinityTerm.Builder b = MediaAffinityTerm.builder();
    assertThatThrownBy(() -> b.encodeMillis(0)).hasMessageContaining("encodeMillis must be in");
    assertThatThrownBy(() -> b.perBackend(0)).hasMessageContaining("perBackend must be in");
    assertThatThrownBy(() -> b.maxQueued(0)).hasMessageContaining("maxQueued must be in");
    assertThatThrownBy(() -> b.ttl(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
  }
}
