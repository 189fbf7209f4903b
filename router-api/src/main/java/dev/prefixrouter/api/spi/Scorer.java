package dev.prefixrouter.api.spi;

import dev.prefixrouter.api.Backend;
import java.util.Map;
import java.util.OptionalLong;
import org.jspecify.annotations.Nullable;

/**
 * Ranks the eligible candidates of a request. Affinity, saturation and tie-breaking policies live
 * here, not in the pipeline.
 *
 * <p><b>Call site:</b> {@link #score} once per {@code route()} (and per failover) on the caller's
 * thread, concurrently; feedback methods from whichever thread ends a lease. <b>Budget:</b> O(n) in
 * the number of candidates, a few µs for 64 candidates. Thread-safe.
 */
public interface Scorer extends SlotLifecycle {

  /** A short stable name for logs and the simulator ({@code least-in-flight}, {@code est-ttft}). */
  String name();

  /** Sets a cost for every candidate and leaves the ranking in {@link ScoringContext#order()}. */
  void score(ScoringContext ctx);

  /**
   * The scorer's estimate of the time to first token of the request on {@code candidate}, in
   * nanoseconds, right after {@link #score} ranked {@code ctx}; empty when the scorer does not
   * estimate TTFT (the default). The engine's SLO admission asks it for the top-ranked candidate of
   * a sheddable request with a {@link dev.prefixrouter.api.RouteRequest#ttftBudget() TTFT budget}
   * and sheds the request when the estimate exceeds the budget; with no estimate it admits. Called
   * on the routing thread, at most once per decision; O(1).
   */
  default OptionalLong estimatedTtftNanos(ScoringContext ctx, int candidate) {
    return OptionalLong.empty();
  }

  /**
   * Of the candidate's {@link ScoringContext#matchedTokens matched tokens}, those the scorer
   * expects the engine to serve from its cache: the index holds a routed request's blocks from the
   * moment it is routed, but an engine caches them only once that prefill has run, so a prefix
   * another request is still about to prefill there is matched but not served. The engine asks it
   * on the routing thread with the same {@code ctx}, after {@link #score} (and any steering and SLO
   * admission), before {@link #onRouted}, for each candidate it tries to place on, and uses the
   * answer as the decision's {@link dev.prefixrouter.api.Routed#matchedTokens}: the backend's
   * pending prefill and the first-token observation calibration learns from (engine-reported cache
   * hits are counted against the index's undiscounted match, {@link
   * dev.prefixrouter.api.CacheAccuracy}). An implementation may rely on per-thread state its {@code
   * score} left for this {@code ctx}. A value outside {@code [0, matchedTokens]} is clamped into
   * it. The default is {@code ctx.matchedTokens(candidate)}. O(1).
   */
  default int cachedTokens(ScoringContext ctx, int candidate) {
    return ctx.matchedTokens(candidate);
  }

  /** The candidate at rank 0 that the engine actually routed to; called before route returns. */
  default void onRouted(ScoringContext ctx, int candidate) {}

  /**
   * {@link #onRouted} for a scorer that keeps state per request until it ends (such as the blocks a
   * request holds active on its backend): what it returns (or {@code null}) is kept with the
   * request's lease and handed to {@link #onEnded(int, Object)} when that lease ends, once — unless
   * the backend was removed first: {@link #removeBackend} then stands for the end of every lease
   * still open there, whose tokens are dropped. The engine calls this in place of {@code onRouted};
   * the default calls {@code onRouted} and returns {@code null}. A scorer that wraps another
   * forwards both this and {@code onEnded(int, Object)}.
   */
  default @Nullable Object onRoutedLease(ScoringContext ctx, int candidate) {
    onRouted(ctx, candidate);
    return null;
  }

  /** A lease reached its first token; feeds online calibration. */
  default void onFirstToken(FirstTokenObservation observation) {}

  /**
   * A lease reached its first token, as the fields of a {@link FirstTokenObservation}: what the
   * engine calls, so that a scorer that overrides it allocates nothing per first token whatever the
   * JIT inlines. The default builds the observation and calls {@link
   * #onFirstToken(FirstTokenObservation)}; a scorer overrides one or the other.
   */
  default void onFirstToken(
      int slot,
      long ttftNanos,
      int promptTokens,
      int matchedTokens,
      long queuedPrefillTokens,
      int runningDecodes,
      double estimatedCost) {
    onFirstToken(
        new FirstTokenObservation(
            slot,
            ttftNanos,
            promptTokens,
            matchedTokens,
            queuedPrefillTokens,
            runningDecodes,
            estimatedCost));
  }

  /** A lease on {@code slot} ended (completed or failed), whether or not it saw a first token. */
  default void onEnded(int slot) {}

  /**
   * A lease on {@code slot} ended, with what {@link #onRoutedLease} returned for it ({@code null}
   * when it returned nothing). The default calls {@link #onEnded(int)}.
   */
  default void onEnded(int slot, @Nullable Object token) {
    onEnded(slot);
  }

  /** A backend joined the engine; the default keeps no per-backend state. */
  @Override
  default void addBackend(int slot, Backend backend) {}

  /** A backend left the engine; forget its state. */
  @Override
  default void removeBackend(int slot) {}

  /**
   * Parameters of this scorer for a slot, shown in {@code inspect()} (e.g. fitted coefficients).
   */
  default Map<String, Double> describe(int slot) {
    return Map.of();
  }

  /**
   * The built-in default: fewest open leases relative to the backend's weight, ties broken
   * round-robin. Ignores prefix matches.
   */
  static Scorer leastInFlight() {
    return new LeastInFlightScorer();
  }
}
