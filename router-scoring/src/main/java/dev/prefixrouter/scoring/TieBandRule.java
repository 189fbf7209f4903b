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

  @Override
  public @Nullable String apply(Candidates c) {
    int n = c.size();
    int[] order = c.order();
    double limit = c.bandLimit(c.best());
    int tied = 0;
    while (tied < n && c.cost(order[tied]) <= limit) {
      tied++;
    }
    if (tied > 1) {
      // stable insertion sort of the band by open leases per weight (rotation order kept on ties)
      var ctx = c.ctx();
      for (int a = 1; a < tied; a++) {
        int x = order[a];
        double lx = ctx.inFlight(x) / ctx.backend(x).weight();
        int j = a - 1;
        while (j >= 0 && ctx.inFlight(order[j]) / ctx.backend(order[j]).weight() > lx) {
          order[j + 1] = order[j];
          j--;
        }
        order[j + 1] = x;
      }
    }
    c.state(this, TieBandRule::tiedHolder)[0] = tied;
    return null;
  }

  @Override
  public @Nullable String defaultReason(Candidates c) {
    int[] s = (int[]) c.state(this);
    int tied = s == null ? 0 : s[0];
    return tied <= 1 ? "est-ttft" : tied < BAND_REASONS.length ? BAND_REASONS[tied] : band(tied);
  }

  private static int[] tiedHolder() {
    return new int[1];
  }

  private static String band(int tied) {
    return "est-ttft, fewest open leases in a band of " + tied;
  }
}
