package dev.prefixrouter.scoring;

/**
 * Congestion: {@code weight × queued × beta × uncached}, divided by the backend's weight, where
 * {@code queued} is the requests waiting there for their first token (the router's own leases plus
 * the rest of the reported waiting count). The uncached prefill also delays every request that
 * queues behind it, by Little's law about as many as are queued now: negligible when idle, dominant
 * in overload, where it keeps hot prefixes on their holders instead of spilling them into extra
 * cold prefills. Tuning: {@link EstimatedTtftScorer.Builder#congestionWeight}.
 */
final class CongestionTerm implements CostTerm {
  static final String NAME = "congestion";

  private final double weight;

  CongestionTerm(double weight) {
    this.weight = weight;
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public void costs(Candidates c, double[] out) {
    for (int i = 0, n = c.size(); i < n; i++) {
      double queued = c.ownQueued(i) + c.waiting(i);
      out[i] = weight * queued * c.betaMsPerToken(i) * c.uncachedTokens(i) / c.weight(i);
    }
  }
}
