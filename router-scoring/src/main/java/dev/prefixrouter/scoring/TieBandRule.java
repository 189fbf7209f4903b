package dev.prefixrouter.scoring;

import org.jspecify.annotations.Nullable;

/**
 * Tie band: candidates whose cost is within {@code max(bandMs, bandFraction × best)} of the best
 * count as tied and go to the one with fewer open leases per unit of weight, then in the rotation
 * order the sort left (round-robin). Its reason is the default one: {@code "est-ttft"}, or {@code
 * "est-ttft, fewest open leases in a band of N"}. Tuning: {@link EstimatedTtftScorer.Builder#band}.
 */
final class TieBandRule implements RankRule {
  static final String NAME = "tie-band";

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
      for (int a = 0; a < tied; a++) {
        int x = order[a];
        load[x] = ctx.inFlight(x) / ctx.backend(x).weight();
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
