package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.HealthState;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RejectReason;
import dev.prefixrouter.api.Rejected;
import dev.prefixrouter.api.RouteDecision;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.api.spi.PrefixIndex;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The scoring parts wired into a real engine. */
class ScoringEngineTest {
  private final AtomicLong clock = new AtomicLong(1);

  /** A predicted-blocks-only index for tests: exact match on whole-key sets per slot. */
  private static RoutingEngine engine(
      AtomicLong clock, CircuitBreakers breakers, TenantTokenBuckets limiter, int retryBudget) {
    return RoutingEngine.builder()
        .ticker(clock::get)
        .hasher(new SimpleHasher())
        .prefixIndex(new MapIndex())
        .scorer(EstimatedTtftScorer.builder().calibrate(false).build())
        .health(breakers)
        .limiter(limiter)
        .retryBudget(retryBudget)
        .backend(Backend.of("a", "m"))
        .backend(Backend.of("b", "m"))
        .backend(Backend.of("c", "m"))
        .build();
  }

  private static RouteRequest req(int doc) {
    int[] ids = new int[1024];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = doc * 10_000 + i;
    }
    return RouteRequest.builder("t", "m").prompt(Prompt.ofTokens(ids)).maxOutputTokens(16).build();
  }

  /** 100,000 tokens and one request a minute per tenant, on the test's clock. */
  private TenantTokenBuckets oneRequestAMinute() {
    return TenantTokenBuckets.builder()
        .defaultQuota(Quota.perMinute(100_000).withMaxRequests(1))
        .ticker(clock::get)
        .build();
  }

  /**
   * A request the engine admitted and then rejected (no eligible backend) gives back its request
   * permit as well as its tokens: under one request a minute, the retry after the backends came
   * back was refused as over the request quota.
   */
  @Test
  void aRejectionAfterAdmissionGivesTheRequestPermitBack() {
    TenantTokenBuckets limiter = oneRequestAMinute();
    RoutingEngine e = engine(clock, CircuitBreakers.defaults(), limiter, 2);
    for (String id : new String[] {"a", "b", "c"}) {
      e.backends().drain(id);
    }
    RouteDecision refused = e.route(req(1));
    assertThat(refused).isInstanceOf(Rejected.class);
    assertThat(((Rejected) refused).reason()).isEqualTo(RejectReason.NO_ELIGIBLE_BACKEND);
    e.backends().undrain("a");
    assertThat(e.route(req(1))).isInstanceOf(Routed.class);
    assertThat(limiter.available("t", clock.get())).isEqualTo(100_000 - 1024 - 16);
  }

  /** A failover takes no request permit, so a rejected one gives none back. */
  @Test
  void aRejectedFailoverGivesBackNoRequestPermit() {
    TenantTokenBuckets limiter = oneRequestAMinute();
    RoutingEngine e = engine(clock, CircuitBreakers.defaults(), limiter, 2);
    e.backends().drain("b");
    e.backends().drain("c");
    Routed r = (Routed) e.route(req(1));
    r.lease().fail(Failure.of(Failure.Kind.CONNECT));
    assertThat(r.lease().failover()).isInstanceOf(Rejected.class); // a excluded, b and c drained
    e.backends().undrain("b");
    RouteDecision next = e.route(req(2));
    assertThat(next).isInstanceOf(Rejected.class);
    assertThat(((Rejected) next).reason()).isEqualTo(RejectReason.RATE_LIMITED);
  }

  @Test
  void repeatedPrefixesStickToOneBackend() {
    RoutingEngine e =
        engine(clock, CircuitBreakers.defaults(), TenantTokenBuckets.perMinute(10_000_000), 2);
    Routed first = (Routed) e.route(req(1));
    first.lease().firstToken();
    first.lease().complete(Usage.of(1024, 16));
    for (int i = 0; i < 5; i++) {
      Routed r = (Routed) e.route(req(1));
      assertThat(r.backendId()).isEqualTo(first.backendId());
      assertThat(r.matchedTokens()).isEqualTo(1024);
      r.lease().firstToken();
      r.lease().complete(Usage.of(1024, 16));
    }
  }

  @Test
  void failoverSkipsFailedBackendsAndTheBreakerOpens() {
    CircuitBreakers breakers =
        CircuitBreakers.builder().consecutiveFailures(1).cooldown(Duration.ofSeconds(5)).build();
    RoutingEngine e = engine(clock, breakers, TenantTokenBuckets.perMinute(10_000_000), 1);
    Routed r = (Routed) e.route(req(2));
    r.lease().fail(Failure.of(Failure.Kind.CONNECT));
    assertThat(e.inspect().backend(r.backendId()).orElseThrow().health())
        .isEqualTo(HealthState.OPEN);
    Routed next = (Routed) r.lease().failover();
    assertThat(next.backendId()).isNotEqualTo(r.backendId());
    next.lease().fail(Failure.of(Failure.Kind.TIMEOUT));
    RouteDecision out = next.lease().failover();
    assertThat(((Rejected) out).reason()).isEqualTo(RejectReason.RETRY_BUDGET_EXHAUSTED);
    // the two failed backends stay out until the cooldown, then one probe goes through
    for (int i = 0; i < 3; i++) {
      Routed x = (Routed) e.route(req(3 + i));
      assertThat(x.backendId()).isNotIn(r.backendId(), next.backendId());
      x.lease().complete(Usage.of(1024, 1));
    }
    clock.addAndGet(Duration.ofSeconds(6).toNanos());
    assertThat(e.inspect().backend(r.backendId()).orElseThrow().health())
        .isEqualTo(HealthState.HALF_OPEN);
  }

  @Test
  void tenantOverQuotaGetsRetryAfter() {
    TenantTokenBuckets limiter =
        TenantTokenBuckets.builder()
            .defaultQuota(
                new dev.prefixrouter.scoring.Quota(2_000, 2_000, Duration.ofSeconds(1), 0))
            .build();
    RoutingEngine e = engine(clock, CircuitBreakers.defaults(), limiter, 1);
    assertThat(e.route(req(1))).isInstanceOf(Routed.class); // 1040 tokens
    Rejected x = (Rejected) e.route(req(1));
    assertThat(x.reason()).isEqualTo(RejectReason.RATE_LIMITED);
    assertThat(x.retryAfter()).isEqualTo(Duration.ofMillis(40));
    assertThat(e.inspect().tenants()).extracting("tenant").containsExactly("t");
  }

  @Test
  void fittedCoefficientsAreVisibleInInspect() {
    RoutingEngine e =
        RoutingEngine.builder()
            .ticker(clock::get)
            .scorer(EstimatedTtftScorer.builder().minObservations(5).build())
            .backend(Backend.of("a", "m"))
            .build();
    for (int i = 0; i < 10; i++) {
      Routed r = (Routed) e.route(req(i));
      clock.addAndGet(50_000_000L);
      r.lease().firstToken();
      r.lease().complete(Usage.of(1024, 1));
    }
    assertThat(e.inspect().backend("a").orElseThrow().costModel())
        .containsEntry("observations", 10.0)
        .containsKey("betaMsPerToken");
  }

  /** One key per 16 tokens. */
  static final class SimpleHasher implements BlockHasher {
    @Override
    public int keys(Prompt prompt, long seed, long[] out) {
      Prompt.Tokens t = (Prompt.Tokens) prompt;
      int n = t.length() / 16;
      if (n > out.length) {
        return n;
      }
      long h = seed;
      for (int i = 0; i < n; i++) {
        for (int j = 0; j < 16; j++) {
          h = h * 1_000_003 + t.token(i * 16 + j);
        }
        out[i] = h;
      }
      return n;
    }

    @Override
    public int tokensPerBlock() {
      return 16;
    }
  }

  /** Predicted blocks in a set per slot; enough for scoring tests. */
  static final class MapIndex implements PrefixIndex {
    private final java.util.Map<Integer, java.util.Set<Long>> held =
        new java.util.concurrent.ConcurrentHashMap<>();

    @Override
    public void addBackend(int slot, dev.prefixrouter.api.Backend backend) {
      held.put(slot, java.util.concurrent.ConcurrentHashMap.newKeySet());
    }

    @Override
    public void updateBackend(
        int slot, dev.prefixrouter.api.Backend before, dev.prefixrouter.api.Backend after) {}

    @Override
    public void match(long[] keys, int keyCount, int[] slots, int count, int[] out) {
      for (int c = 0; c < count; c++) {
        java.util.Set<Long> s = held.getOrDefault(slots[c], java.util.Set.of());
        int d = 0;
        while (d < keyCount && s.contains(keys[d])) {
          d++;
        }
        out[c] = d;
      }
    }

    @Override
    public void recordRouted(long[] keys, int keyCount, int slot, long nowNanos) {
      for (int i = 0; i < keyCount; i++) {
        held.get(slot).add(keys[i]);
      }
    }

    @Override
    public void apply(int slot, dev.prefixrouter.api.KvEvent e, BlockHasher h, long now) {}

    @Override
    public void removeBackend(int slot) {
      held.remove(slot);
    }

    @Override
    public dev.prefixrouter.api.IndexStats stats(String[] names) {
      return dev.prefixrouter.api.IndexStats.EMPTY;
    }
  }
}
