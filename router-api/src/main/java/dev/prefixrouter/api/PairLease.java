package dev.prefixrouter.api;

/**
 * Completion handle of one {@link PairRouted} decision, covering both phases: the prefill phase on
 * the prefill backend ends at {@link #firstToken()}, the decode phase on the decode backend ends
 * with exactly one of {@link #complete(Usage)} or a failure. Repeated or late calls are no-ops.
 *
 * <p>From the route on, the request counts as in flight on both backends (on the decode backend
 * with its reserved tokens, as its KV cache will hold them); {@link #firstToken()} moves it to the
 * decode backend's running decodes and ends the prefill leg (success fed to the prefill backend's
 * breaker, TTFT to the scorer). The tenant is charged once, as for a plain route, and trued up at
 * the end. Thread-safe; every method is O(1) apart from {@link #failover()}, which routes again.
 *
 * <pre>{@code
 * PairLease l = pair.lease();
 * try {
 *   prefill(pair.prefillBackend(), pair.decode()); // KV cache ready, first token out
 *   l.firstToken();
 *   l.complete(decode(pair.decode()));
 * } catch (TransferException e) {
 *   l.failDecode(Failure.of(Failure.Kind.CONNECT));  // the decode backend refused the KV cache
 *   if (l.failover() instanceof PairRouted next) { ... }
 * } catch (IOException e) {
 *   l.fail(Failure.of(Failure.Kind.CONNECT));        // blames the phase in progress
 * }
 * }</pre>
 */
public interface PairLease {

  /**
   * The first token is out: the prefill phase ends on the prefill backend (its lease completes,
   * feeding TTFT calibration) and the decode phase starts on the decode backend. Idempotent.
   */
  void firstToken();

  /**
   * The decode phase ended successfully: ends the pair (a prefill phase still open ends first) and
   * trues up the tenant's reservation with {@code usage}. Idempotent.
   */
  void complete(Usage usage);

  /**
   * The phase in progress failed: before the first token the prefill backend is blamed (its breaker
   * fed, the tenant refunded, {@link #failover()} allowed); after it the decode backend (the prompt
   * charged, the output refunded, no failover). Idempotent.
   */
  void fail(Failure failure);

  /**
   * As {@link #fail(Failure)}, with what the decode backend had already produced: after the first
   * token the tenant is charged {@code used.totalTokens()} instead of the prompt alone (a client
   * that goes away mid-stream still pays for the output it received); before it, as {@link
   * #fail(Failure)}, except that a {@link Failure.Kind#CANCELLED} failure is charged {@code
   * used.totalTokens()}, as {@link Lease#fail(Failure, Usage)} says. The default ignores {@code
   * used}. Idempotent.
   */
  default void fail(Failure failure, Usage used) {
    fail(failure);
  }

  /**
   * The decode backend failed (for example it refused the KV transfer): its breaker is fed whatever
   * the phase. Before the first token the prefill leg is released without blame, the tenant is
   * refunded, and {@link #failover()} may route a new pair that avoids this decode backend; after
   * it this is {@link #fail(Failure)}. Idempotent.
   */
  void failDecode(Failure failure);

  /**
   * After a failure before the first token: routes the same request as a new pair, excluding the
   * backends that failed for it (a failed prefill backend through the engine's failover and retry
   * budget; a failed decode backend from the decode choice). May be asked once per failed lease;
   * any other use returns {@link Rejected} with {@link RejectReason#NOT_RETRYABLE}.
   */
  PairDecision failover();

  /** Whether the pair has ended (completed or failed). */
  boolean isEnded();
}
