package dev.prefixrouter.scoring.anchors;

import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import java.util.concurrent.atomic.AtomicLong;

/**
 * NVIDIA Dynamo's KV router cost, classic form (lower wins, temperature 0):
 *
 * <pre>{@code
 * prefill(w) = pendingPrefillTokens(w) + max(0, promptTokens - matchedTokens(w))
 * decode(w)  = activeTokens(w) / B + max(0, requestBlocks - matchedBlocks(w))
 * cost(w)    = overlapWeight × prefill(w) / B + decode(w)
 * }</pre>
 *
 * with {@code B} tokens per block. The overlap weight scales the prefill load; a match helps only
 * by shrinking it, and weight 0 balances load alone. Dynamo breaks ties by the smaller cache and
 * then at random; here ties rotate. Dynamo's default weight is 1 ({@link #defaults()}).
 *
 * <p>Name and reason: {@code dynamo-kv}. Thread-safe (one atomic counter); O(n log n) per {@code
 * score}.
 */
public final class DynamoKv implements Scorer {
  private final double overlapWeight;
  private final AtomicLong rotation = new AtomicLong();

  /**
   * @param overlapWeight weight of the prefill load, finite and &ge; 0
   * @throws IllegalArgumentException naming the parameter and value when it is out of range
   */
  public DynamoKv(double overlapWeight) {
    this.overlapWeight = Ranking.nonNegative("overlapWeight", overlapWeight);
  }

  /** Dynamo's default: overlap weight 1. */
  public static DynamoKv defaults() {
    return new DynamoKv(1.0);
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
