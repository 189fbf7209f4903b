package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

@SuppressWarnings("deprecation") // the deprecated decorator, still supported
class MediaAffinityTest {
  private final AtomicLong clock = new AtomicLong(1_000_000_000L);

  /** A delegate whose cost is 10 ms per open lease (ms, like est-ttft); ties by candidate order. */
  private static class TenMsPerLease implements Scorer {
    @Override
    public String name() {
      return "ten";
    }

    @Override
    public void score(ScoringContext ctx) {
      for (int i = 0; i < ctx.size(); i++) {
        ctx.setCost(i, 10.0 * ctx.inFlight(i));
      }
      ctx.sortByCost(0);
    }

    @Override
    public void addBackend(int slot, Backend backend) {}

    @Override
    public void removeBackend(int slot) {}
  }

  private RoutingEngine engine(MediaAffinity scorer) {
    return RoutingEngine.builder()
        .ticker(clock::get)
        .backend(Backend.of("a", "m"))
        .backend(Backend.of("b", "m"))
        .scorer(scorer)
        .build();
  }

  private static RouteRequest req(String... media) {
    RouteRequest.Builder b = RouteRequest.builder("t", "m").prompt(Prompt.ofTokens(1, 2, 3));
    for (String m : media) {
      b.media(m);
    }
    return b.build();
  }

  private static Routed routed(RoutingEngine e, RouteRequest r) {
    return (Routed) e.route(r);
  }

  @Test
  void theHolderOfTheMediaWinsWhileItsLoadCostsLessThanTheEncodeSaved() {
    RoutingEngine e =
        engine(MediaAffinity.wrap(new TenMsPerLease(), 30, 16, Duration.ofMinutes(1)));
    Routed first = routed(e, req("img-x"));
    assertThat(first.backendId()).isEqualTo("a");
    List<Routed> open = new ArrayList<>(List.of(first));
    // a holds img-x: with 1 and 2 open leases (10, 20 ms < 30 ms saved) it still wins
    for (int i = 0; i < 2; i++) {
      Routed r = routed(e, req("img-x"));
      assertThat(r.backendId()).isEqualTo("a");
      assertThat(r.reason()).contains("media affinity");
      open.add(r);
    }
    // with 3 open leases its 30 ms queue equals the saving: the idle backend wins
    Routed spilled = routed(e, req("img-x"));
    assertThat(spilled.backendId()).isEqualTo("b");
    open.add(spilled);
    // a request without media, or with other media, follows the delegate alone
    open.forEach(r -> r.lease().complete(new Usage(3, 1, 0)));
    Routed busy = routed(e, req()); // a (tie, first)
    assertThat(busy.backendId()).isEqualTo("a");
    assertThat(routed(e, req()).backendId()).isEqualTo("b");
    assertThat(routed(e, req("img-y")).backendId()).isEqualTo("a");
  }

  @Test
  void theBeliefExpiresAndIsBoundedPerBackend() {
    RoutingEngine e = engine(MediaAffinity.wrap(new TenMsPerLease(), 30, 1, Duration.ofSeconds(5)));
    routed(e, req("img-x")).lease().complete(new Usage(3, 1, 0)); // a
    Routed holdA = routed(e, req()); // a busy (1 lease, 10 ms)
    assertThat(holdA.backendId()).isEqualTo("a");
    assertThat(routed(e, req("img-x")).backendId()).as("held, 10 < 30").isEqualTo("a");
    clock.addAndGet(Duration.ofSeconds(6).toNanos());
    assertThat(routed(e, req("img-x")).backendId()).as("expired").isEqualTo("b");
    // b now holds img-x (routed there); one item per backend: img-z replaces it
    assertThat(routed(e, req("img-z")).backendId()).isEqualTo("b"); // b 1 lease, a 2
    // both at 20 ms now: were img-x still remembered on b, b would win; evicted, the tie goes to a
    assertThat(routed(e, req("img-x")).backendId())
        .as("img-x evicted from b's one-item memory by img-z")
        .isEqualTo("a");
  }

  @Test
  void aDelegatesLeaseTokenReachesItsEnd() {
    List<Object> ended = new ArrayList<>();
    Object token = new Object();
    Scorer tokens =
        new TenMsPerLease() {
          @Override
          public Object onRoutedLease(ScoringContext ctx, int candidate) {
            return token;
          }

          @Override
          public void onEnded(int slot, Object t) {
            ended.add(t);
          }
        };
    RoutingEngine e = engine(MediaAffinity.wrap(tokens, 30, 16, Duration.ofMinutes(1)));
    routed(e, req("img-x")).lease().complete(new Usage(3, 1, 0));
    assertThat(ended).containsExactly(token);
  }

  @Test
  void describesAndValidates() {
    MediaAffinity m = MediaAffinity.wrap(new TenMsPerLease());
    assertThat(m.name()).isEqualTo("ten+media");
    RoutingEngine e = engine(m);
    routed(e, req("img-x"));
    assertThat(e.inspect().backend("a").orElseThrow().costModel())
        .containsEntry("mediaRemembered", 1.0);
    assertThatThrownBy(() -> MediaAffinity.wrap(new TenMsPerLease(), 0, 1, Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("encodeMillis");
    assertThatThrownBy(() -> MediaAffinity.wrap(new TenMsPerLease(), 1, 0, Duration.ofSeconds(1)))
        .hasMessageContaining("perBackend");
    assertThatThrownBy(() -> MediaAffinity.wrap(new TenMsPerLease(), 1, 1, Duration.ZERO))
        .hasMessageContaining("ttl");
  }
}
