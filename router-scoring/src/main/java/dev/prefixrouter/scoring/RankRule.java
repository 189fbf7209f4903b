package dev.prefixrouter.scoring;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.spi.ScoringContext;
import org.jspecify.annotations.Nullable;

/**
 * A rank rule of {@link EstimatedTtftScorer}: after the candidates are sorted by the sum of their
 * {@link CostTerm}s, each rule in the declared order may reorder the ranking ({@link
 * Candidates#promote}, or new costs and a re-sort) and says why. The scorer's reason is the last
 * rule's that returned one from {@link #apply}; else the first term's {@link CostTerm#reason}; else
 * the last rule's {@link #defaultReason}; else {@code "est-ttft"}.
 *
 * <p>Add a rule with {@link EstimatedTtftScorer.Builder#addRule} (after the built-in ones); drop a
 * built-in one with {@link EstimatedTtftScorer.Builder#without}. Thread-safe, same contract as
 * {@link CostTerm}: per-decision state in {@link Candidates#state}.
 */
public interface RankRule {

  /** A short stable name, unique among the scorer's terms and rules ({@code "tie-band"}). */
  String name();

  /**
   * Applies the rule to the ranking in {@code c}; returns the decision's reason (a constant string:
   * it is shown in {@code Routed.reason()}) when the rule decided the winner, else {@code null}.
   */
  @Nullable String apply(Candidates c);

  /**
   * The reason when neither a rule nor a term decided (e.g. how a near-tie was broken); the default
   * has none.
   */
  default @Nullable String defaultReason(Candidates c) {
    return null;
  }

  /** The engine routed to {@code candidate}; the default does nothing. */
  default void onRouted(ScoringContext ctx, int candidate) {}

  /** A backend joined; the default does nothing. */
  default void addBackend(int slot, Backend backend) {}

  /** A backend left; the default does nothing. */
  default void removeBackend(int slot) {}
}
