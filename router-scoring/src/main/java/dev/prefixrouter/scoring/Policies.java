package dev.prefixrouter.scoring;

import dev.prefixrouter.api.LoadReport;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * The decision rules of the routers we compare against, as {@link Scorer}s, each faithful to {@code
 * shared/reference/anchor-policies.md} with its published defaults. Select by name for experiments
 * ({@link #byName(String)}); the simulator runs them side by side.
 *
 * <table>
 *   <caption>Policies</caption>
 *   <tr><th>name</th><th>rule</th></tr>
 *   <tr><td>{@code est-ttft}</td><td>ours: {@link EstimatedTtftScorer}</td></tr>
 *   <tr><td>{@code est-ttft-sticky}</td><td>ours without the fleet-balance term</td></tr>
 *   <tr><td>{@code round-robin}</td><td>{@code C[rr mod |C|]}</td></tr>
 *   <tr><td>{@code least-request}</td><td>fewest router in-flight; rotating ties</td></tr>
 *   <tr><td>{@code p2c}</td><td>two distinct random candidates, fewer in-flight wins</td></tr>
 *   <tr><td>{@code consistent-hash}</td><td>{@code C[h0 mod |C|]} on the first block key</td></tr>
 *   <tr><td>{@code sglang-cache-aware}</td><td>imbalance gate (64, 1.5) → least load; else
 *       deepest match if match rate &gt; 0.3, else least load</td></tr>
 *   <tr><td>{@code dynamo-kv}</td><td>{@code prefill_tokens/B + decode_blocks}, overlap
 *       weight 1, temperature 0</td></tr>
 *   <tr><td>{@code llmd-3-2-2}</td><td>3·prefix + 2·queue + 2·kv-cache scores, max wins</td></tr>
 *   <tr><td>{@code gateway-shipped}</td><td>published gateway est-TTFT, shipped defaults (p 0.05,
 *       s 200, max in-flight 64, band 5)</td></tr>
 *   <tr><td>{@code gateway-calibrated}</td><td>the same with its calibrated constants (s 1, max
 *       in-flight 24, band 2)</td></tr>
 * </table>
 *
 * <p>Where a rule needs state the library keeps elsewhere, the shared parts are used: prefix
 * matches come from the engine's {@code PrefixIndex} (SGLang's and the gateway's trees are also
 * optimistic "routed here" beliefs), loads from the router's own in-flight counts, queues and KV
 * usage from host load reports. Randomised rules draw from a seeded SplitMix64 sequence so runs are
 * reproducible. Every policy is thread-safe.
 */
public final class Policies {
  private Policies() {}

  /** Names accepted by {@link #byName}, in presentation order. */
  public static final List<String> NAMES =
      List.of(
          "est-ttft",
          "est-ttft-sticky",
          "round-robin",
          "least-request",
          "p2c",
          "consistent-hash",
          "sglang-cache-aware",
          "dynamo-kv",
          "llmd-3-2-2",
          "gateway-shipped",
          "gateway-calibrated");

  /**
   * A fresh scorer for a policy name (case-insensitive).
   *
   * @throws IllegalArgumentException for an unknown name, listing the known ones
   */
  public static Scorer byName(String name) {
    Supplier<Scorer> s =
        switch (name.toLowerCase(Locale.ROOT)) {
          case "est-ttft" -> EstimatedTtftScorer::defaults;
          case "est-ttft-sticky" ->
              () -> EstimatedTtftScorer.builder().name("est-ttft-sticky").balance(0, 0, 1).build();
          case "round-robin" -> RoundRobin::new;
          case "least-request" -> LeastRequest::new;
          case "p2c" -> () -> new PowerOfTwo(42);
          case "consistent-hash" -> ConsistentHash::new;
          case "sglang-cache-aware" -> () -> new SglangCacheAware(0.3, 64, 1.5);
          case "dynamo-kv" -> () -> new DynamoKv(1.0);
          case "llmd-3-2-2" -> () -> new LlmdWeighted(3, 2, 2);
          case "gateway-shipped" -> () -> new GatewayEstTtft("gateway-shipped", 0.05, 200, 64, 5);
          case "gateway-calibrated" ->
              () -> new GatewayEstTtft("gateway-calibrated", 0.05, 1, 24, 2);
          default ->
              throw new IllegalArgumentException(
                  "unknown policy '" + name + "'; known: " + String.join(", ", NAMES));
        };
    return s.get();
  }

  /** SplitMix64 over a counter: reproducible, lock-free. */
  static long splitMix(AtomicLong seq) {
    long z = seq.addAndGet(0x9E3779B97F4A7C15L);
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** Puts {@code first} at rank 0 and the rest by cost. */
  static void chooseFirst(ScoringContext ctx, int first, int rotation) {
    ctx.sortByCost(rotation);
    int[] order = ctx.order();
    int pos = 0;
    while (order[pos] != first) {
      pos++;
    }
    System.arraycopy(order, 0, order, 1, pos);
    order[0] = first;
  }

  static final class RoundRobin implements Scorer {
    private final AtomicLong rr = new AtomicLong();

    @Override
    public String name() {
      return "round-robin";
    }

    @Override
    public void score(ScoringContext ctx) {
      int n = ctx.size();
      int start = (int) Math.floorMod(rr.getAndIncrement(), (long) n);
      for (int i = 0; i < n; i++) {
        ctx.setCost(i, Math.floorMod(i - start, n));
      }
      ctx.sortByCost(0);
      ctx.setReason("round-robin");
    }
  }

  static final class LeastRequest implements Scorer {
    private final AtomicLong rotation = new AtomicLong();

    @Override
    public String name() {
      return "least-request";
    }

    @Override
    public void score(ScoringContext ctx) {
      for (int i = 0; i < ctx.size(); i++) {
        ctx.setCost(i, ctx.inFlight(i));
      }
      ctx.sortByCost((int) rotation.getAndIncrement());
      ctx.setReason("least-request");
    }
  }

  static final class PowerOfTwo implements Scorer {
    private final AtomicLong seq;

    PowerOfTwo(long seed) {
      this.seq = new AtomicLong(seed);
    }

    @Override
    public String name() {
      return "p2c";
    }

    @Override
    public void score(ScoringContext ctx) {
      int n = ctx.size();
      for (int i = 0; i < n; i++) {
        ctx.setCost(i, ctx.inFlight(i));
      }
      long r = splitMix(seq);
      if (n == 1) {
        ctx.sortByCost(0);
        return;
      }
      int a = (int) Long.remainderUnsigned(r, n);
      int b = (int) Long.remainderUnsigned(r >>> 32, n - 1);
      if (b >= a) {
        b++;
      }
      int ia = ctx.inFlight(a);
      int ib = ctx.inFlight(b);
      int winner = ia < ib ? a : ib < ia ? b : ((r >>> 63) == 0 ? a : b);
      chooseFirst(ctx, winner, (int) r);
      ctx.setReason("p2c");
    }
  }

  static final class ConsistentHash implements Scorer {
    @Override
    public String name() {
      return "consistent-hash";
    }

    @Override
    public void score(ScoringContext ctx) {
      int n = ctx.size();
      long h = ctx.keyCount() > 0 ? ctx.key(0) : 0;
      int pick = (int) Long.remainderUnsigned(h, n);
      for (int i = 0; i < n; i++) {
        ctx.setCost(i, Math.floorMod(i - pick, n));
      }
      ctx.sortByCost(0);
      ctx.setReason("consistent-hash (first block)");
    }
  }

  static final class SglangCacheAware implements Scorer {
    private final double cacheThreshold;
    private final int balanceAbs;
    private final double balanceRel;
    private final AtomicLong rotation = new AtomicLong();

    SglangCacheAware(double cacheThreshold, int balanceAbs, double balanceRel) {
      this.cacheThreshold = cacheThreshold;
      this.balanceAbs = balanceAbs;
      this.balanceRel = balanceRel;
    }

    @Override
    public String name() {
      return "sglang-cache-aware";
    }

    @Override
    public void score(ScoringContext ctx) {
      int n = ctx.size();
      int max = Integer.MIN_VALUE;
      int min = Integer.MAX_VALUE;
      for (int i = 0; i < n; i++) {
        int l = ctx.inFlight(i);
        max = Math.max(max, l);
        min = Math.min(min, l);
        ctx.setCost(i, l);
      }
      int rot = (int) rotation.getAndIncrement();
      boolean imbalanced = (max - min) > balanceAbs && max > balanceRel * min;
      if (!imbalanced && ctx.keyCount() > 0) {
        int best = 0;
        for (int i = 1; i < n; i++) {
          if (ctx.matchedBlocks(i) > ctx.matchedBlocks(best)) {
            best = i;
          }
        }
        double rate = (double) ctx.matchedBlocks(best) / ctx.keyCount();
        if (rate > cacheThreshold) {
          chooseFirst(ctx, best, rot);
          ctx.setReason(String.format("sglang: cache hit %.2f", rate));
          return;
        }
      }
      ctx.sortByCost(rot); // min load
      ctx.setReason(imbalanced ? "sglang: imbalanced → min load" : "sglang: miss → min load");
    }
  }

  static final class DynamoKv implements Scorer {
    private final double overlapWeight;
    private final AtomicLong rotation = new AtomicLong();

    DynamoKv(double overlapWeight) {
      this.overlapWeight = overlapWeight;
    }

    @Override
    public String name() {
      return "dynamo-kv";
    }

    @Override
    public void score(ScoringContext ctx) {
      double b = ctx.tokensPerBlock();
      int blocks = ctx.keyCount();
      for (int i = 0; i < ctx.size(); i++) {
        double potentialPrefill =
            ctx.pendingPrefillTokens(i) + Math.max(0, ctx.promptTokens() - ctx.matchedTokens(i));
        double potentialDecodeBlocks =
            ctx.activeTokens(i) / b + Math.max(0, blocks - ctx.matchedBlocks(i));
        ctx.setCost(i, overlapWeight * potentialPrefill / b + potentialDecodeBlocks);
      }
      ctx.sortByCost((int) rotation.getAndIncrement());
      ctx.setReason("dynamo-kv");
    }
  }

  static final class LlmdWeighted implements Scorer {
    private final double prefixWeight;
    private final double queueWeight;
    private final double kvWeight;
    private final AtomicLong rotation = new AtomicLong();

    LlmdWeighted(double prefixWeight, double queueWeight, double kvWeight) {
      this.prefixWeight = prefixWeight;
      this.queueWeight = queueWeight;
      this.kvWeight = kvWeight;
    }

    @Override
    public String name() {
      return "llmd-3-2-2";
    }

    @Override
    public void score(ScoringContext ctx) {
      int n = ctx.size();
      int maxQ = Integer.MIN_VALUE;
      int minQ = Integer.MAX_VALUE;
      for (int i = 0; i < n; i++) {
        int q = queue(ctx.load(i));
        maxQ = Math.max(maxQ, q);
        minQ = Math.min(minQ, q);
      }
      int blocks = ctx.keyCount();
      for (int i = 0; i < n; i++) {
        LoadReport load = ctx.load(i);
        double prefix = blocks == 0 ? 0 : (double) ctx.matchedBlocks(i) / blocks;
        double queue = maxQ == minQ ? 1.0 : (double) (maxQ - queue(load)) / (maxQ - minQ);
        double kv = load == null ? 1.0 : 1.0 - load.kvUsage();
        double total = prefixWeight * prefix + queueWeight * queue + kvWeight * kv;
        ctx.setCost(i, -total);
      }
      ctx.sortByCost((int) rotation.getAndIncrement());
      ctx.setReason("llm-d 3:2:2");
    }

    private static int queue(LoadReport load) {
      return load == null ? 0 : load.waiting();
    }
  }

  static final class GatewayEstTtft implements Scorer {
    private final String name;
    private final double prefillMsPerToken;
    private final double serviceMsPerRequest;
    private final int maxInflight;
    private final double bandMs;
    private final AtomicLong rr = new AtomicLong();

    GatewayEstTtft(
        String name,
        double prefillMsPerToken,
        double serviceMsPerRequest,
        int maxInflight,
        double bandMs) {
      this.name = name;
      this.prefillMsPerToken = prefillMsPerToken;
      this.serviceMsPerRequest = serviceMsPerRequest;
      this.maxInflight = maxInflight;
      this.bandMs = bandMs;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public void score(ScoringContext ctx) {
      int n = ctx.size();
      double best = Double.POSITIVE_INFINITY;
      int fallback = -1;
      for (int i = 0; i < n; i++) {
        int load = ctx.inFlight(i);
        if (load > maxInflight) {
          if (fallback < 0 || load < ctx.inFlight(fallback)) {
            fallback = i;
          }
          ctx.setCost(i, Double.POSITIVE_INFINITY);
          continue;
        }
        double est =
            prefillMsPerToken * Math.max(0, ctx.promptTokens() - ctx.matchedTokens(i))
                + serviceMsPerRequest * load;
        ctx.setCost(i, est);
        best = Math.min(best, est);
      }
      long turn = rr.getAndIncrement();
      if (best == Double.POSITIVE_INFINITY) {
        // every backend saturated: least in-flight, affinity ignored
        for (int i = 0; i < n; i++) {
          ctx.setCost(i, ctx.inFlight(i));
        }
        chooseFirst(ctx, fallback, 0);
        ctx.setReason(name + ": all saturated → least in-flight");
        return;
      }
      int minLoad = Integer.MAX_VALUE;
      int good = 0;
      for (int i = 0; i < n; i++) {
        if (ctx.cost(i) <= best + bandMs) {
          minLoad = Math.min(minLoad, ctx.inFlight(i));
        }
      }
      int[] tied = new int[n];
      for (int i = 0; i < n; i++) {
        if (ctx.cost(i) <= best + bandMs && ctx.inFlight(i) == minLoad) {
          tied[good++] = i;
        }
      }
      int pick = tied[(int) Math.floorMod(turn, (long) good)];
      chooseFirst(ctx, pick, 0);
      ctx.setReason(name);
    }
  }
}
