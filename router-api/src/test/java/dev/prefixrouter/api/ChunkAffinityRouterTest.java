package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class ChunkAffinityRouterTest {
  private final AtomicLong clock = new AtomicLong(1_000_000_000L);

  /** The default least-in-flight scorer: cost = requests in flight, ties rotate. */
  private RoutingEngine engine(String... ids) {
    RoutingEngineBuilder b = RoutingEngine.builder().ticker(clock::get);
    for (String id : ids) {
      b.backend(Backend.of(id, "m"));
    }
    return b.build();
  }

  private static RouteRequest req() {
    return RouteRequest.builder("t", "m").prompt(Prompt.ofTokens(Fakes.tokens(32, 7))).build();
  }

  private static Routed routed(RouteDecision d) {
    assertThat(d).isInstanceOf(Routed.class);
    return (Routed) d;
  }

  private static List<String> ids(String... ids) {
    return Arrays.asList(ids);
  }

  private static void done(Routed r) {
    r.lease().complete(Usage.of(32, 1));
  }

  @Test
  void overlappingSetsInAnyOrderFollowTheBackendHoldingMostOfThemWhileRoutedAloneTheySpread() {
    Set<String> alone = new HashSet<>();
    RoutingEngine control = engine("b0", "b1", "b2");
    for (int i = 0; i < 6; i++) {
      Routed r = routed(control.route(req()));
      alone.add(r.backendId());
      done(r);
    }
    assertThat(alone).hasSizeGreaterThan(1); // the control: ties rotate

    ChunkAffinityRouter rag = ChunkAffinityRouter.builder(engine("b0", "b1", "b2")).build();
    Routed first = routed(rag.route(req(), ids("a", "b", "c", "d", "e")));
    done(first);
    List<List<String>> sets =
        List.of(
            ids("e", "d", "c", "x", "y"),
            ids("y", "a", "q", "r", "s"),
            ids("b", "a", "z", "w", "v"),
            ids("c", "e", "a", "b", "d"),
            ids("v", "w", "c", "k", "l"));
    for (List<String> set : sets) {
      Routed r = routed(rag.route(req(), set));
      assertThat(r.backendId()).isEqualTo(first.backendId());
      done(r);
    }
    assertThat(rag.stats().steered() + rag.stats().byEngine()).isEqualTo(6);
    assertThat(rag.stats().steered()).isPositive();
    assertThat(rag.held(first.backendId(), ids("a", "x", "q", "z", "k", "nope"))).isEqualTo(5);
  }

  /**
   * Chunk ids count within the request's cache namespace: another tenant under prefix isolation, or
   * another cache salt, sending the same ids holds nothing of them (its KV cannot be reused).
   */
  @Test
  void chunkIdsAreHeldPerCacheNamespace() {
    RoutingEngineBuilder b = RoutingEngine.builder().ticker(clock::get).prefixIsolation(true);
    for (String id : List.of("b0", "b1", "b2")) {
      b.backend(Backend.of(id, "m"));
    }
    ChunkAffinityRouter rag = ChunkAffinityRouter.builder(b.build()).build();
    RouteRequest alice = req();
    RouteRequest bob = RouteRequest.builder("bob", "m").prompt(alice.prompt()).build();
    RouteRequest salted = alice.toBuilder().cacheSalt("s1").build();
    Routed first = routed(rag.route(alice, ids("doc-1#0", "doc-1#1")));
    done(first);
    String at = first.backendId();
    assertThat(rag.held(at, alice, ids("doc-1#0", "doc-1#1"))).isEqualTo(2);
    assertThat(rag.held(at, bob, ids("doc-1#0", "doc-1#1"))).isZero();
    assertThat(rag.held(at, salted, ids("doc-1#0", "doc-1#1"))).isZero();
    assertThat(rag.held(at, ids("doc-1#0"))).as("the shared namespace").isZero();
    // bob's first request with those ids is not steered by alice's chunks; his own then count
    Routed bobs = routed(rag.route(bob, ids("doc-1#0", "doc-1#1")));
    done(bobs);
    assertThat(rag.stats().steered()).isZero();
    assertThat(rag.held(bobs.backendId(), bob, ids("doc-1#0", "doc-1#1"))).isEqualTo(2);
  }

  /**
   * An adapter request reached through an alias keeps its chunks in the adapter's namespace (the
   * model the route resolves), as its KV keys are: chunks the base model's requests left on a
   * backend are not the adapter's, and the adapter's own count.
   */
  @Test
  void anAliasedAdapterRequestCountsOnlyTheAdaptersChunks() {
    RoutingEngineBuilder b =
        RoutingEngine.builder().ticker(clock::get).loraAdapter("sql1").modelAlias("sql", "sql1");
    for (String id : List.of("b0", "b1")) {
      b.backend(Backend.of(id, "m", "sql1"));
    }
    ChunkAffinityRouter rag = ChunkAffinityRouter.builder(b.build()).build();
    RouteRequest base = req();
    RouteRequest adapter = RouteRequest.builder("t", "sql").prompt(base.prompt()).build();
    Routed first = routed(rag.route(base, ids("doc-1#0", "doc-1#1")));
    done(first);
    String at = first.backendId();
    assertThat(rag.held(at, base, ids("doc-1#0", "doc-1#1"))).isEqualTo(2);
    assertThat(rag.held(at, adapter, ids("doc-1#0", "doc-1#1"))).isZero(); // 2 before
    Routed own = routed(rag.route(adapter, ids("doc-1#0", "doc-1#1")));
    assertThat(rag.stats().steered()).as("not steered by the base model's chunks").isZero();
    done(own);
    assertThat(rag.held(own.backendId(), adapter, ids("doc-1#0", "doc-1#1"))).isEqualTo(2);
  }

  /** A chunk id or a cache salt has a length bound: a clear error, not memory per id. */
  @Test
  void longChunkIdsAndSaltsAreRefused() {
    ChunkAffinityRouter rag = ChunkAffinityRouter.builder(engine("b0")).build();
    String longId = "x".repeat(ChunkAffinityRouter.MAX_CHUNK_ID_LENGTH + 1);
    assertThatThrownBy(() -> rag.route(req(), ids("a", longId)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("chunk ids must be at most 256");
    assertThatThrownBy(() -> rag.held("b0", req(), ids(longId)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(rag.route(req(), ids("x".repeat(256)))).isInstanceOf(Routed.class);
    assertThatThrownBy(() -> req().toBuilder().cacheSalt("s".repeat(1025)).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cacheSalt must be at most 1024");
    assertThat(req().toBuilder().cacheSalt("s".repeat(1024)).build().cacheSalt()).hasSize(1024);
  }

  @Test
  void noChunkIdsIsThePlainRoute() {
    ChunkAffinityRouter rag = ChunkAffinityRouter.builder(engine("b0", "b1")).build();
    Routed r = routed(rag.route(req(), List.of()));
    assertThat(r.reason()).doesNotContain("chunk affinity");
    assertThat(rag.stats()).isEqualTo(new ChunkAffinityRouter.Stats(0, 0, 0));
  }

  /** Routes plain requests (cancelling extras) until each backend has its target in flight. */
  private static void fill(RoutingEngine e, String a, int na, String b, int nb) {
    for (int i = 0; i < 100; i++) {
      int ha = e.inspect().backend(a).orElseThrow().inFlight();
      int hb = e.inspect().backend(b).orElseThrow().inFlight();
      if (ha == na && hb == nb) {
        return;
      }
      Routed r = routed(e.route(req()));
      int target = r.backendId().equals(a) ? na : nb;
      if (e.inspect().backend(r.backendId()).orElseThrow().inFlight() > target) {
        r.lease().fail(new Failure(Failure.Kind.CANCELLED, "setup"));
      }
    }
    throw new AssertionError("setup did not converge");
  }

  @Test
  void aHolderCostingMoreThanTheRatioTimesTheBestDoesNotTakeIt() {
    for (double ratio : new double[] {1.25, 2}) {
      RoutingEngine e = engine("b0", "b1");
      ChunkAffinityRouter rag = ChunkAffinityRouter.builder(e).costRatio(ratio).build();
      String holder = routed(rag.route(req(), ids("a", "b", "c"))).backendId();
      String other = holder.equals("b0") ? "b1" : "b0";
      fill(e, holder, 2, other, 1); // costs 2 and 1
      Routed r = routed(rag.route(req(), ids("a", "b", "c")));
      assertThat(r.backendId()).as("ratio " + ratio).isEqualTo(ratio < 2 ? other : holder);
    }
  }

  @Test
  void aHolderWithoutRoomDoesNotTakeIt() {
    RoutingEngine e = engine("b0", "b1");
    ChunkAffinityRouter rag = ChunkAffinityRouter.builder(e).maxQueued(1).costRatio(1000).build();
    Routed first = routed(rag.route(req(), ids("a", "b", "c"))); // 1 queued before first token
    Routed second = routed(rag.route(req(), ids("a", "b", "z"))); // the holder has no room
    assertThat(second.backendId()).isNotEqualTo(first.backendId());
    first.lease().firstToken(); // decoding now: room again, both cost 1
    second.lease().firstToken();
    Routed third = routed(rag.route(req(), ids("a", "b", "c"))); // 3 held there, 2 on the other
    assertThat(third.backendId()).isEqualTo(first.backendId());
  }

  @Test
  void minExtraChunksIsTheMarginOverTheEnginesChoice() {
    RoutingEngine e = engine("b0", "b1");
    ChunkAffinityRouter strict = ChunkAffinityRouter.builder(e).minExtraChunks(3).build();
    done(routed(strict.route(req(), ids("a", "b"))));
    Set<String> used = new HashSet<>();
    for (int i = 0; i < 4; i++) {
      Routed r = routed(strict.route(req(), ids("a", "b", "n" + i)));
      assertThat(r.reason()).isNotEqualTo(ChunkAffinityRouter.REASON); // 2 more held, 3 needed
      used.add(r.backendId());
      done(r);
    }
    assertThat(used).hasSize(2); // ties rotate: the engine's own choice was the other at times

    ChunkAffinityRouter lax =
        ChunkAffinityRouter.builder(engine("b0", "b1")).minExtraChunks(2).build();
    Routed first = routed(lax.route(req(), ids("a", "b")));
    done(first);
    for (int i = 0; i < 4; i++) {
      Routed r = routed(lax.route(req(), ids("a", "b")));
      assertThat(r.backendId()).isEqualTo(first.backendId());
      done(r);
    }
    assertThat(lax.stats().steered()).isPositive();
  }

  @Test
  void itNeverTradesTheEnginesPrefixHitForChunksElsewhere() {
    Fakes.RecordingIndex index = new Fakes.RecordingIndex();
    java.util.concurrent.atomic.AtomicInteger rotation =
        new java.util.concurrent.atomic.AtomicInteger();
    RoutingEngine e =
        RoutingEngine.builder()
            .ticker(clock::get)
            .prefixIndex(index)
            .hasher(new Fakes.SimpleHasher())
            .scorer(
                new dev.prefixrouter.api.spi.Scorer() { // a longer prefix costs less; ties rotate
                  @Override
                  public String name() {
                    return "prefix";
                  }

                  @Override
                  public void score(dev.prefixrouter.api.spi.ScoringContext ctx) {
                    for (int i = 0; i < ctx.size(); i++) {
                      ctx.setCost(i, 1 - ctx.matchedTokens(i) / 100.0);
                    }
                    ctx.sortByCost(rotation.getAndIncrement());
                  }
                })
            .backend(Backend.of("b0", "m"))
            .backend(Backend.of("b1", "m"))
            .build();
    ChunkAffinityRouter rag = ChunkAffinityRouter.builder(e).costRatio(1000).build();
    Routed first = routed(rag.route(req(), ids("a", "b", "c")));
    done(first);
    int holderSlot = first.backendId().equals("b0") ? 0 : 1;
    index.matchBySlot.put(0, 2);
    index.matchBySlot.put(1, 2); // equal prefixes: the chunks decide
    for (int i = 0; i < 4; i++) {
      Routed r = routed(rag.route(req(), ids("a", "b", "c")));
      assertThat(r.backendId()).isEqualTo(first.backendId());
      done(r);
    }
    assertThat(rag.stats().steered()).isPositive();
    index.matchBySlot.put(1 - holderSlot, 3); // the other has the longer prefix
    Routed r = routed(rag.route(req(), ids("a", "b", "c")));
    assertThat(r.backendId()).isNotEqualTo(first.backendId());
  }

  @Test
  void memoryPerBackendIsBoundedLeastRecentlyRoutedFirstOut() {
    qt().withExamples(50)
        .forAll(
            integers().between(1, 20),
            lists()
                .of(lists().of(integers().between(0, 60)).ofSizeBetween(1, 8))
                .ofSizeBetween(1, 30))
        .checkAssert(
            (max, sets) -> {
              RoutingEngine e = engine("b0", "b1", "b2");
              ChunkAffinityRouter rag =
                  ChunkAffinityRouter.builder(e).maxChunksPerBackend(max).build();
              List<String> all = new ArrayList<>();
              for (int i = 0; i <= 60; i++) {
                all.add("c" + i);
              }
              for (List<Integer> set : sets) {
                List<String> ids = set.stream().map(c -> "c" + c).toList();
                Routed r = routed(rag.route(req(), ids));
                // the chosen backend holds every chunk of the request it was just sent, if they fit
                assertThat(rag.held(r.backendId(), ids))
                    .isEqualTo(Math.min(max, new HashSet<>(ids).size()));
                done(r);
                for (String b : List.of("b0", "b1", "b2")) {
                  assertThat(rag.held(b, all)).isLessThanOrEqualTo(max);
                }
              }
            });
  }

  @Test
  void inputAndSettingsAreValidated() {
    RoutingEngine e = engine("b0");
    ChunkAffinityRouter rag = ChunkAffinityRouter.builder(e).build();
    List<String> many = new ArrayList<>();
    for (int i = 0; i <= ChunkOrder.MAX_CHUNKS; i++) {
      many.add("c" + i);
    }
    assertThatThrownBy(() -> rag.route(req(), many))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("chunk ids");
    assertThatThrownBy(() -> rag.route(req(), Arrays.asList("a", null)))
        .isInstanceOf(NullPointerException.class);
    ChunkAffinityRouter.Builder b = ChunkAffinityRouter.builder(e);
    assertThatThrownBy(() -> b.costRatio(0.9)).hasMessageContaining("costRatio");
    assertThatThrownBy(() -> b.maxQueued(0)).hasMessageContaining("maxQueued");
    assertThatThrownBy(() -> b.minExtraChunks(0)).hasMessageContaining("minExtraChunks");
    assertThatThrownBy(() -> b.maxChunksPerBackend(0)).hasMessageContaining("maxChunksPerBackend");
    assertThatThrownBy(() -> b.maxBackends(0)).hasMessageContaining("maxBackends");
  }
}
