/**
 * Scoring, admission and health: {@link dev.prefixrouter.scoring.EstimatedTtftScorer} (the default
 * cost model, with online calibration and session affinity), the anchor policies of other routers
 * ({@link dev.prefixrouter.scoring.Policies}), {@link dev.prefixrouter.scoring.TenantTokenBuckets}
 * and {@link dev.prefixrouter.scoring.CircuitBreakers}.
 */
@NullMarked
package dev.prefixrouter.scoring;

import org.jspecify.annotations.NullMarked;
