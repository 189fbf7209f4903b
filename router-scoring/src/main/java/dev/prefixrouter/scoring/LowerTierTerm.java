package dev.prefixrouter.scoring;

import dev.prefixrouter.api.spi.ScoringContext;
import org.jspecify.annotations.Nullable;

/**
 * Lower-tier credit: prompt tokens right after a candidate's GPU match that its backend holds on a
 * lower tier ({@link ScoringContext#offloadedTokens}: CPU memory, disk, as its KV events report)
 * are loaded back instead of computed, so the candidate is credited {@code credit ×} the prefill
 * those tokens would save as a GPU hit, divided by the backend's weight:
 *
 * <pre>
 * lowerTier(b) = −credit · (prefill(u, c) − prefill(u − o, c + o)) / weight(b)
 *              = −credit · (beta·o + gamma·o·(u + c)) / weight(b)     o lower-tier tokens ≤ u
 * </pre>
 *
 * A negative cost, never more than the prefill it credits, so a candidate's sum stays at least its
 * queue plus the prefill of what it must compute. {@code credit = 1} prices a lower-tier hit as a
 * GPU hit, {@code 0} as a miss. 0 for every candidate whose backend reports no lower tier; a fleet
 * without lower-tier events pays one index call per decision that answers 0 at once. Tuning: {@link
 * EstimatedTtftScorer.Builder#lowerTierCredit}.
 *
 * <p>Its {@link #reason}: when the winner holds part of the prompt on a lower tier and, without
 * this credit, would not have tied with the best estimate, {@code "est-ttft, lower-tier hit"}.
 */
final class LowerTierTerm implements CostTerm {
  static final String NAME = "lower-tier";

  private final double credit;

  LowerTierTerm(double credit) {
    this.credit = credit;
  }

  /** Per thread: whether any candidate was credited in this decision. */
  private static final class State {
    boolean active;
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public void costs(Candidates c, double[] out) {
    ScoringContext ctx = c.ctx();
    boolean any = false;
    for (int i = 0, n = c.size(); i < n; i++) {
      int lower = ctx.offloadedTokens(i);
      if (lower <= 0) {
        out[i] = 0;
        continue;
      }
      double u = c.uncachedTokens(i);
      double cached = c.cachedTokens(i);
      double o = Math.min(lower, u);
      double saved = c.prefillMs(i, u, cached) - c.prefillMs(i, u - o, cached + o);
      out[i] = saved > 0 ? -credit * saved / c.weight(i) : 0;
      any |= saved > 0;
    }
    State s = c.state(this, State::new);
    s.active = any;
  }

  @Override
  public @Nullable String reason(Candidates c) {
    State s = (State) c.state(this);
    if (s == null || !s.active) {
      return null;
    }
    return c.wonByCredit(this) ? "est-ttft, lower-tier hit" : null;
  }
}
