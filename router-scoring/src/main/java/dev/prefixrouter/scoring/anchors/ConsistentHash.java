package dev.prefixrouter.scoring.anchors;

import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;

/**
 * Consistent hashing on the first block, as in the published Python gateway ({@code
 * vikask3906/llm-inference}): {@code C[h0 mod |C|]} with {@code h0} the request's first block key
 * read as unsigned, a plain modulo with no ring. A request with no full block uses {@code h0 = 0}.
 * Ignores load: with a shared system prompt every request lands on one backend.
 *
 * <p>The ranking after rank 0 continues from the pick in candidate order. Name {@code
 * consistent-hash}, reason {@code consistent-hash (first block)}. Stateless and thread-safe; O(n
 * log n) per {@code score} (one sort by cost).
 */
public final class ConsistentHash implements Scorer {

  /** A first-block consistent hash. */
  public ConsistentHash() {}

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
