package dev.prefixrouter.api.spi;

/**
 * What a {@link Scorer} learns when a lease reaches its first token: the observed time to first
 * token and the state the backend was in when the request was routed to it, so that cost models can
 * be fitted online.
 *
 * @param slot the backend's slot
 * @param ttftNanos observed time from routing to first token
 * @param promptTokens prompt tokens of the request
 * @param matchedTokens of those, tokens believed cached on the backend at routing time
 * @param queuedPrefillTokens uncached prompt tokens already routed to the backend and not yet past
 *     their first token, at routing time (not counting this request)
 * @param runningDecodes leases on the backend past their first token, at routing time
 * @param estimatedCost the scorer's cost for the backend at routing time
 */
public record FirstTokenObservation(
    int slot,
    long ttftNanos,
    int promptTokens,
    int matchedTokens,
    long queuedPrefillTokens,
    int runningDecodes,
    double estimatedCost) {

  /** Uncached prompt tokens of the request. */
  public int uncachedTokens() {
    return promptTokens - matchedTokens;
  }
}
