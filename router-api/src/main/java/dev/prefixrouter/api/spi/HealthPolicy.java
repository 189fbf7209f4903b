package dev.prefixrouter.api.spi;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.HealthState;

/**
 * Per-backend health (circuit breaker). The engine filters out backends whose {@link #state} is
 * {@link HealthState#OPEN}, asks {@link #tryAcquire} for the backend it is about to route to (a
 * half-open breaker admits a bounded number of probes), and feeds outcomes back.
 *
 * <p><b>Call site:</b> {@code state} for every candidate of every {@code route()}, the rest once
 * per decision or lease end; concurrently. <b>Budget:</b> O(1), lock-free on the read path.
 */
public interface HealthPolicy extends SlotLifecycle {

  /** Starts tracking a slot as {@link HealthState#CLOSED}. */
  @Override
  void addBackend(int slot, Backend backend);

  /** Forgets a slot. */
  @Override
  void removeBackend(int slot);

  /** The state now (an open breaker whose cooldown is over reads {@code HALF_OPEN}). */
  HealthState state(int slot, long nowNanos);

  /** Whether a request may go to the slot now; a half-open breaker counts it as a probe. */
  boolean tryAcquire(int slot, long nowNanos);

  /** A request to the slot got its first token or completed. */
  void onSuccess(int slot, long nowNanos);

  /**
   * A request to the slot, placed at {@code placedNanos} (the engine's ticker when it was routed),
   * got its first token or completed: a breaker can tell a half-open round's probes from requests
   * placed before the breaker opened, whose late successes say nothing about the backend since. The
   * engine calls this one; the default ignores the placement time.
   */
  default void onSuccess(int slot, long nowNanos, long placedNanos) {
    onSuccess(slot, nowNanos);
  }

  /**
   * A request to the slot, placed at {@code placedNanos}, ended without saying anything about the
   * backend (before its first token the client left or sent a bad request, or the engine withdrew
   * it): a half-open breaker whose probe it was can issue another one instead of waiting out a
   * cooldown. The default does nothing.
   */
  default void onNoOutcome(int slot, long nowNanos, long placedNanos) {}

  /** A request to the slot failed in a way that {@link Failure#countsAgainstBackend() counts}. */
  void onFailure(int slot, Failure failure, long nowNanos);

  /** Never opens. */
  static HealthPolicy alwaysHealthy() {
    return AlwaysHealthy.INSTANCE;
  }
}
