package dev.prefixrouter.api;

import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A request the engine did not route. Expected outcome, not an error.
 *
 * @param request the request
 * @param reason why
 * @param retryAfter when retrying may succeed ({@link Duration#ZERO} when unknown or pointless, see
 *     {@link #retryable()})
 * @param message a human-readable explanation naming the limit or filter involved
 * @param emptiedBy for {@link RejectReason#NO_ELIGIBLE_BACKEND}: the filter that emptied the set
 */
public record Rejected(
    RouteRequest request,
    RejectReason reason,
    Duration retryAfter,
    String message,
    @Nullable EligibilityFilter emptiedBy)
    implements RouteDecision, PairDecision {

  public Rejected {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(retryAfter, "retryAfter");
    Objects.requireNonNull(message, "message");
    if (retryAfter.isNegative()) {
      throw new IllegalArgumentException("retryAfter must not be negative, was " + retryAfter);
    }
  }

  /** Whether retrying the same request later can succeed. */
  public boolean retryable() {
    return reason == RejectReason.RATE_LIMITED
        || reason == RejectReason.OVERLOADED
        || reason == RejectReason.NO_ELIGIBLE_BACKEND;
  }
}
