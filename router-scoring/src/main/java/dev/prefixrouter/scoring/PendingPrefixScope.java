package dev.prefixrouter.scoring;

/**
 * Which requests the est-TTFT scorer's pending-prefix view applies to ({@link
 * EstimatedTtftScorer.Builder#pendingPrefix(PendingPrefixScope)}): a prefix another request is
 * still about to prefill on a busy backend counts as not cached there. (Derived from an engine
 * model in which a request admitted in the same step recomputes it; vLLM v1 caches blocks as their
 * prefill is scheduled, so such a request hits them but still waits behind that prefill. On the
 * simulator corrected for that in issue #18 session 32, with parallel siblings released from their
 * session's pin, the view costs a session fan-out TTFT p95, and {@link #OFF} is the default since
 * session 33.)
 */
public enum PendingPrefixScope {
  /** Every prefix counts as cached as soon as the index holds it (the default). */
  OFF,
  /**
   * Only a request's own session's siblings: a prefix counts as pending for a request only when a
   * request of the same session (tenant and session id) brought it, and requests without a session
   * neither leave nor see pending prefixes. Requests a client sends at once in one session
   * (map-reduce maps on one document, an agent's parallel tool calls) spread to backends that start
   * them at once. In every scope a request whose whole prompt a candidate already holds (an
   * identical copy: best-of-n samples, RL rollouts) sees nothing pending there and stays with the
   * holder, where the copies admitted after the first step hit the cache.
   */
  SESSION,
  /** Every request, with or without a session. */
  ALL
}
