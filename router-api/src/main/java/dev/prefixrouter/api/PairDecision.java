package dev.prefixrouter.api;

/**
 * The outcome of {@link DisaggregatedRouter#route(RouteRequest)}: a {@link PairRouted} prefill and
 * decode pair, or {@link Rejected}.
 *
 * <pre>{@code
 * if (d instanceof PairRouted p) { prefillOn(p.prefillBackend()); decodeOn(p.decode()); }
 * else if (d instanceof Rejected x) { respond(429, x.retryAfter()); }
 * }</pre>
 */
public sealed interface PairDecision permits PairRouted, Rejected {

  /** The request this decision is about. */
  RouteRequest request();
}
