package dev.prefixrouter.api.spi;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.HealthState;
import dev.prefixrouter.api.Rejected;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.Usage;

/**
 * Observes decisions and outcomes (metrics, logs, audit). Every method has an empty default.
 *
 * <p><b>Call site:</b> synchronously on the thread that made the decision or ended the lease, after
 * the engine's own state is updated and with no engine lock held. The engine catches and logs
 * (rate-limited) anything a listener throws, so a broken listener never breaks routing. Keep
 * methods short and non-blocking.
 */
public interface RoutingListener {

  /** A request was routed (first attempt or failover, see {@link Routed#attempt()}). */
  default void onRouted(Routed routed) {}

  default void onRejected(Rejected rejected) {}

  /** The lease of {@code routed} reached its first token after {@code ttftNanos}. */
  default void onFirstToken(Routed routed, long ttftNanos) {}

  default void onCompleted(Routed routed, Usage usage, long durationNanos) {}

  default void onFailed(Routed routed, Failure failure, boolean beforeFirstToken) {}

  default void onBackendAdded(Backend backend) {}

  default void onBackendRemoved(Backend backend) {}

  default void onDrainChanged(Backend backend, boolean draining) {}

  default void onHealthChanged(Backend backend, HealthState from, HealthState to) {}

  /** A listener that does nothing. */
  static RoutingListener none() {
    return NoListener.INSTANCE;
  }
}
