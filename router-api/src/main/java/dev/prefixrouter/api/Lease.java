package dev.prefixrouter.api;

/**
 * Completion handle of one {@link Routed} decision. The caller reports {@link #firstToken()} when
 * the first output token (or first streamed chunk) arrives, and then exactly one of {@link
 * #complete(Usage)} or {@link #fail(Failure)}. Repeated or late calls are no-ops, so a lease can be
 * ended from a finally block without care.
 *
 * <p>Until it ends, a lease counts as in flight on its backend. Thread-safe; every method is O(1)
 * apart from {@link #failover()}, which routes again.
 *
 * <pre>{@code
 * Routed r = ...;
 * try {
 *   stream(r.backend(), chunk -> r.lease().firstToken());
 *   r.lease().complete(usage);
 * } catch (IOException e) {
 *   r.lease().fail(Failure.of(Failure.Kind.CONNECT));
 *   if (r.lease().failover() instanceof Routed next) { ... }
 * }
 * }</pre>
 */
public interface Lease {

  /** Records the first token: ends the prefill phase and feeds TTFT calibration. Idempotent. */
  void firstToken();

  /** Ends the lease successfully and trues up the tenant's reservation. Idempotent. */
  void complete(Usage usage);

  /**
   * Ends the lease as failed and feeds the backend's circuit breaker. The tenant is charged the
   * prompt if the first token was seen (the output reservation is refunded), else nothing.
   * Idempotent.
   */
  void fail(Failure failure);

  /**
   * As {@link #fail(Failure)}, with what the backend had already produced: after the first token
   * the tenant is charged {@code used.totalTokens()} instead of the prompt alone, so a client that
   * goes away mid-stream (or a stream the backend breaks off) still pays for the output it
   * received. Before the first token nothing is charged, as by {@link #fail(Failure)}, except for a
   * {@link Failure.Kind#CANCELLED} failure (the client left): it is charged {@code
   * used.totalTokens()} (pass the prompt alone when nothing was produced), since the backend may
   * have prefilled it and leaving just before the first token must not make a request free. The
   * default ignores {@code used} (for implementations that do not charge); the engine's leases
   * charge it. Idempotent.
   */
  default void fail(Failure failure, Usage used) {
    fail(failure);
  }

  /**
   * After {@link #fail(Failure)} before the first token: routes the same request to the next best
   * eligible backend, excluding every backend that already failed for it, within the engine's retry
   * budget. The tenant is not charged twice. May be asked once per failed lease; any other use
   * returns {@link Rejected} with {@link RejectReason#NOT_RETRYABLE}, and so does a lease that
   * failed as {@link Failure.Kind#CANCELLED}: the client left, and a new placement would charge the
   * tenant and count as in flight for a request no one will send or end.
   */
  RouteDecision failover();

  /** Whether {@link #complete} or {@link #fail} has been called. */
  boolean isEnded();

  /**
   * Prompt tokens the engine's prefix index matched on this lease's backend when it routed the
   * decision (capped at its prompt tokens), before the scorer's {@link
   * dev.prefixrouter.api.spi.Scorer#cachedTokens} discount; {@code otherwise} when this lease does
   * not know it. This is what {@link Routed#indexMatchedTokens()} reports.
   *
   * <ul>
   *   <li>The engine's own leases return their match.
   *   <li>A lease that wraps another (to observe or decorate it, handed out in a {@link Routed}
   *       copy) must return {@code wrapped.indexMatchedTokensOr(otherwise)}, so that the copy still
   *       reports the index's match through any number of wrappers.
   *   <li>Any other lease keeps this default, which returns {@code otherwise}.
   * </ul>
   *
   * <p>A query, not an outcome: valid at any time, before and after the lease ends, and it changes
   * nothing. Implementations must be O(1) (plus the wrapped lease's call) and allocation-free.
   *
   * <pre>{@code
   * public int indexMatchedTokensOr(int otherwise) { // in a lease wrapping `wrapped`
   *   return wrapped.indexMatchedTokensOr(otherwise);
   * }
   * }</pre>
   *
   * @param otherwise what to return when the match is not known (a {@link Routed} passes its {@link
   *     Routed#matchedTokens()})
   */
  default int indexMatchedTokensOr(int otherwise) {
    return otherwise;
  }
}
