package dev.prefixrouter.api;

import java.util.List;
import java.util.Objects;

/**
 * A routed request. The caller forwards it to {@link #backend()} and reports exactly one outcome on
 * {@link #lease()}.
 *
 * @param request the request
 * @param backend the chosen backend
 * @param resolvedModel the model after alias resolution and A/B split
 * @param fallbacks the next best candidates in rank order (at most the engine's configured count)
 * @param promptTokens prompt tokens ({@link RouteRequest#promptTokens()}: exact for token prompts,
 *     estimated otherwise; a request's other prompts included)
 * @param matchedTokens prompt tokens believed cached on the chosen backend, as the scorer expects
 *     the engine to serve them ({@link dev.prefixrouter.api.spi.Scorer#cachedTokens}: a prefix
 *     still being prefilled there may be discounted); the index's own match is {@link
 *     #indexMatchedTokens()}
 * @param cost the scorer's cost of the chosen backend (unit depends on the scorer; for the est-TTFT
 *     scorer it is milliseconds)
 * @param reason a short human-readable explanation of the choice
 * @param attempt 0 for the first route, 1.. for failovers
 * @param lease the completion handle
 */
public record Routed(
    RouteRequest request,
    Backend backend,
    String resolvedModel,
    List<String> fallbacks,
    int promptTokens,
    int matchedTokens,
    double cost,
    String reason,
    int attempt,
    Lease lease)
    implements RouteDecision {

  public Routed {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(backend, "backend");
    Objects.requireNonNull(resolvedModel, "resolvedModel");
    fallbacks = fallbacks instanceof FallbackIds ? fallbacks : List.copyOf(fallbacks);
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(lease, "lease");
  }

  /**
   * Prompt tokens the engine's prefix index matched on the chosen backend when it routed this
   * decision (capped at {@link #promptTokens}), before the scorer's {@link
   * dev.prefixrouter.api.spi.Scorer#cachedTokens} discount for prefixes still being prefilled
   * there: the prediction {@link CacheAccuracy} checks against the engine's cached count. At least
   * {@link #matchedTokens} for a decision of the engine.
   *
   * <p>Read from the lease ({@link Lease#indexMatchedTokensOr}): a copy of the engine's decision
   * around a wrapping lease (such as the Spring Boot starter's observed engine hands out) reports
   * the same match as long as each wrapper forwards that call; a {@code Routed} around a lease that
   * does not know the match (a host's own lease) reports {@link #matchedTokens}. O(1) per wrapper,
   * allocation-free.
   */
  public int indexMatchedTokens() {
    return lease.indexMatchedTokensOr(matchedTokens);
  }

  /** Id of the chosen backend. */
  public String backendId() {
    return backend.id();
  }
}
