package dev.prefixrouter.scoring;

/**
 * The time to first token proper: the queue ahead of the request plus its own prefill.
 *
 * <pre>
 * queue(b)   = beta·pendingPrefill(b) + decode·running(b) + waitingMs·waiting(b)
 * prefill(b) = alpha + beta·u + gamma·u·(u + c)        u uncached, c cached prompt tokens
 * </pre>
 *
 * divided by the backend's weight. {@code pendingPrefill} is the router's own exact count of
 * uncached prompt tokens sent to b and not yet past their first token. No tuning of its own: the
 * coefficients are the scorer's (fitted or configured).
 */
final class QueuePrefillTerm implements CostTerm {
  static final String NAME = "queue-prefill";

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public void costs(Candidates c, double[] out) {
    for (int i = 0, n = c.size(); i < n; i++) {
      double prefill = c.prefillMs(i, c.uncachedTokens(i), c.cachedTokens(i));
      out[i] = (c.queueMs(i) + prefill) / c.weight(i);
    }
  }
}
