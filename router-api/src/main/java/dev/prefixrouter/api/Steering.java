package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.ScoringContext;

/**
 * A router's adjustment of one decision's ranking, applied by the pipeline after the scorer and
 * before SLO admission and placement (so the SLO check and the lease see the steered choice). Used
 * by routers over the engine ({@link WorkflowRouter}); a plain {@code route()} has none.
 *
 * <p>Contract: may only reorder {@link ScoringContext#order()} (a permutation stays a permutation)
 * and {@link ScoringContext#setReason set the reason}; must not throw; O(candidates). Called once,
 * on the routing thread, for the first attempt only (a failover ranks by the scorer alone).
 */
interface Steering {
  /** Adjusts the ranking of {@code ctx}, whose order the scorer has just left. */
  void steer(ScoringContext ctx);
}
