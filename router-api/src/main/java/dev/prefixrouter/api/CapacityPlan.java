package dev.prefixrouter.api;

import java.util.Objects;

/**
 * The capacity planner's recommendation for one model: how many backends its pool needs to meet the
 * {@link CapacityObjective}, from an M/M/c (Erlang C) model. A recommendation for the host's
 * autoscaler; the engine never adds or removes a backend itself.
 *
 * <p><b>The model.</b> Each backend is one server whose service time is a request's prefill time;
 * requests share one queue (the router's least-cost choice approximates joining the shortest
 * queue). The arrival rate λ is the requests routed to the model's backends over the objective's
 * window; the mean service time S is, per backend, its scorer's calibrated prefill time {@code
 * alphaMs + betaMsPerToken·u + gammaMsPerToken2·u·(u + c)} at the window's mean uncached ({@code
 * u}) and cached ({@code c}: the index's match, {@link BackendSnapshot#matchedTokens}) tokens per
 * request, weighted by the backend's share of requests. The coefficients are read from {@link
 * BackendSnapshot#costModel()} under those keys (the est-ttft scorer publishes them, fitted
 * online); a backend whose scorer publishes none uses the objective's fallback coefficients. TTFT
 * at the percentile is taken as S plus the M/M/c wait's quantile ({@link ErlangC#serversFor}).
 *
 * <p><b>Assumptions that bound its accuracy.</b> Poisson arrivals; the wait is that of exponential
 * service (real prefill times vary less, so the wait is over-estimated and the count errs high);
 * the variance of a request's own prefill time is left out (long prompts in a mix of lengths take
 * longer than S); decode steps that share the batch slow prefill and are not modelled, so
 * decode-heavy traffic needs more than recommended; prefix-cache hits are assumed to stay at the
 * observed rate at the new count; rejected requests are not counted as demand (shed load hides
 * behind OVERLOADED rejections); the backends serving the same set of several models form one pool
 * of their own; counts of a backend removed within the window are lost from it.
 *
 * @param model the model; for backends serving several models, their sorted names joined by {@code
 *     ','}
 * @param backends backends serving it now, draining ones excluded
 * @param arrivalsPerSecond λ over the window
 * @param meanServiceMillis S, the mean prefill time per request; 0 without traffic
 * @param observedSeconds the length of the measurement (shorter than the window after start)
 * @param status whether a recommendation exists
 * @param recommendedBackends the fewest backends meeting the objective; 0 without traffic; -1 when
 *     {@link Status#UNREACHABLE}
 * @param predictedTtftMillisNow the model's TTFT at the objective's percentile with {@code
 *     backends}; -1 when the queue is unstable there (λ·S at least the count) or without backends
 * @param predictedTtftMillisRecommended the same with {@code recommendedBackends}; -1 when none
 */
public record CapacityPlan(
    String model,
    int backends,
    double arrivalsPerSecond,
    double meanServiceMillis,
    double observedSeconds,
    Status status,
    int recommendedBackends,
    double predictedTtftMillisNow,
    double predictedTtftMillisRecommended) {

  /** Whether a plan could be made. */
  public enum Status {
    /** A recommendation from observed traffic. */
    OK,
    /** Nothing routed within the window: recommended 0. */
    NO_TRAFFIC,
    /**
     * No count meets the objective: the mean prefill time alone exceeds it, or more than {@link
     * ErlangC#MAX_SERVERS} backends would be needed.
     */
    UNREACHABLE
  }

  public CapacityPlan {
    Objects.requireNonNull(model, "model");
    Objects.requireNonNull(status, "status");
  }

  /** Recommended minus current backends: positive to scale out, negative to scale in. */
  public int delta() {
    return status == Status.UNREACHABLE ? 0 : recommendedBackends - backends;
  }
}
