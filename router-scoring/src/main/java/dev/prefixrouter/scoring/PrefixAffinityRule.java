package dev.prefixrouter.scoring;

import dev.prefixrouter.api.spi.ScoringContext;
import org.jspecify.annotations.Nullable;

/**
 * Prefix affinity: when the winner holds less than half of the prompt's blocks and the cheapest
 * candidate holding at least half costs at most {@code best × ratio}, the holder wins — provided at
 * most {@code maxWaiting} of the router's requests wait there for their first token (its queue is
 * one prefill in progress, not a backlog), it is within its fair share (when the balance term is
 * on) and not saturated. A holder only briefly busy would otherwise lose a few milliseconds' race
 * to an idle backend, which then becomes a second, permanent holder of the prefix. Reason {@code
 * "prefix affinity"}. Tuning: {@link EstimatedTtftScorer.Builder#prefixAffinity}.
 */
final class PrefixAffinityRule implements RankRule {
  static final String NAME = "prefix-affinity";

  private final double ratio;
  private final int maxWaiting;
  private final @Nullable BalanceTerm balance;

  PrefixAffinityRule(double ratio, int maxWaiting, @Nullable BalanceTerm balance) {
    this.ratio = ratio;
    this.maxWaiting = maxWaiting;
    this.balance = balance;
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public @Nullable String apply(Candidates c) {
    ScoringContext ctx = c.ctx();
    int[] order = c.order();
    int n = c.size();
    int keys = ctx.keyCount();
    if (keys == 0 || 2 * c.heldBlocks(order[0]) >= keys) {
      return null;
    }
    for (int r = 1; r < n; r++) {
      int h = order[r];
      if (2 * c.heldBlocks(h) >= keys) {
        boolean fair = balance == null || balance.fair(c, h);
        boolean briefly = ctx.inFlight(h) - ctx.runningDecodes(h) <= maxWaiting;
        if (fair && briefly && !c.saturated(h) && c.cost(h) <= c.best() * ratio) {
          c.promote(r);
          return "prefix affinity";
        }
        return null; // the cheapest holder decides
      }
    }
    return null;
  }
}
