package dev.prefixrouter.api;

import java.util.List;
import java.util.Optional;

/**
 * Runtime membership and load of the engine's backends. Every method is safe to call while other
 * threads route; membership changes are rare operations (they copy the backend table) while {@link
 * #reportLoad} is cheap and may be called at any rate.
 */
public interface BackendRegistry {

  /**
   * Adds a backend, or replaces the descriptor of the backend with the same id (keeping its
   * in-flight counts, cache beliefs and draining state; a changed capacity is applied to the
   * index).
   *
   * <p>Each part of the engine (index, health policy, scorer) takes the backend or none does: a
   * part that rejects the descriptor leaves the engine as it was.
   *
   * @throws IllegalStateException if the engine already holds its maximum number of backends
   * @throws IllegalArgumentException if a part rejects the descriptor, e.g. {@code
   *     RadixPrefixIndex} a {@code capacityBlocks} above its bound of 2,147,483,639 blocks
   */
  void add(Backend backend);

  /**
   * Replaces the descriptor of an existing backend atomically with respect to {@link #add} and
   * {@link #remove}: a backend removed meanwhile is not brought back.
   *
   * @param change maps the current descriptor to the new one (same id)
   * @return false if no backend has this id
   * @throws IllegalArgumentException if {@code change} returns a descriptor with another id
   */
  boolean update(String backendId, java.util.function.UnaryOperator<Backend> change);

  /**
   * Removes a backend and everything the engine believes about it. Once this returns, no decision
   * names the backend; its open leases still end normally.
   *
   * @return whether a backend with this id existed
   */
  boolean remove(String backendId);

  /**
   * Stops routing new requests to the backend; in-flight requests finish.
   *
   * @throws java.util.NoSuchElementException if no such backend
   */
  void drain(String backendId);

  /**
   * Routes to a drained backend again.
   *
   * @throws java.util.NoSuchElementException if no such backend
   */
  void undrain(String backendId);

  /**
   * Hands the engine a load measurement of a backend.
   *
   * @return false if no backend has this id (a report racing a removal is not an error)
   */
  boolean reportLoad(String backendId, LoadReport report);

  /**
   * Hands the backend's health policy a failure observed outside a request, e.g. by a prober or a
   * metrics poller that has not reached the backend for some time. The policy treats it as it
   * treats a lease's failure (a circuit breaker counts it towards opening, or re-opens a half-open
   * breaker); a failure that does not {@link Failure#countsAgainstBackend() count} changes nothing.
   * Cheap and thread-safe; the caller decides how often to report.
   *
   * @return false if no backend has this id (a report racing a removal is not an error)
   */
  boolean reportFailure(String backendId, Failure failure);

  /** The current descriptor of a backend. */
  Optional<Backend> get(String backendId);

  /** All current backends, in the order they were added. */
  List<Backend> all();
}
