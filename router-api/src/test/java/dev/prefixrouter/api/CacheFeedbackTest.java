package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The engine's cached counts against the router's predictions: meters and the index's report. */
class CacheFeedbackTest {
  private final AtomicLong clock = new AtomicLong(1_000_000_000L);
  private final Fakes.RecordingIndex index = new Fakes.RecordingIndex();

  /** One backend "a" (slot 0), 4-token blocks, prompts of 16 tokens (4 blocks). */
  private RoutingEngine engine() {
    return RoutingEngine.builder()
        .ticker(clock::get)
        .hasher(new Fakes.SimpleHasher())
        .prefixIndex(index)
        .backend(Backend.of("a", "m"))
        .build();
  }

  private static Routed route(RoutingEngine engine, int seed) {
    return (Routed)
        engine.route(
            RouteRequest.builder("t", "m")
                .prompt(Prompt.ofTokens(Fakes.tokens(16, seed)))
                .maxOutputTokens(8)
                .build());
  }

  private static CacheAccuracy accuracy(RoutingEngine engine) {
    return engine.inspect().backend("a").orElseThrow().cacheAccuracy();
  }

  private java.util.List<String> engineCalls() {
    return index.calls.stream().filter(c -> c.startsWith("engine")).toList();
  }

  @Test
  void overPredictionIsCountedAndReportedToTheIndexInBlocks() {
    index.matchBySlot.put(0, 3); // 12 tokens believed cached
    RoutingEngine engine = engine();
    route(engine, 0).lease().complete(new Usage(16, 2, 4));
    CacheAccuracy a = accuracy(engine);
    assertThat(a.reports()).isEqualTo(1);
    assertThat(a.predictedTokens()).isEqualTo(12);
    assertThat(a.engineCachedTokens()).isEqualTo(4);
    assertThat(a.overPredicted()).isEqualTo(1);
    assertThat(a.overPredictedTokens()).isEqualTo(8);
    assertThat(a.staleTokens()).isEqualTo(8); // nothing else was prefilling there
    assertThat(a.underPredicted()).isZero();
    assertThat(a.meanAbsoluteErrorTokens()).isEqualTo(8.0);
    assertThat(engineCalls()).containsExactly("engine 0 3 1 0");
  }

  @Test
  void aScorersDiscountForPrefixesStillPrefillingIsNotCountedAsAnUnderPrediction() {
    index.matchBySlot.put(0, 3); // the index believes 12 tokens are there
    dev.prefixrouter.api.spi.Scorer discounting =
        new dev.prefixrouter.api.spi.Scorer() {
          @Override
          public String name() {
            return "discounting";
          }

          @Override
          public void score(dev.prefixrouter.api.spi.ScoringContext ctx) {
            ctx.sortByCost(0);
          }

          @Override
          public int cachedTokens(dev.prefixrouter.api.spi.ScoringContext ctx, int candidate) {
            return 0; // as if another request were still prefilling the matched blocks
          }
        };
    RoutingEngine engine =
        RoutingEngine.builder()
            .ticker(clock::get)
            .hasher(new Fakes.SimpleHasher())
            .prefixIndex(index)
            .scorer(discounting)
            .backend(Backend.of("a", "m"))
            .build();
    Routed r = route(engine, 0);
    assertThat(r.matchedTokens()).isZero(); // the pending prefill charged for all 16
    assertThat(r.indexMatchedTokens()).as("the index's match, undiscounted").isEqualTo(12);
    Routed copy = // a host's copy around its own lease does not carry the index's match
        copyWith(
            r,
            new Lease() {
              @Override
              public void firstToken() {}

              @Override
              public void complete(Usage usage) {}

              @Override
              public void fail(Failure failure) {}

              @Override
              public RouteDecision failover() {
                throw new UnsupportedOperationException();
              }

              @Override
              public boolean isEnded() {
                return false;
              }
            });
    assertThat(copy.indexMatchedTokens()).isEqualTo(copy.matchedTokens());
    Routed wrapped = copyWith(r, forwarding(forwarding(r.lease())));
    assertThat(wrapped.indexMatchedTokens())
        .as("a copy around wrappers that forward the match, as the starter's observed lease does")
        .isEqualTo(12);
    r.lease().complete(new Usage(16, 2, 12)); // the engine served the 12 by the time it ran
    CacheAccuracy a = accuracy(engine);
    assertThat(a.predictedTokens()).isEqualTo(12);
    assertThat(a.exact()).isEqualTo(1);
    assertThat(a.underPredicted()).isZero();
    assertThat(engineCalls()).isEmpty();
  }

  /** {@code r} around another lease, as a host (or the starter's observed engine) copies it. */
  private static Routed copyWith(Routed r, Lease lease) {
    return new Routed(
        r.request(),
        r.backend(),
        r.resolvedModel(),
        r.fallbacks(),
        r.promptTokens(),
        r.matchedTokens(),
        r.cost(),
        r.reason(),
        r.attempt(),
        lease);
  }

  /** A lease that delegates every call, {@link Lease#indexMatchedTokensOr} included. */
  private static Lease forwarding(Lease wrapped) {
    return new Lease() {
      @Override
      public void firstToken() {
        wrapped.firstToken();
      }

      @Override
      public void complete(Usage usage) {
        wrapped.complete(usage);
      }

      @Override
      public void fail(Failure failure) {
        wrapped.fail(failure);
      }

      @Override
      public RouteDecision failover() {
        return wrapped.failover();
      }

      @Override
      public boolean isEnded() {
        return wrapped.isEnded();
      }

      @Override
      public int indexMatchedTokensOr(int otherwise) {
        return wrapped.indexMatchedTokensOr(otherwise);
      }
    };
  }

  @Test
  void underPredictionIsCountedAndReported() {
    RoutingEngine engine = engine(); // nothing believed
    route(engine, 0).lease().complete(new Usage(16, 2, 12));
    CacheAccuracy a = accuracy(engine);
    assertThat(a.underPredicted()).isEqualTo(1);
    assertThat(a.underPredictedTokens()).isEqualTo(12);
    assertThat(a.overPredicted()).isZero();
    assertThat(engineCalls()).containsExactly("engine 0 0 3 0");
  }

  @Test
  void theLastBlockTheEngineAlwaysComputesIsNotAnError() {
    index.matchBySlot.put(0, 4); // the whole 16-token prompt believed cached
    RoutingEngine engine = engine();
    route(engine, 0).lease().complete(new Usage(16, 2, 12)); // vLLM recomputes the last block
    CacheAccuracy a = accuracy(engine);
    assertThat(a.exact()).isEqualTo(1);
    assertThat(a.predictedTokens()).isEqualTo(12);
    assertThat(engineCalls()).isEmpty();
  }

  @Test
  void aUsageWithoutTheEnginesCountChangesNothing() {
    index.matchBySlot.put(0, 3);
    RoutingEngine engine = engine();
    route(engine, 0).lease().complete(Usage.of(16, 2));
    assertThat(accuracy(engine)).isEqualTo(CacheAccuracy.NONE);
    assertThat(engineCalls()).isEmpty();
  }

  /**
   * The engine's cached count of a request with other prompts covers them all: it says nothing of
   * the routed prompt's match, so it is neither counted nor reported to the index.
   */
  @Test
  void aRequestWithOtherPromptsGivesNoFeedback() {
    RoutingEngine engine = engine(); // nothing believed
    Routed r =
        (Routed)
            engine.route(
                RouteRequest.builder("t", "m")
                    .prompt(Prompt.ofTokens(Fakes.tokens(16, 0)))
                    .additionalPromptTokens(64)
                    .maxOutputTokens(8)
                    .build());
    r.lease().complete(new Usage(80, 2, 64)); // the other prompts' blocks were cached
    assertThat(accuracy(engine)).isEqualTo(CacheAccuracy.NONE); // under-predicted before
    assertThat(engineCalls()).isEmpty();
  }

  @Test
  void requestsStillPrefillingAtRoutingTimeBoundTheStaleTokens() {
    index.matchBySlot.put(0, 2); // 8 believed, 8 uncached per request
    RoutingEngine engine = engine();
    Routed first = route(engine, 0); // pending: 8 uncached tokens
    Routed second = route(engine, 1);
    second.lease().complete(new Usage(16, 2, 0));
    CacheAccuracy a = accuracy(engine);
    assertThat(a.overPredictedTokens()).isEqualTo(8);
    assertThat(a.staleTokens()).isZero(); // the first request may have been bringing them
    assertThat(engineCalls()).containsExactly("engine 0 2 0 2");
    first.lease().complete(new Usage(16, 2, 0));
    assertThat(accuracy(engine).staleTokens()).isEqualTo(8);
  }

  @Test
  void aThrowingIndexNeverBreaksCompletion() {
    Fakes.CountingLimiter limiter = new Fakes.CountingLimiter(1000);
    RoutingEngine engine =
        RoutingEngine.builder()
            .ticker(clock::get)
            .hasher(new Fakes.SimpleHasher())
            .limiter(limiter)
            .prefixIndex(
                new Fakes.RecordingIndex() {
                  @Override
                  public void onEngineCached(int s, int p, int e, int f, long now) {
                    throw new IllegalStateException("boom");
                  }
                })
            .backend(Backend.of("a", "m"))
            .build();
    Routed r = route(engine, 0);
    assertThatCode(() -> r.lease().complete(new Usage(16, 2, 12))).doesNotThrowAnyException();
    assertThat(r.lease().isEnded()).isTrue();
    assertThat(limiter.balance("t")).isEqualTo(1000 - 18); // trued up all the same
    assertThat(accuracy(engine).underPredicted()).isEqualTo(1);
  }
}
