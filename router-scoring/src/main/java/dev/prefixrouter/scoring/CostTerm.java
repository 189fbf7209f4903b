package dev.prefixrouter.scoring;

import dev.prefixrouter.api.spi.ScoringContext;
import org.jspecify.annotations.Nullable;

/**
 * One named cost of {@link EstimatedTtftScorer}: a candidate's cost is the sum of its terms, in the
 * order the scorer declares them, and the lowest sum ranks first (then the {@link RankRule}s may
 * reorder). A term owns its tuning; it reads the request and the candidates through {@link
 * Candidates}, whose derived per-candidate values (coefficients, cached and uncached tokens, faded
 * load) are computed once per decision for every term.
 *
 * <p>Add a term with {@link EstimatedTtftScorer.Builder#addTerm}; drop a built-in one with {@link
 * EstimatedTtftScorer.Builder#without}. Thread-safe: one instance serves every routing thread, so
 * per-decision state goes into {@link Candidates#state}/{@link Candidates#setState} (one slot per
 * term per thread), never into fields. Budget: O(1) per candidate in {@link #costs}, no allocation
 * on the steady state.
 */
public interface CostTerm {

  /** A short stable name, unique among the scorer's terms and rules ({@code "balance"}). */
  String name();

  /**
   * A steering term prices something other than this request's own time (the fleet's balance): it
   * is left out of {@link Candidates#plainCost}, the ranking a rule falls back to when it overrides
   * such a term. Asked once, when the scorer is built. Default false.
   */
  default boolean steering() {
    return false;
  }

  /**
   * Writes the term's cost for every candidate {@code i < c.size()} into {@code out[i]}, in
   * milliseconds, finite; 0 where it does not apply. Called once per decision (one call for all
   * candidates keeps the per-candidate loop free of dispatch). Terms that measure time on the
   * backend divide by its {@link Candidates#weight weight} (relative speed).
   */
  void costs(Candidates c, double[] out);

  /**
   * A reason for the decision when this term decided it (its winner would not have been near the
   * best without it), else {@code null} (the default). Asked after the rules, only when no rule
   * gave a reason; the first term to answer wins.
   */
  default @Nullable String reason(Candidates c) {
    return null;
  }

  /** The engine routed to {@code candidate} (rank 0 of {@code ctx}); the default does nothing. */
  default void onRouted(ScoringContext ctx, int candidate) {}

  /** A backend left; forget its state. The default does nothing. */
  default void removeBackend(int slot) {}
}
