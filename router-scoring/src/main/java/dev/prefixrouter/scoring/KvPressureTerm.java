package dev.prefixrouter.scoring;

/**
 * KV pressure: a backend whose reported KV usage is above {@code threshold} pays a penalty growing
 * linearly to {@code ms} at 100 % (preemption risk), faded with the report's age, divided by the
 * backend's weight. Tuning: {@link EstimatedTtftScorer.Builder#kvPenalty}.
 */
final class KvPressureTerm implements CostTerm {
  static final String NAME = "kv-pressure";

  private final double threshold;
  private final double ms;

  KvPressureTerm(double threshold, double ms) {
    this.threshold = threshold;
    this.ms = ms;
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public void costs(Candidates c, double[] out) {
    for (int i = 0, n = c.size(); i < n; i++) {
      double kv = c.kvUsage(i); // NaN without a report: no penalty
      out[i] =
          !(kv > threshold) ? 0 : c.fade(i) * ms * (kv - threshold) / (1 - threshold) / c.weight(i);
    }
  }
}
