package dev.prefixrouter.bench.jmh;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.CapacityObjective;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.api.spi.PredictionSink;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.radix.BlockHashers;
import dev.prefixrouter.radix.RadixPrefixIndex;
import dev.prefixrouter.scoring.CircuitBreakers;
import dev.prefixrouter.scoring.EstimatedTtftScorer;
import dev.prefixrouter.scoring.Quota;
import dev.prefixrouter.scoring.TenantTokenBuckets;
import java.time.Duration;
import java.util.SplittableRandom;
import org.jspecify.annotations.Nullable;

/**
 * The end-to-end fixture of {@link RouteBenchmark} and {@link RouteProbe}: the default parts
 * (city64 16-token blocks, radix index, est-TTFT, tenant buckets, circuit breakers), 16 backends of
 * 62,500 blocks, 8,192 prompts of 4,096 tokens (a 1,024-token system prompt out of 64, then 3,072
 * random tokens), each routed four times so the index holds about 1M blocks.
 */
public final class RouteFixture {
  public final BlockHasher hasher = BlockHashers.tokens(16);
  public final RoutingEngine engine;
  public final Prompt[] prompts = new Prompt[8192];

  public RouteFixture() {
    this(PredictionSink.none());
  }

  /** The same fixture whose engine hands every route's keys to {@code sink}. */
  public RouteFixture(PredictionSink sink) {
    this(sink, EstimatedTtftScorer.defaults(), null);
  }

  /**
   * The same fixture with another scorer and, when not null, a capacity objective (for {@link
   * ExtensionsProbe}).
   */
  public RouteFixture(PredictionSink sink, Scorer scorer, @Nullable CapacityObjective objective) {
    var b =
        RoutingEngine.builder()
            .predictionSink(sink)
            .hasher(hasher)
            .prefixIndex(RadixPrefixIndex.builder().predictionTtl(Duration.ZERO).build())
            .scorer(scorer)
            // the largest quota: the bucket does all its work per route but refills (2^40 tokens a
            // minute) faster than any thread can route, so a fast host never drains it (2^33, the
            // value before, lasted about 15 s of two threads at 70k routes/s each)
            .limiter(TenantTokenBuckets.perMinute(Quota.MAX_TOKENS))
            .health(CircuitBreakers.defaults());
    if (objective != null) {
      b.capacityObjective(objective);
    }
    for (int i = 0; i < 16; i++) {
      b.backend(Backend.of("b" + i, "m").withCapacityBlocks(62_500));
    }
    engine = b.build();
    SplittableRandom rnd = new SplittableRandom(9);
    int[][] system = new int[64][1024];
    for (int[] s : system) {
      for (int i = 0; i < s.length; i++) {
        s[i] = rnd.nextInt(150_000);
      }
    }
    for (int p = 0; p < prompts.length; p++) {
      int[] ids = new int[4096];
      System.arraycopy(system[p % 64], 0, ids, 0, 1024);
      for (int i = 1024; i < ids.length; i++) {
        ids[i] = rnd.nextInt(150_000);
      }
      prompts[p] = Prompt.ofTokens(ids);
    }
    for (int round = 0; round < 4; round++) {
      for (Prompt p : prompts) {
        complete(p);
      }
    }
  }

  /** One route of {@code p} for tenant "t", then its first token and completion. */
  public Routed complete(Prompt p) {
    return complete(p, "t");
  }

  /** One route of {@code p} for {@code tenant}, then its first token and completion. */
  public Routed complete(Prompt p, String tenant) {
    return complete(p, tenant, null);
  }

  /**
   * One route of {@code p} for {@code tenant} in {@code session} (none if null), then its first
   * token and completion.
   */
  public Routed complete(Prompt p, String tenant, @Nullable String session) {
    Routed r =
        (Routed)
            engine.route(
                RouteRequest.builder(tenant, "m")
                    .prompt(p)
                    .session(session)
                    .maxOutputTokens(64)
                    .build());
    r.lease().firstToken();
    r.lease().complete(Usage.of(4096, 64));
    return r;
  }

  /** The {@code i}-th of the 256 most recently warmed prompts (held in full, hot in CPU caches). */
  public Prompt held(int i) {
    return prompts[prompts.length - 1 - (i & 255)];
  }

  /** The session id of {@link #held}{@code (i)}: one per held prompt, made once. */
  public String heldSession(int i) {
    return sessions[i & 255];
  }

  private final String[] sessions = new String[256];

  {
    for (int i = 0; i < sessions.length; i++) {
      sessions[i] = "session-" + i;
    }
  }

  /** Prompts {@link #heldCold} draws from: the 4,096 most recently warmed (held, index cold). */
  public static final int COLD_HELD = 4096;

  /**
   * The {@code i}-th of the {@value #COLD_HELD} most recently warmed prompts: drawn at random from
   * that many, a route walks parts of the index no recent route touched, as in a real gateway.
   */
  public Prompt heldCold(int i) {
    return prompts[prompts.length - 1 - Math.floorMod(i, COLD_HELD)];
  }
}
