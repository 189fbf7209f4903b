package dev.prefixrouter.bench.fuzz;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BackendSnapshot;
import dev.prefixrouter.api.BlockRemoved;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.ChatMessage;
import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.KvEvent;
import dev.prefixrouter.api.LoadReport;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteDecision;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.radix.BlockHashers;
import dev.prefixrouter.radix.RadixPrefixIndex;
import dev.prefixrouter.scoring.CircuitBreakers;
import dev.prefixrouter.scoring.EstimatedTtftScorer;
import dev.prefixrouter.scoring.Quota;
import dev.prefixrouter.scoring.TenantTokenBuckets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Fuzzes {@code route()} and the lease protocol on the full stack (radix index, est-ttft scorer,
 * token buckets, circuit breakers): arbitrary tenants, models, prompts, salts, sessions, budgets,
 * lease call sequences, clock jumps, membership churn, KV events and load reports.
 *
 * <p>Asserts: building a {@link RouteRequest}, a {@link Usage} or a {@link Backend} from bad input
 * throws only {@link IllegalArgumentException} or {@link NullPointerException} (the documented
 * programmer errors); {@code route()}, {@code failover()}, the lease calls, the registry and the KV
 * event path never throw; and once every lease of a sequence has ended, every backend's in-flight
 * count is zero. Each input is at most {@value #MAX_OPS} operations on prompts of at most {@value
 * #MAX_PROMPT} tokens, so its time is bounded.
 *
 * <p>In {@code verify} this replays the committed inputs under {@code
 * src/test/resources/dev/prefixrouter/bench/fuzz/RouteFuzzTestInputs} (a few seconds). To fuzz for
 * a bounded time (here three minutes; without {@code JAZZER_MAX_DURATION} the annotation's ten):
 *
 * <pre>{@code
 * JAZZER_FUZZ=1 JAZZER_MAX_DURATION=3m JAZZER_INSTRUMENTATION_INCLUDES='dev.prefixrouter.**' \
 *     ./mvnw -B -ntp -pl benchmarks -am test \
 *     -Dtest=RouteFuzzTest -Dsurefire.failIfNoSpecifiedTests=false
 * }</pre>
 *
 * <p>Without {@code JAZZER_INSTRUMENTATION_INCLUDES} Jazzer instruments only the class-path
 * directories of this module (its default), not the other modules' jars, so the engine, index and
 * scorer run without coverage feedback (about 150 edges instead of 3,000) and the mutations are
 * blind.
 *
 * <p>Jazzer keeps its generated corpus in {@code benchmarks/.cifuzz-corpus} (ignored by git) and
 * writes a finding as {@code crash-<sha1>} into the inputs directory above, where it is replayed by
 * every later {@code verify}: commit it together with the fix.
 */
class RouteFuzzTest {
  static final int MAX_OPS = 64;
  static final int MAX_PROMPT = 2048;
  private static final String[] MODELS = {"m", "n", "alias", "split"};

  @FuzzTest(maxDuration = "10m")
  void routeAndLeasesNeverThrowNorLeak(FuzzedDataProvider data) {
    AtomicLong clock = new AtomicLong(data.consumeLong(0, Long.MAX_VALUE / 4));
    boolean isolation = data.consumeBoolean();
    RoutingEngine engine =
        RoutingEngine.builder()
            .ticker(clock::get)
            .maxBackends(8)
            .hasher(BlockHashers.tokens(16))
            .prefixIndex(RadixPrefixIndex.builder().maxBackends(8).build())
            .scorer(EstimatedTtftScorer.builder().build())
            .limiter(
                TenantTokenBuckets.builder()
                    .defaultQuota(Quota.perMinute(data.consumeLong(1, 1_000_000)))
                    .build())
            .health(CircuitBreakers.builder().maxBackends(8).build())
            .prefixIsolation(isolation)
            .modelAlias("alias", "m")
            .modelSplit("split", Map.of("m", 1, "n", 1))
            .backend(Backend.of("b0", "m"))
            .backend(Backend.of("b1", "m", "n"))
            .build();
    List<Routed> open = new ArrayList<>();
    int ops = data.consumeInt(1, MAX_OPS);
    for (int i = 0; i < ops && data.remainingBytes() > 0; i++) {
      switch (data.consumeInt(0, 9)) {
        case 0, 1, 2 -> route(engine, data, open);
        case 3, 4 -> endOrFailOver(data, open);
        case 5 -> clock.addAndGet(data.consumeLong(0, Long.MAX_VALUE / 8));
        case 6 -> churn(engine, data);
        case 7 -> kvEvents(engine, data);
        case 8 -> {
          LoadReport report = loadReport(data);
          if (report != null) {
            engine.backends().reportLoad(pickBackend(data), report);
          }
        }
        default -> engine.inspect();
      }
    }
    while (!open.isEmpty()) {
      Routed r = open.remove(open.size() - 1);
      r.lease().complete(Usage.of(1, 1));
      assertThat(r.lease().isEnded()).isTrue();
    }
    for (BackendSnapshot b : engine.inspect().backends()) {
      assertThat(b.inFlight()).as("in flight on %s after every lease ended", b.id()).isZero();
    }
  }

  private static void route(RoutingEngine engine, FuzzedDataProvider data, List<Routed> open) {
    RouteRequest request = request(data);
    if (request == null) {
      return;
    }
    RouteDecision d = engine.route(request);
    assertThat(d).isNotNull();
    if (d instanceof Routed r) {
      open.add(r);
    }
  }

  /** A request from the input, or null when the input is one the builder documents as invalid. */
  private static RouteRequest request(FuzzedDataProvider data) {
    try {
      String model =
          data.consumeBoolean()
              ? MODELS[data.consumeInt(0, MODELS.length - 1)]
              : data.consumeString(64);
      RouteRequest.Builder b =
          RouteRequest.builder(data.consumeString(64), model).prompt(prompt(data));
      if (data.consumeBoolean()) {
        b.session(data.consumeString(32));
      }
      if (data.consumeBoolean()) {
        b.cacheSalt(data.consumeString(32));
      }
      if (data.consumeBoolean()) {
        b.maxOutputTokens(data.consumeInt());
      }
      if (data.consumeBoolean()) {
        b.ttftBudget(
            data.consumeBoolean()
                ? Duration.ofNanos(data.consumeLong())
                : Duration.ofDays(data.consumeLong(-1, 1L << 40)));
      }
      if (data.consumeBoolean()) {
        b.sheddable(true);
      }
      if (data.consumeBoolean()) {
        b.requireCapability(data.consumeString(16));
      }
      return b.build();
    } catch (IllegalArgumentException | NullPointerException documented) {
      return null;
    }
  }

  private static Prompt prompt(FuzzedDataProvider data) {
    return switch (data.consumeInt(0, 2)) {
      case 0 -> {
        int n = data.consumeInt(0, MAX_PROMPT);
        int[] ids = new int[n];
        int vocab = data.consumeInt(1, 1 << 20);
        for (int i = 0; i < n && data.remainingBytes() > 0; i++) {
          ids[i] = data.consumeInt(0, vocab);
        }
        yield Prompt.ofTokens(ids);
      }
      case 1 -> Prompt.ofText(data.consumeString(MAX_PROMPT));
      default -> {
        List<ChatMessage> messages = new ArrayList<>();
        int n = data.consumeInt(0, 16);
        for (int i = 0; i < n; i++) {
          messages.add(ChatMessage.of(data.consumeString(12), data.consumeString(128)));
        }
        yield Prompt.ofChat(messages);
      }
    };
  }

  private static void endOrFailOver(FuzzedDataProvider data, List<Routed> open) {
    if (open.isEmpty()) {
      return;
    }
    Routed r = open.get(data.consumeInt(0, open.size() - 1));
    switch (data.consumeInt(0, 4)) {
      case 0 -> r.lease().firstToken();
      case 1 -> {
        Usage u = usage(data);
        if (u != null) {
          r.lease().complete(u);
        }
      }
      case 2 -> r.lease().fail(Failure.of(Failure.Kind.values()[data.consumeInt(0, 5)]));
      case 3 -> {
        r.lease().fail(Failure.httpStatus(data.consumeInt(500, 599)));
        if (r.lease().failover() instanceof Routed next) {
          open.add(next);
        }
      }
      default -> {
        if (r.lease().failover() instanceof Routed next) { // failover before failing: a no-op
          open.add(next);
        }
      }
    }
    open.removeIf(x -> x.lease().isEnded());
  }

  private static Usage usage(FuzzedDataProvider data) {
    try {
      return new Usage(data.consumeInt(), data.consumeInt(), data.consumeInt());
    } catch (IllegalArgumentException documented) {
      return null;
    }
  }

  private static String pickBackend(FuzzedDataProvider data) {
    return data.consumeBoolean() ? "b" + data.consumeInt(0, 5) : data.consumeString(16);
  }

  private static void churn(RoutingEngine engine, FuzzedDataProvider data) {
    String id = pickBackend(data);
    switch (data.consumeInt(0, 3)) {
      case 0 -> {
        Backend b;
        try {
          b =
              new Backend(
                  id,
                  java.util.Set.of(MODELS[data.consumeInt(0, 1)]),
                  java.util.Set.of(),
                  Map.of(),
                  data.consumeLong(0, 1L << 40),
                  data.consumeDouble());
        } catch (IllegalArgumentException | NullPointerException documented) {
          return;
        }
        try {
          engine.backends().add(b);
        } catch (IllegalStateException full) {
          // documented: the engine holds its maximum number of backends
        } catch (IllegalArgumentException rejected) {
          // documented: the radix index's capacity bound; nothing else may be rejected here
          assertThat(b.capacityBlocks()).isGreaterThan(Integer.MAX_VALUE - 8L);
        }
      }
      case 1 -> engine.backends().remove(id);
      case 2 -> {
        try {
          engine.backends().drain(id);
        } catch (java.util.NoSuchElementException documented) {
          // unknown id
        }
      }
      default -> {
        try {
          engine.backends().undrain(id);
        } catch (java.util.NoSuchElementException documented) {
          // unknown id
        }
      }
    }
  }

  private static void kvEvents(RoutingEngine engine, FuzzedDataProvider data) {
    List<KvEvent> batch = new ArrayList<>();
    int n = data.consumeInt(0, 8);
    try {
      for (int i = 0; i < n; i++) {
        long[] hashes = data.consumeLongs(data.consumeInt(1, 8));
        if (data.consumeBoolean()) {
          batch.add(new BlockRemoved(hashes, null));
        } else {
          int[] tokens = data.consumeInts(data.consumeInt(0, 128));
          batch.add(new BlockStored(hashes, null, tokens, data.consumeInt(1, 32), null));
        }
      }
    } catch (IllegalArgumentException | NullPointerException documented) {
      return;
    }
    engine.applyKvEvents(pickBackend(data), batch);
  }

  private static LoadReport loadReport(FuzzedDataProvider data) {
    try {
      return new LoadReport(
          data.consumeInt(),
          data.consumeInt(),
          data.consumeDouble(),
          Duration.ofNanos(data.consumeLong()));
    } catch (IllegalArgumentException | NullPointerException documented) {
      return null;
    }
  }
}
