/**
 * Scoring, admission and health: {@link dev.prefixrouter.scoring.EstimatedTtftScorer} (the default
 * cost model, with online calibration and session affinity), every policy by name ({@link
 * dev.prefixrouter.scoring.Policies}; the other routers' rules are in {@link
 * dev.prefixrouter.scoring.anchors}), {@link dev.prefixrouter.scoring.TenantTokenBuckets} and
 * {@link dev.prefixrouter.scoring.CircuitBreakers}.
 */
@NullMarked
package dev.prefixrouter.scoring;

import org.jspecify.annotations.NullMarked;
