package dev.prefixrouter.scoring;

import dev.prefixrouter.api.spi.ScoringContext;
import org.jspecify.annotations.Nullable;

/**
 * Fleet balance, a {@link #steering() steering} term. Each backend's share of recent decisions is
 * an exponentially decayed count (half-life {@code halfLife} decisions) relative to its weight's
 * fair share. Once there are 100 decisions per candidate, a candidate above {@code (1 + tolerance)}
 * times its fair share pays {@code msPerShare} per unit of excess share, scaled by the request's
 * prefix group's own share of recent decisions relative to one backend's fair share (capped at 1;
 * the group is the block key at depth {@value #PREFIX_GROUP_BLOCKS}): moving a hot prefix fixes an
 * overload, moving a cold one only costs a cold start. Tuning: {@link
 * EstimatedTtftScorer.Builder#balance}.
 *
 * <p>Its {@link #pacing} rule paces replicas made for balance alone: when the balance penalty makes
 * a backend that does not hold the request's prefix group win over the plain winner, that backend
 * takes at most one such request per {@code replicaInterval} decisions; otherwise the decision is
 * ranked without the term. Tuning: {@link EstimatedTtftScorer.Builder#balanceReplicaInterval}.
 */
final class BalanceTerm implements CostTerm {
  static final String NAME = "balance";

  /** Blocks that identify a prefix group for balancing (128 tokens with 16-token blocks). */
  static final int PREFIX_GROUP_BLOCKS = 8;

  private final double tolerance;
  private final double msPerShare;
  private final int replicaInterval;
  private final RouteShares shares;

  BalanceTerm(double tolerance, double msPerShare, int halfLife, int replicaInterval) {
    this.tolerance = tolerance;
    this.msPerShare = msPerShare;
    this.replicaInterval = replicaInterval;
    this.shares = new RouteShares(halfLife);
  }

  /** Per thread: relative shares, whether there is enough evidence, the group's heat. */
  private static final class State {
    double[] share = new double[16];
    boolean valid;
    boolean penalized;
    double hot;
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public boolean steering() {
    return true;
  }

  @Override
  public void costs(Candidates c, double[] out) {
    State s = prepare(c);
    int n = c.size();
    for (int i = 0; i < n; i++) {
      if (s.valid && s.share[i] > 1 + tolerance) {
        s.penalized = true;
        out[i] = (s.share[i] - 1 - tolerance) * msPerShare * s.hot;
      } else {
        out[i] = 0;
      }
    }
  }

  private State prepare(Candidates c) {
    State s = c.state(this, State::new);
    s.share = c.fit(s.share);
    // moving a hot prefix fixes an overload, moving a cold one only costs a cold start: scale the
    // penalty by how much of a backend's fair load this request's prefix group carries
    // the group's heat only matters when some candidate is above its fair share (else 0)
    double hot =
        shares.sharesAndHotness(
            c.size(), c.slots(), c.weights(), prefixGroup(c.ctx()), 1 + tolerance, s.share);
    s.valid = !Double.isNaN(hot);
    s.hot = s.valid ? Math.min(1.0, hot) : 0;
    s.penalized = false;
    return s;
  }

  /**
   * Whether candidate {@code i} is within its fair share in this decision (true while there is too
   * little evidence).
   */
  boolean fair(Candidates c, int i) {
    State s = (State) c.state(this);
    return s == null || !s.valid || s.share[i] <= 1 + tolerance;
  }

  @Override
  public void onRouted(ScoringContext ctx, int candidate) {
    shares.record(ctx.slot(candidate), prefixGroup(ctx));
  }

  @Override
  public void removeBackend(int slot) {
    shares.forget(slot);
  }

  /** The prefix group of a request: its block key at depth 8 (or its last one), 0 if none. */
  static long prefixGroup(ScoringContext ctx) {
    int k = ctx.keyCount();
    return k == 0 ? 0 : ctx.key(Math.min(k, PREFIX_GROUP_BLOCKS) - 1);
  }

  /** The replica-pacing rule of this term, or {@code null} when pacing is off. */
  @Nullable RankRule pacing() {
    return replicaInterval > 0 ? new Pacing() : null;
  }

  /** See the class documentation; gives no reason of its own. */
  private final class Pacing implements RankRule {
    @Override
    public String name() {
      return "replica-pacing";
    }

    @Override
    public @Nullable String apply(Candidates c) {
      State s = (State) c.state(BalanceTerm.this);
      if (s == null || !s.penalized) {
        return null;
      }
      ScoringContext ctx = c.ctx();
      int n = c.size();
      double bestPlain = Double.POSITIVE_INFINITY;
      int plainWinner = 0;
      for (int i = 0; i < n; i++) {
        double e = c.plainCost(i);
        if (e < bestPlain) {
          bestPlain = e;
          plainWinner = i;
        }
      }
      // the penalty made a backend that does not even hold the prefix group win over the plain
      // winner: a new replica, paid with a cold prefill and an eviction there. Each backend takes
      // at most one per replicaInterval decisions, so the shares can show its effect before the
      // next one (without this, an underloaded backend is flooded with replicas at once and
      // evicts its own groups).
      int w = c.order()[0];
      if (ctx.matchedBlocks(w) < ctx.matchedBlocks(plainWinner)
          && ctx.matchedBlocks(w) < Math.min(ctx.keyCount(), PREFIX_GROUP_BLOCKS)
          && !shares.tryReplica(ctx.slot(w), replicaInterval)) {
        c.rankByPlainCost();
      }
      return null;
    }
  }
}
