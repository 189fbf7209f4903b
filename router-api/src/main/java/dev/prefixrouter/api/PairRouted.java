package dev.prefixrouter.api;

import java.time.Duration;
import java.util.Objects;

/**
 * A request routed as a prefill/decode pair: the host sends the prompt to {@link #prefillBackend()}
 * (which computes its KV cache and the first token), has the KV cache transferred to {@link
 * #decode()}, which generates the rest, and reports both phases on {@link #lease()}. When both are
 * the same backend ({@link #colocated()}), nothing is transferred.
 *
 * <p>Report outcomes on {@link #lease()} only, never on {@code prefill().lease()}: the pair lease
 * ends the prefill leg itself.
 *
 * @param request the request as the host gave it
 * @param prefill the prefill leg as the engine routed it (backend, matched tokens, cost, reason,
 *     fallbacks); its request carries the {@link Role#PREFILL_CAPABILITY} requirement, unless the
 *     router has a {@link DisaggregatedRouter.Builder#localPrefillTokens local-prefill threshold}
 *     (then a pair whose prefill leg is on a decode-only backend is {@link #colocated()})
 * @param decode the decode backend
 * @param decodeCost the decode rule's cost of {@code decode} (for {@link
 *     DisaggregatedRouter.DecodeRule#ESTIMATED_COST}: milliseconds of transfer plus decode work;
 *     for {@link DisaggregatedRouter.DecodeRule#LEAST_ACTIVE_TOKENS}: active tokens)
 * @param transfer the estimated KV transfer time from the prefill to the decode backend ({@link
 *     Duration#ZERO} when colocated or no transfer cost is given)
 * @param reason a short human-readable explanation of the decode choice
 * @param attempt 0 for the first route, 1.. for failovers
 * @param lease the completion handle of both phases
 */
public record PairRouted(
    RouteRequest request,
    Routed prefill,
    Backend decode,
    double decodeCost,
    Duration transfer,
    String reason,
    int attempt,
    PairLease lease)
    implements PairDecision {

  public PairRouted {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(prefill, "prefill");
    Objects.requireNonNull(decode, "decode");
    Objects.requireNonNull(transfer, "transfer");
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(lease, "lease");
  }

  /** The prefill backend. */
  public Backend prefillBackend() {
    return prefill.backend();
  }

  /** Whether one backend serves both phases (no KV transfer). */
  public boolean colocated() {
    return prefill.backend().id().equals(decode.id());
  }
}
