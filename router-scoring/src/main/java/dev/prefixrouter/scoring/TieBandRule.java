package dev.prefixrouter.scoring;

import org.jspecify.annotations.Nullable;

/**
 * Tie band: candidates whose cost is within {@code max(bandMs, bandFraction × best)} of the best
 * count as tied and go to the one with fewer open leases per unit of weight, then in the rotation
 * order the sort left (round-robin). With {@link
 * EstimatedTtftScorer.Builder#bandKeepsIdenticalCopies} (the default) an identical copy of a prompt
 * stays with its holder first: when the request's whole cacheable prompt is held (or being
 * prefilled) by a tied candidate that no steering term lifted, and some candidate of the decision
 * has a prefill queued, the holders of that whole prompt lead the band. Its reason is the default
 * one: {@code "est-ttft"}, or {@code "est-ttft, fewest open leases in a band of N"}. Tuning: {@link
 * EstimatedTtftScorer.Builder#band}.
 */
final class TieBandRule implements RankRule {
  static final String NAME = "tie-band";

  /** Added to a kept holder's load so that it sorts before every other tied candidate. */
  private static final double HOLDERS_FIRST = 1e9;

  private final boolean keepsCopies;

  TieBandRule() {
    this(false);
  }

  TieBandRule(boolean keepsCopies) {
    this.keepsCopies = keepsCopies;
  }

  private static final String[] BAND_REASONS = new String[65];

  static {
    for (int i = 2; i < BAND_REASONS.length; i++) {
      BAND_REASONS[i] = band(i);
    }
  }

  @Override
  public String name() {
    return NAME;
  }

  /** Per thread: the band's size in this decision and the tied candidates' load per weight. */
  private static final class State {
    int tied;
    double[] load = new double[16];
  }

  @Override
  public @Nullable String apply(Candidates c) {
    int n = c.size();
    int[] order = c.order();
    double limit = c.bandLimit(c.best());
    int tied = 0;
    while (tied < n && c.cost(order[tied]) <= limit) {
      tied++;
    }
    State s = c.state(this, State::new);
    if (tied > 1) {
      // open leases per weight, read once per tied candidate
      var ctx = c.ctx();
      double[] load = s.load = c.fit(s.load);
      int kept = keptMatch(c, order, tied);
      for (int a = 0; a < tied; a++) {
        int x = order[a];
        load[x] = ctx.inFlight(x) / ctx.backend(x).weight();
        // a holder of the whole prompt that no steering term lifted goes first: a near tie is no
        // reason to prefill an identical copy again on a backend that lacks it (and to take that
        // backend from the new prompts arriving while the fleet has queues)
        if (ctx.matchedBlocks(x) == kept && c.cost(x) <= c.plainCost(x)) {
          load[x] -= HOLDERS_FIRST;
        }
      }
      // stable insertion sort of the band by that load (rotation order kept on ties)
      for (int a = 1; a < tied; a++) {
        int x = order[a];
        double lx = load[x];
        int j = a - 1;
        while (j >= 0 && load[order[j]] > lx) {
          order[j + 1] = order[j];
          j--;
        }
        order[j + 1] = x;
      }
    }
    s.tied = tied;
    return null;
  }

  /**
   * The matched blocks a tied candidate must have to lead the band, or -1 when none does: with
   * identical copies kept and some candidate's prefill queued, the band's longest match, if it
   * covers every block an engine can serve from cache and some tied candidate lacks it.
   */
  private int keptMatch(Candidates c, int[] order, int tied) {
    if (!keepsCopies || !anyQueued(c)) {
      return -1;
    }
    var ctx = c.ctx();
    int most = 0;
    int least = Integer.MAX_VALUE;
    for (int a = 0; a < tied; a++) {
      int m = ctx.matchedBlocks(order[a]);
      most = Math.max(most, m);
      least = Math.min(least, m);
    }
    int whole = Math.min(ctx.keyCount(), (ctx.promptTokens() - 1) / ctx.tokensPerBlock());
    return most >= whole && most > least ? most : -1;
  }

  /** Whether any candidate has a prefill queued: the fleet shows where time is lost. */
  private static boolean anyQueued(Candidates c) {
    for (int i = 0, n = c.size(); i < n; i++) {
      if (c.prefillQueued(i)) {
        return true;
      }
    }
    return false;
  }

  @Override
  public @Nullable String defaultReason(Candidates c) {
    State s = (State) c.state(this);
    int tied = s == null ? 0 : s.tied;
    return tied <= 1 ? "est-ttft" : tied < BAND_REASONS.length ? BAND_REASONS[tied] : band(tied);
  }

  private static String band(int tied) {
    return "est-ttft, fewest open leases in a band of " + tied;
  }
}
