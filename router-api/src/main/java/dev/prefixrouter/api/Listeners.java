package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.RoutingListener;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine's listeners, called in the order added. A listener that throws a {@link
 * RuntimeException} is logged (at most one warning per 10 s) and ignored; an {@link Error}
 * propagates to the caller, after the engine has settled its own state. Thread-safe; free when no
 * listener is registered.
 */
final class Listeners {
  private static final Logger log = LoggerFactory.getLogger(RoutingEngine.class);
  private static final long WARN_INTERVAL_NANOS = 10_000_000_000L;

  private final RoutingListener[] listeners;
  private final LongSupplier ticker;
  private final AtomicLong lastWarning = new AtomicLong(Long.MIN_VALUE);

  Listeners(List<RoutingListener> listeners, LongSupplier ticker) {
    this.listeners = listeners.toArray(new RoutingListener[0]);
    this.ticker = ticker;
  }

  /** Whether any listener is registered (callers skip building events otherwise). */
  boolean any() {
    return listeners.length > 0;
  }

  /** Calls every listener. */
  void notify(Consumer<RoutingListener> call) {
    for (RoutingListener l : listeners) {
      try {
        call.accept(l);
      } catch (RuntimeException ex) {
        ignored(l, ex);
      }
    }
  }

  /**
   * Logs that a callback of the host ({@code source}: a listener, the prediction sink) threw and
   * was ignored; at most one warning per 10 s for all of them together.
   */
  void ignored(Object source, RuntimeException ex) {
    long now = ticker.getAsLong();
    long last = lastWarning.get();
    if ((last == Long.MIN_VALUE || now - last >= WARN_INTERVAL_NANOS)
        && lastWarning.compareAndSet(last, now)) {
      log.warn("routing callback {} threw; ignored (warnings rate-limited to 1/10s)", source, ex);
    }
  }
}
