package dev.prefixrouter.scoring.anchors;

import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Power of two choices, as in SGLang's model gateway ({@code power_of_two}): draw two distinct
 * candidates uniformly, the one with fewer router in-flight requests wins, a tie is decided at
 * random. Ignores prefix matches. (The gateway compares backend-reported token loads when it has
 * them; this rule uses the router's in-flight counts, its fallback.)
 *
 * <p>Draws come from a SplitMix64 sequence over a seeded counter, so runs are reproducible. The
 * winner is ranked first and the rest follow by in-flight count. Name and reason: {@code p2c}.
 * Thread-safe (one atomic counter); O(n log n) per {@code score}.
 */
public final class PowerOfTwo implements Scorer {
  private final AtomicLong seq;

  /**
   * @param seed start of the random sequence; equal seeds give equal draws
   */
  public PowerOfTwo(long seed) {
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
    long r = Ranking.splitMix(seq);
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
    Ranking.chooseFirst(ctx, winner, (int) r);
    ctx.setReason("p2c");
  }
}
