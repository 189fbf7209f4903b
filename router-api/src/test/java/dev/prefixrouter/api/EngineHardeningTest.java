package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.api.spi.RoutingListener;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;
import org.quicktheories.core.Gen;

/** Hostile inputs and races the engine must survive (issue #17, engine items). */
class EngineHardeningTest {
  private final AtomicLong clock = new AtomicLong(1_000_000_000L);

  private static RouteRequest req(String tenant, String model) {
    return RouteRequest.builder(tenant, model)
        .prompt(Prompt.ofTokens(Fakes.tokens(16, 0)))
        .maxOutputTokens(10)
        .build();
  }

  // ---------------------------------------------------------------- isolation (item 2)

  /** Keys chained from the seed, one per 4 tokens; remembers the keys of the last prompt hashed. */
  static final class SeedChainHasher implements BlockHasher {
    final List<long[]> hashed = new ArrayList<>();

    public long[] keys(Prompt prompt, long seed) {
      long[] out = new long[((Prompt.Tokens) prompt).length() / 4];
      keys(prompt, seed, out);
      return out;
    }

    @Override
    public int keys(Prompt prompt, long seed, long[] out) {
      Prompt.Tokens t = (Prompt.Tokens) prompt;
      int n = t.length() / 4;
      if (n > out.length) {
        return n;
      }
      long k = seed;
      for (int i = 0; i < n; i++) {
        k = (k ^ t.token(4 * i)) * 0x9E3779B97F4A7C15L;
        k ^= k >>> 29;
        out[i] = k;
      }
      hashed.add(Arrays.copyOf(out, n));
      return n;
    }

    @Override
    public int tokensPerBlock() {
      return 4;
    }
  }

  private static Set<Long> keysOf(String tenant, String salt) {
    SeedChainHasher h = new SeedChainHasher();
    RoutingEngine engine =
        RoutingEngine.builder()
            .hasher(h)
            .prefixIsolation(true)
            .backend(Backend.of("a", "m"))
            .build();
    RouteRequest r = req(tenant, "m").toBuilder().cacheSalt(salt).build();
    assertThat(engine.route(r)).isInstanceOf(Routed.class);
    Set<Long> keys = new HashSet<>();
    for (long[] k : h.hashed) {
      for (long x : k) {
        keys.add(x);
      }
    }
    return keys;
  }

  @Test
  void aTenantNameThatSpellsAnotherTenantsSaltSharesNoKeyWithIt() {
    Set<Long> a = keysOf("A", "y");
    Set<Long> forged = keysOf("A\u0000salt:y", null);
    assertThat(a).isNotEmpty().doesNotContainAnyElementsOf(forged);
  }

  /** Strings built from the pieces an ambiguous encoding would confuse. */
  private static Gen<String> pieces(int min) {
    String[] parts = {"A", "y", "\u0000", "salt:", "tenant:", ":", "1", "|"};
    return lists()
        .of(integers().between(0, parts.length - 1))
        .ofSizeBetween(min, 4)
        .map(
            ix -> {
              StringBuilder sb = new StringBuilder();
              for (int i : ix) {
                sb.append(parts[i]);
              }
              return sb.toString();
            });
  }

  @Test
  void distinctTenantSaltPairsNeverShareAKey() {
    Gen<String> tenants = pieces(1).assuming(t -> !t.isBlank());
    Gen<String> salts = pieces(0).map(s -> s.isEmpty() ? null : s);
    // forge: the second pair's tenant spells the first pair's tenant and salt (the known bypass)
    qt().withExamples(300)
        .forAll(tenants, salts, tenants, integers().between(0, 3))
        .checkAssert(
            (t1, s1, t2, forge) -> {
              String tenant2 = forge == 0 && s1 != null ? t1 + "\u0000salt:" + s1 : t2;
              String salt2 = forge == 0 ? null : forge == 1 ? s1 : t1;
              if (t1.equals(tenant2) && java.util.Objects.equals(s1, salt2)) {
                return; // the same pair
              }
              assertThat(keysOf(t1, s1)).doesNotContainAnyElementsOf(keysOf(tenant2, salt2));
            });
  }

  // ---------------------------------------------------------------- ids and echoes (item 3)

  @Test
  void backendIdsWithControlCharactersAreRejectedAndShownEscaped() {
    for (String bad : new String[] {"a\u0000b", "a\u001b[31mb", "a\u0085b", "a\u202eb"}) {
      assertThatThrownBy(() -> Backend.of(bad, "m"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("id must be")
          .hasMessageContaining("\\u")
          .satisfies(e -> assertThat(e.getMessage()).doesNotContain(bad));
    }
    assertThat(Backend.of("gpu-0.rack_1:8000/é", "m").id()).isEqualTo("gpu-0.rack_1:8000/é");
  }

  @Test
  void aLongModelNameIsEchoedTruncatedInTheRejectionAndAHugeOneRefused() {
    RoutingEngine engine = RoutingEngine.builder().backend(Backend.of("a", "m")).build();
    String model = "x".repeat(RouteRequest.MAX_NAME_LENGTH);
    Rejected r = (Rejected) engine.route(req("t", model));
    assertThat(r.message()).hasSizeLessThan(400).contains("xxxx");
    assertThatThrownBy(() -> req("t", "x".repeat(1 << 20)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("1048576");
  }

  // ---------------------------------------------------------------- saturation (item 4)

  /** A scorer whose TTFT estimate is fixed (implements both the old and the new SPI hook). */
  static final class FixedTtft implements dev.prefixrouter.api.spi.Scorer {
    final long estimateNanos;

    FixedTtft(long estimateNanos) {
      this.estimateNanos = estimateNanos;
    }

    @Override
    public String name() {
      return "fixed";
    }

    @Override
    public void score(dev.prefixrouter.api.spi.ScoringContext ctx) {
      for (int i = 0; i < ctx.size(); i++) {
        ctx.setCost(i, estimateNanos / 1e6);
      }
    }

    public boolean costIsTtftMillis() {
      return true;
    }

    public java.util.OptionalLong estimatedTtftNanos(
        dev.prefixrouter.api.spi.ScoringContext ctx, int candidate) {
      return java.util.OptionalLong.of(estimateNanos);
    }
  }

  @Test
  void routeDoesNotThrowOnAHugeTtftBudget() {
    RoutingEngine engine =
        RoutingEngine.builder()
            .scorer(new FixedTtft(Duration.ofHours(1).toNanos()))
            .backend(Backend.of("a", "m"))
            .build();
    RouteRequest r =
        req("t", "m").toBuilder().sheddable(true).ttftBudget(Duration.ofDays(365L * 300)).build();
    assertThat(engine.route(r)).isInstanceOf(Routed.class);
    RouteRequest forever = r.toBuilder().ttftBudget(Duration.ofSeconds(Long.MAX_VALUE)).build();
    assertThat(engine.route(forever)).isInstanceOf(Routed.class);
  }

  @Test
  void aHugeTtftEstimateShedsWithASaturatedRetryAfter() {
    RoutingEngine engine =
        RoutingEngine.builder()
            .scorer(new FixedTtft(Long.MAX_VALUE))
            .backend(Backend.of("a", "m"))
            .build();
    RouteRequest r =
        req("t", "m").toBuilder().sheddable(true).ttftBudget(Duration.ofMillis(1)).build();
    Rejected shed = (Rejected) engine.route(r);
    assertThat(shed.reason()).isEqualTo(RejectReason.OVERLOADED);
    assertThat(shed.retryAfter()).isPositive();
  }

  @Test
  void aLoadReportOlderThanTheClockIsAcceptedAndSaturates() {
    RoutingEngine engine =
        RoutingEngine.builder().ticker(clock::get).backend(Backend.of("a", "m")).build();
    LoadReport ancient = LoadReport.of(1, 0, 0.5).withAge(Duration.ofDays(365L * 1000));
    assertThat(engine.backends().reportLoad("a", ancient)).isTrue();
    assertThat(engine.route(req("t", "m"))).isInstanceOf(Routed.class);
    assertThat(engine.inspect().backend("a").orElseThrow().loadAgeNanos()).isPositive();
  }

  // ---------------------------------------------------------------- listener errors (item 5)

  @Test
  void aListenerThrowingAnErrorDoesNotLeakTheLease() {
    Fakes.CountingLimiter limiter = new Fakes.CountingLimiter(1_000);
    RoutingListener broken =
        new RoutingListener() {
          @Override
          public void onRouted(Routed routed) {
            throw new AssertionError("listener bug");
          }
        };
    RoutingEngine engine =
        RoutingEngine.builder()
            .limiter(limiter)
            .listener(broken)
            .backend(Backend.of("a", "m"))
            .build();
    assertThatThrownBy(() -> engine.route(req("t", "m"))).isInstanceOf(AssertionError.class);
    assertThat(engine.inspect().backend("a").orElseThrow().inFlight()).isZero();
    assertThat(engine.inspect().backend("a").orElseThrow().pendingPrefillTokens()).isZero();
    assertThat(limiter.balance("t")).isEqualTo(1_000);
  }

  // ---------------------------------------------------------------- decode count race (item 9)

  @Test
  void runningDecodesNeverGoNegativeWhenCompleteRacesFirstToken() {
    AtomicReference<Runnable> onTick = new AtomicReference<>();
    List<Integer> seen = new ArrayList<>();
    AtomicReference<RoutingEngine> engineRef = new AtomicReference<>();
    LongSupplier ticker =
        () -> {
          Runnable r = onTick.getAndSet(null);
          if (r != null) {
            r.run(); // complete() lands between firstToken's state change and its counts
            seen.add(engineRef.get().inspect().backend("a").orElseThrow().runningDecodes());
          }
          return clock.get();
        };
    RoutingEngine engine =
        RoutingEngine.builder().ticker(ticker).backend(Backend.of("a", "m")).build();
    engineRef.set(engine);
    Routed r = (Routed) engine.route(req("t", "m"));
    onTick.set(() -> r.lease().complete(new Usage(16, 10, 0)));
    r.lease().firstToken();
    assertThat(seen).hasSize(1);
    assertThat(seen.get(0)).isNotNegative();
    assertThat(engine.inspect().backend("a").orElseThrow().runningDecodes()).isZero();
    assertThat(engine.inspect().backend("a").orElseThrow().inFlight()).isZero();
  }

  // ---------------------------------------------------------------- re-entrant listeners

  /**
   * A listener that ejects a backend when its breaker opens: the state change used to be announced
   * under the lease's claim on the backend, and {@code remove} waits for every claim, the caller's
   * own included, so the failing thread spun for ever.
   */
  @Test
  void aListenerMayRemoveTheBackendWhoseBreakerOpened() throws Exception {
    AtomicReference<RoutingEngine> engineRef = new AtomicReference<>();
    List<String> removed = new ArrayList<>();
    RoutingListener eject =
        new RoutingListener() {
          @Override
          public void onHealthChanged(Backend backend, HealthState from, HealthState to) {
            if (to == HealthState.OPEN) {
              removed.add(backend.id() + " " + engineRef.get().backends().remove(backend.id()));
            }
          }
        };
    RoutingEngine engine =
        RoutingEngine.builder()
            .health(new Fakes.SimpleBreaker(1))
            .listener(eject)
            .backend(Backend.of("a", "m"))
            .backend(Backend.of("b", "m"))
            .backend(Backend.of("c", "m"))
            .build();
    engineRef.set(engine);
    Thread t =
        new Thread(
            () -> {
              for (int i = 0; i < 2; i++) { // a lease's failure opens its backend's breaker
                Routed r = (Routed) engine.route(req("t", "m"));
                r.lease().fail(Failure.of(Failure.Kind.CONNECT));
              }
              for (Backend b : engine.backends().all()) { // so does a reported failure
                engine.backends().reportFailure(b.id(), Failure.of(Failure.Kind.CONNECT));
              }
            });
    t.setDaemon(true);
    t.start();
    t.join(10_000);
    assertThat(t.isAlive()).as("the failing thread returned").isFalse();
    assertThat(removed).hasSize(3).allMatch(s -> s.endsWith(" true"));
    assertThat(engine.backends().all()).isEmpty();
  }

  // ---------------------------------------------------------------- throwing parts

  /** A scorer whose {@code onRouted} throws once asked to. */
  static final class ThrowingOnRoutedScorer implements dev.prefixrouter.api.spi.Scorer {
    volatile boolean throwOnRouted;
    volatile boolean throwOnEnded;

    @Override
    public String name() {
      return "throwing";
    }

    @Override
    public void score(dev.prefixrouter.api.spi.ScoringContext ctx) {}

    @Override
    public void onRouted(dev.prefixrouter.api.spi.ScoringContext ctx, int candidate) {
      if (throwOnRouted) {
        throw new IllegalStateException("scorer bug in onRouted");
      }
    }

    @Override
    public void onEnded(int slot) {
      if (throwOnEnded) {
        throw new IllegalStateException("scorer bug in onEnded");
      }
    }
  }

  /** One backend {@code a} of model {@code m}, with {@code limiter} and {@code scorer}. */
  private static RoutingEngine engine(
      Fakes.CountingLimiter limiter, dev.prefixrouter.api.spi.Scorer scorer) {
    return RoutingEngine.builder()
        .limiter(limiter)
        .scorer(scorer)
        .backend(Backend.of("a", "m"))
        .build();
  }

  @Test
  void aScorerThrowingInOnRoutedLeavesNoCountsBehind() {
    Fakes.CountingLimiter limiter = new Fakes.CountingLimiter(1_000);
    ThrowingOnRoutedScorer scorer = new ThrowingOnRoutedScorer();
    scorer.throwOnRouted = true;
    RoutingEngine engine = engine(limiter, scorer);
    assertThatThrownBy(() -> engine.route(req("t", "m")))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("onRouted");
    BackendSnapshot a = engine.inspect().backend("a").orElseThrow();
    assertThat(a.inFlight()).isZero();
    assertThat(a.pendingPrefillTokens()).isZero();
    assertThat(limiter.balance("t")).isEqualTo(1_000);
  }

  @Test
  void aScorerThrowingInOnEndedStillTruesUpTheTenant() {
    Fakes.CountingLimiter limiter = new Fakes.CountingLimiter(1_000);
    ThrowingOnRoutedScorer scorer = new ThrowingOnRoutedScorer();
    scorer.throwOnEnded = true;
    RoutingEngine engine = engine(limiter, scorer);
    Routed failed = (Routed) engine.route(req("t", "m"));
    failed.lease().fail(Failure.of(Failure.Kind.CONNECT));
    assertThat(limiter.balance("t")).as("refunded before the first token").isEqualTo(1_000);
    Routed done = (Routed) engine.route(req("t", "m"));
    done.lease().firstToken();
    done.lease().complete(new Usage(16, 4, 0));
    assertThat(limiter.balance("t")).as("charged what it used").isEqualTo(1_000 - 20);
    assertThat(engine.inspect().backend("a").orElseThrow().inFlight()).isZero();
  }

  // ---------------------------------------------------------------- failures with usage

  /** A lease that fails after its first token pays for the output the caller saw produced. */
  @Test
  void aFailureWithUsageChargesWhatTheBackendProduced() {
    Fakes.CountingLimiter limiter = new Fakes.CountingLimiter(1_000);
    RoutingEngine engine = engine(limiter, new ThrowingOnRoutedScorer()); // throws nothing
    Routed broken = (Routed) engine.route(req("t", "m"));
    broken.lease().fail(Failure.of(Failure.Kind.SERVER_ERROR), Usage.of(16, 7));
    assertThat(limiter.balance("t")).as("the backend failed first: nothing").isEqualTo(1_000);

    // the client left before the first token: its prompt (the caller's usage), so that leaving
    // just before the first token does not make a request free (it was charged nothing)
    Routed before = (Routed) engine.route(req("t", "m"));
    before.lease().fail(Failure.of(Failure.Kind.CANCELLED), Usage.of(16, 0));
    assertThat(limiter.balance("t")).as("cancelled before the first token").isEqualTo(1_000 - 16);
    Routed unsaid = (Routed) engine.route(req("t", "m"));
    unsaid.lease().fail(Failure.of(Failure.Kind.CANCELLED));
    assertThat(limiter.balance("t")).as("without usage: nothing").isEqualTo(1_000 - 16);

    Routed after = (Routed) engine.route(req("t", "m"));
    after.lease().firstToken();
    after.lease().fail(Failure.of(Failure.Kind.CANCELLED), Usage.of(16, 7));
    assertThat(limiter.balance("t")).as("prompt and the output received").isEqualTo(1_000 - 39);
    after.lease().fail(Failure.of(Failure.Kind.CANCELLED), Usage.of(16, 9));
    assertThat(limiter.balance("t")).as("ended once").isEqualTo(1_000 - 39);

    Routed plain = (Routed) engine.route(req("t", "m"));
    plain.lease().firstToken();
    plain.lease().fail(Failure.of(Failure.Kind.CANCELLED));
    assertThat(limiter.balance("t")).as("without usage: the prompt").isEqualTo(1_000 - 39 - 16);
    assertThat(engine.inspect().backend("a").orElseThrow().inFlight()).isZero();
  }
}
