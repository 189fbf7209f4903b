package dev.prefixrouter.api.spi;

import org.jspecify.annotations.Nullable;

/**
 * Where each session was last routed: the store behind session affinity, keyed by backend id (not
 * by slot) so that several router replicas can share it. The default is an in-process store in the
 * scoring module; a shared one (e.g. Redis) serves reads from a local view and writes behind, since
 * routing never waits on the network.
 *
 * <p><b>Call site:</b> {@link #backendOf} at most once per {@code route()} of a request with a
 * session id, {@link #pin} once per routed such request, both on the routing thread, concurrently;
 * {@link #forgetBackend} when a backend leaves. <b>Budget:</b> {@link #backendOf} and {@link #pin}
 * never block and cost well under 1 µs; the store's size is bounded by the implementation (entries
 * expire or are evicted). Thread-safe.
 *
 * <p>A pin is a preference, not a guarantee: the scorer ignores a pin whose backend is not a
 * candidate of the request (unknown, removed, unhealthy, draining), so a stale or lost pin only
 * costs a cache miss.
 */
public interface SessionPins {

  /**
   * The id of the backend {@code sessionKey} is pinned to, or {@code null} if none. Reading counts
   * as use for the store's expiry.
   *
   * @param sessionKey the scorer's injective key of (tenant, session id), never {@code null}
   */
  @Nullable String backendOf(String sessionKey);

  /** Pins {@code sessionKey} to {@code backendId}, replacing any earlier pin. */
  void pin(String sessionKey, String backendId);

  /** Drops every pin to {@code backendId} (it left the fleet); may be O(pins). */
  void forgetBackend(String backendId);

  /** Pins currently held (approximate), for {@code inspect()} and tests. */
  long size();
}
