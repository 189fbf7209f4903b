package dev.prefixrouter.scoring.anchors;

import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import java.util.concurrent.atomic.AtomicLong;

/**
 * SGLang's cache-aware routing (the SGLang model gateway's {@code cache_aware} policy, current
 * form): with {@code max} and {@code min} the largest and smallest router in-flight counts, the
 * fleet is imbalanced iff {@code max - min > balanceAbs} and {@code max > balanceRel × min}.
 * Imbalanced → least load. Otherwise the deepest prefix match wins if its match rate (matched
 * blocks / request blocks) is above {@code cacheThreshold}, else least load (the policy's original
 * form sent a miss to the backend with the smallest tree instead).
 *
 * <p>Prefix matches come from the engine's index (SGLang keeps its own per-model tree of what it
 * routed, keyed on characters); ties in load rotate. Published defaults ({@link #defaults()}):
 * threshold 0.3, absolute gap 64, ratio 1.5. Name {@code sglang-cache-aware}; the reason says which
 * branch decided. {@link #smg()} ({@code sglang-smg}) is the gateway's later hit rule, the least
 * loaded of up to 8 holders of the deepest match. Thread-safe (one atomic counter); O(n log n) per
 * {@code score}.
 */
public final class SglangCacheAware implements Scorer {
  private final double cacheThreshold;
  private final int balanceAbs;
  private final double balanceRel;
  private final int matchedTenants;
  private final AtomicLong rotation = new AtomicLong();

  /**
   * @param cacheThreshold minimum match rate for affinity, in [0, 1]
   * @param balanceAbs absolute in-flight gap above which the fleet may be imbalanced, &ge; 0
   * @param balanceRel ratio of largest to smallest in-flight count above which the fleet may be
   *     imbalanced, &ge; 1 (SGLang's own validation)
   * @throws IllegalArgumentException naming the parameter and value when one is out of range
   */
  public SglangCacheAware(double cacheThreshold, int balanceAbs, double balanceRel) {
    this(cacheThreshold, balanceAbs, balanceRel, 1);
  }

  /**
   * With {@code matchedTenants > 1}, the SGLang model gateway's later form (SMG PR #2161): a cache
   * hit goes to the least loaded of up to {@code matchedTenants} backends holding the deepest match
   * (taken in candidate order from an offset that rotates per request, so load ties rotate) instead
   * of one fixed holder. Named {@code sglang-smg} then.
   *
   * @param matchedTenants holders of the deepest match a hit chooses among by load, 1 to 64
   * @throws IllegalArgumentException naming the parameter and value when one is out of range
   */
  public SglangCacheAware(
      double cacheThreshold, int balanceAbs, double balanceRel, int matchedTenants) {
    if (matchedTenants < 1 || matchedTenants > 64) {
      throw new IllegalArgumentException(
          "matchedTenants must be in [1, 64], was " + matchedTenants);
    }
    this.matchedTenants = matchedTenants;
    if (!(cacheThreshold >= 0 && cacheThreshold <= 1)) {
      throw new IllegalArgumentException("cacheThreshold must be in [0, 1], was " + cacheThreshold);
    }
    if (balanceAbs < 0) {
      throw new IllegalArgumentException("balanceAbs must be >= 0, was " + balanceAbs);
    }
    if (!(balanceRel >= 1) || Double.isInfinite(balanceRel)) {
      throw new IllegalArgumentException("balanceRel must be finite and >= 1, was " + balanceRel);
    }
    this.cacheThreshold = cacheThreshold;
    this.balanceAbs = balanceAbs;
    this.balanceRel = balanceRel;
  }

  /** SGLang's current defaults: threshold 0.3, absolute gap 64, ratio 1.5. */
  public static SglangCacheAware defaults() {
    return new SglangCacheAware(0.3, 64, 1.5);
  }

  /** The SGLang model gateway's later hit rule (SMG PR #2161): up to 8 holders, least load. */
  public static SglangCacheAware smg() {
    return new SglangCacheAware(0.3, 64, 1.5, 8);
  }

  @Override
  public String name() {
    return matchedTenants > 1 ? "sglang-smg" : "sglang-cache-aware";
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
        if (matchedTenants > 1) {
          best = leastLoadedHolder(ctx, ctx.matchedBlocks(best), rot);
        }
        Ranking.chooseFirst(ctx, best, rot);
        ctx.setReason(String.format("sglang: cache hit %.2f", rate));
        return;
      }
    }
    ctx.sortByCost(rot); // min load
    ctx.setReason(imbalanced ? "sglang: imbalanced → min load" : "sglang: miss → min load");
  }

  /** Of the first {@code matchedTenants} candidates matching {@code depth} blocks, least load. */
  private int leastLoadedHolder(ScoringContext ctx, int depth, int rot) {
    int n = ctx.size();
    int start = Math.floorMod(rot, n);
    int best = -1;
    int seen = 0;
    for (int k = 0; k < n && seen < matchedTenants; k++) {
      int i = (start + k) % n; // load ties rotate
      if (ctx.matchedBlocks(i) == depth) {
        seen++;
        if (best < 0 || ctx.inFlight(i) < ctx.inFlight(best)) {
          best = i;
        }
      }
    }
    return best;
  }
}
