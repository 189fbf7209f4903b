package dev.prefixrouter.api.spi;

import dev.prefixrouter.api.Backend;

/**
 * The slot lifecycle every slot-keyed part of the engine implements ({@link PrefixIndex}, {@link
 * HealthPolicy}, {@link Scorer}): the engine calls {@link #start} once when it is built, then
 * {@link #addBackend}, {@link #updateBackend} and {@link #removeBackend} as backends come and go.
 *
 * <p>Slots are dense in {@code [0, maxBackends)} (see the package documentation). Calls for one
 * slot never overlap; calls for different slots may. Membership changes are rare: no budget beyond
 * "not on the routing hot path".
 */
public interface SlotLifecycle {

  /**
   * Called once, by the engine's {@code build()}, before any other method: every slot will be in
   * {@code [0, maxBackends)}. A part sized at construction adopts {@code maxBackends} or, if it was
   * explicitly sized for fewer, throws {@link IllegalArgumentException} naming both values. The
   * default accepts any size.
   */
  default void start(int maxBackends) {}

  /** A backend took {@code slot}; the part starts tracking it. */
  void addBackend(int slot, Backend backend);

  /**
   * The descriptor of the backend in {@code slot} changed (capacity, weight, capabilities...);
   * {@code before} and {@code after} have the same id. The default ignores it.
   */
  default void updateBackend(int slot, Backend before, Backend after) {}

  /** The backend in {@code slot} left; the part forgets it. The slot may be reused afterwards. */
  void removeBackend(int slot);
}
