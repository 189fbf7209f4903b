package dev.prefixrouter.api;

/** Why a request was not routed. */
public enum RejectReason {
  /** The tenant's bucket is empty for now; {@link Rejected#retryAfter()} says when it refills. */
  RATE_LIMITED,
  /**
   * The request needs more tokens than the tenant's bucket can ever hold; retrying will not help.
   */
  REQUEST_TOO_LARGE,
  /** A hard filter emptied the candidate set; {@link Rejected#emptiedBy()} says which. */
  NO_ELIGIBLE_BACKEND,
  /** Sheddable request whose best estimated TTFT exceeds its budget. */
  OVERLOADED,
  /** {@link Lease#failover()} was asked more often than the engine's retry budget allows. */
  RETRY_BUDGET_EXHAUSTED,
  /**
   * {@link Lease#failover()} on a lease that did not fail before its first token (still open,
   * completed, failed after streaming started, or already failed over).
   */
  NOT_RETRYABLE
}
