package dev.prefixrouter.api;

/**
 * The outcome of {@link RoutingEngine#route(RouteRequest)}: {@link Routed} or {@link Rejected}.
 *
 * <pre>{@code
 * if (d instanceof Routed r) { forward(r.backend()); }
 * else if (d instanceof Rejected x) { respond(429, x.retryAfter()); }
 * }</pre>
 */
public sealed interface RouteDecision permits Routed, Rejected {

  /** The request this decision is about. */
  RouteRequest request();
}
