package dev.prefixrouter.api;

/**
 * The hard filters that build the candidate set, in the order they apply. When the set ends up
 * empty, {@link Rejected#emptiedBy()} names the filter that removed the last candidates.
 */
public enum EligibilityFilter {
  /** No registered backend serves the (resolved) model. */
  MODEL,
  /** Every backend serving the model is draining. */
  DRAINING,
  /** Every remaining backend is unhealthy (circuit open, or half-open with no probe left). */
  HEALTH,
  /** No remaining backend has every required capability. */
  CAPABILITY,
  /** No remaining backend carries every required label. */
  LABEL,
  /** Every remaining backend already failed for this request (failover). */
  EXCLUDED
}
