package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** QuickTheories properties of the pipeline, driven by random operation sequences. */
class PipelinePropertiesTest {

  /** One operation: a kind and an argument used to pick a lease, backend or request shape. */
  record Op(int kind, int arg) {}

  private static final int ROUTE = 0;
  private static final int FIRST_TOKEN = 1;
  private static final int COMPLETE = 2;
  private static final int FAIL = 3;
  private static final int FAILOVER = 4;
  private static final int DRAIN_TOGGLE = 5;
  private static final int REMOVE = 6;
  private static final int ADD = 7;
  private static final int REPEAT_END = 8;

  private static org.quicktheories.core.Gen<List<Op>> ops() {
    return lists()
        .of(integers().between(0, 8).zip(integers().between(0, 1_000), Op::new))
        .ofSizeBetween(1, 120);
  }

  private static final class Harness {
    final AtomicLong clock = new AtomicLong();
    final Fakes.CountingLimiter limiter = new Fakes.CountingLimiter(2_000);
    final RoutingEngine engine;
    final List<Routed> leases = new ArrayList<>();
    final Set<String> present = new HashSet<>();
    long charged; // what ended leases should have cost the tenant
    int nextId = 4;

    Harness() {
      RoutingEngineBuilder b =
          RoutingEngine.builder()
              .ticker(clock::get)
              .limiter(limiter)
              .health(new Fakes.SimpleBreaker(3))
              .retryBudget(2);
      for (int i = 0; i < 4; i++) {
        b.backend(Backend.of("b" + i, "m"));
        present.add("b" + i);
      }
      engine = b.build();
    }

    RouteRequest request(int arg) {
      String model = arg % 7 == 0 ? "unknown" : "m";
      return RouteRequest.builder("t", model)
          .prompt(Prompt.ofTokens(Fakes.tokens(8 + arg % 40, arg)))
          .maxOutputTokens(arg % 50)
          .build();
    }

    void apply(Op op) {
      clock.addAndGet(1_000);
      switch (op.kind()) {
        case ROUTE -> {
          long before = engine.inspect().inFlight();
          long balanceBefore = limiter.balance("t");
          RouteDecision d = engine.route(request(op.arg()));
          check(d);
          if (d instanceof Routed r) {
            leases.add(r);
            assertThat(engine.inspect().inFlight()).isEqualTo(before + 1);
          } else {
            assertThat(engine.inspect().inFlight())
                .as("rejection changed in-flight")
                .isEqualTo(before);
            assertThat(limiter.balance("t")).as("rejection kept a charge").isEqualTo(balanceBefore);
          }
        }
        case FIRST_TOKEN -> pick(op).ifPresent(r -> r.lease().firstToken());
        case COMPLETE, REPEAT_END -> pick(op).ifPresent(this::complete);
        case FAIL -> pick(op).ifPresent(r -> fail(r, op.arg()));
        case FAILOVER -> {
          pick(op)
              .ifPresent(
                  r -> {
                    long before = engine.inspect().inFlight();
                    RouteDecision d = r.lease().failover();
                    check(d);
                    if (d instanceof Routed n) {
                      leases.add(n);
                      assertThat(engine.inspect().inFlight()).isEqualTo(before + 1);
                      assertThat(n.backendId()).isNotEqualTo(r.backendId());
                    } else {
                      assertThat(engine.inspect().inFlight()).isEqualTo(before);
                    }
                  });
        }
        case DRAIN_TOGGLE -> {
          List<Backend> all = engine.backends().all();
          if (!all.isEmpty()) {
            String id = all.get(op.arg() % all.size()).id();
            if (engine.inspect().backend(id).orElseThrow().draining()) {
              engine.backends().undrain(id);
            } else {
              engine.backends().drain(id);
            }
          }
        }
        case REMOVE -> {
          List<Backend> all = engine.backends().all();
          if (!all.isEmpty()) {
            String id = all.get(op.arg() % all.size()).id();
            assertThat(engine.backends().remove(id)).isTrue();
            present.remove(id);
          }
        }
        case ADD -> {
          if (present.size() < 6) {
            String id = "b" + nextId++;
            engine.backends().add(Backend.of(id, "m"));
            present.add(id);
          }
        }
        default -> throw new AssertionError(op);
      }
    }

    void check(RouteDecision d) {
      if (d instanceof Routed r) {
        assertThat(present).as("decision names a removed backend").contains(r.backendId());
      }
    }

    java.util.Optional<Routed> pick(Op op) {
      return leases.isEmpty()
          ? java.util.Optional.empty()
          : java.util.Optional.of(leases.get(op.arg() % leases.size()));
    }

    void complete(Routed r) {
      boolean wasEnded = r.lease().isEnded();
      r.lease().complete(Usage.of(r.promptTokens(), 3));
      if (!wasEnded) {
        charged += r.promptTokens() + 3;
      }
    }

    void fail(Routed r, int arg) {
      if (r.lease().isEnded()) {
        r.lease().fail(Failure.of(Failure.Kind.CONNECT));
        return;
      }
      // a failure after the first token charges the prompt; we cannot see the state, so probe it
      // through inspect: pendingPrefill drops at first token. Simpler: track via a side channel.
      boolean streaming = firstTokenSeen(r);
      r.lease().fail(Failure.of(arg % 2 == 0 ? Failure.Kind.CONNECT : Failure.Kind.CANCELLED));
      if (streaming) {
        charged += r.promptTokens();
      }
    }

    final Set<Routed> firstTokens = new HashSet<>();

    boolean firstTokenSeen(Routed r) {
      return firstTokens.contains(r);
    }

    void endAll() {
      for (Routed r : leases) {
        complete(r);
      }
    }
  }

  @Test
  void inFlightReturnsToZeroAndChargesAreConservedForAnyInterleaving() {
    qt().withExamples(200)
        .forAll(ops())
        .checkAssert(
            ops -> {
              Harness h = new Harness();
              for (Op op : ops) {
                if (op.kind() == FIRST_TOKEN && !h.leases.isEmpty()) {
                  Routed r = h.leases.get(op.arg() % h.leases.size());
                  if (!r.lease().isEnded()) {
                    h.firstTokens.add(r);
                  }
                }
                h.apply(op);
                assertThat(h.engine.inspect().backends())
                    .allSatisfy(
                        b -> {
                          assertThat(b.inFlight()).isNotNegative();
                          assertThat(b.runningDecodes()).isNotNegative();
                          assertThat(b.pendingPrefillTokens()).isNotNegative();
                        });
              }
              h.endAll();
              RouterSnapshot s = h.engine.inspect();
              assertThat(s.inFlight()).isZero();
              assertThat(s.backends())
                  .allSatisfy(
                      b -> {
                        assertThat(b.runningDecodes()).isZero();
                        assertThat(b.pendingPrefillTokens()).isZero();
                      });
              assertThat(h.limiter.balance("t")).isEqualTo(2_000 - h.charged);
            });
  }

  @Test
  void completeAndFailAreIdempotent() {
    qt().withExamples(100)
        .forAll(lists().of(integers().between(0, 3)).ofSizeBetween(1, 12))
        .checkAssert(
            calls -> {
              Fakes.CountingLimiter limiter = new Fakes.CountingLimiter(1_000);
              RoutingEngine engine =
                  RoutingEngine.builder().limiter(limiter).backend(Backend.of("a", "m")).build();
              Routed r =
                  (Routed)
                      engine.route(
                          RouteRequest.builder("t", "m")
                              .prompt(Prompt.ofTokens(Fakes.tokens(10, 0)))
                              .maxOutputTokens(10)
                              .build());
              Long firstEnd = null;
              for (int c : calls) {
                switch (c) {
                  case 0 -> r.lease().firstToken();
                  case 1 -> r.lease().complete(Usage.of(10, 5));
                  case 2 -> r.lease().fail(Failure.of(Failure.Kind.TIMEOUT));
                  default -> r.lease().fail(Failure.of(Failure.Kind.CANCELLED));
                }
                if (firstEnd == null && c != 0) {
                  firstEnd = limiter.balance("t");
                }
                if (firstEnd != null) {
                  assertThat(limiter.balance("t")).isEqualTo(firstEnd);
                  assertThat(engine.inspect().inFlight()).isZero();
                  assertThat(r.lease().isEnded()).isTrue();
                }
              }
            });
  }

  @Test
  void weightedSplitsConvergeToTheirWeights() {
    qt().withExamples(20)
        .forAll(integers().between(1, 99), integers().between(1, 99))
        .checkAssert(
            (wa, wb) -> {
              RoutingEngine engine =
                  RoutingEngine.builder()
                      .modelSplit("chat", Map.of("va", wa, "vb", wb))
                      .backend(Backend.of("a", "va"))
                      .backend(Backend.of("b", "vb"))
                      .build();
              int n = 20_000;
              int toA = 0;
              RouteRequest r = RouteRequest.builder("t", "chat").build();
              for (int i = 0; i < n; i++) {
                Routed d = (Routed) engine.route(r);
                if (d.resolvedModel().equals("va")) {
                  toA++;
                }
                d.lease().complete(Usage.of(0, 0));
              }
              double expected = (double) wa / (wa + wb);
              assertThat((double) toA / n)
                  .isCloseTo(expected, org.assertj.core.data.Offset.offset(0.015));
            });
  }

  @Test
  void stickySplitsAlsoConvergeAcrossSessions() {
    RoutingEngine engine =
        RoutingEngine.builder()
            .modelSplit("chat", Map.of("va", 90, "vb", 10))
            .backend(Backend.of("a", "va"))
            .backend(Backend.of("b", "vb"))
            .build();
    int toB = 0;
    int n = 20_000;
    for (int i = 0; i < n; i++) {
      Routed d =
          (Routed) engine.route(RouteRequest.builder("t", "chat").session("session-" + i).build());
      if (d.resolvedModel().equals("vb")) {
        toB++;
      }
    }
    assertThat((double) toB / n).isCloseTo(0.10, org.assertj.core.data.Offset.offset(0.015));
  }
}
