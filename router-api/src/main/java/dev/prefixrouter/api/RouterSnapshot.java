package dev.prefixrouter.api;

import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * An immutable picture of the engine for dashboards and the actuator endpoint. Taking one costs
 * O(backends + listed tenants) and never blocks routing.
 *
 * @param takenAtNanos the engine clock when taken
 * @param backends one entry per backend, in the order they were added
 * @param tenants limiter state of at most the configured number of tenants
 * @param index prefix-index counters
 * @param routed requests routed (first attempts)
 * @param failovers successful failovers
 * @param rejected rejections by reason
 * @param capacity one capacity plan per model when a {@link CapacityObjective} is configured, else
 *     empty
 */
public record RouterSnapshot(
    long takenAtNanos,
    List<BackendSnapshot> backends,
    List<TenantSnapshot> tenants,
    IndexStats index,
    long routed,
    long failovers,
    Map<RejectReason, Long> rejected,
    List<CapacityPlan> capacity) {

  public RouterSnapshot {
    backends = List.copyOf(backends);
    capacity = List.copyOf(capacity);
    tenants = List.copyOf(tenants);
    EnumMap<RejectReason, Long> ordered = new EnumMap<>(RejectReason.class);
    ordered.putAll(rejected);
    rejected = Collections.unmodifiableMap(ordered);
  }

  /** A snapshot without capacity plans. */
  public RouterSnapshot(
      long takenAtNanos,
      List<BackendSnapshot> backends,
      List<TenantSnapshot> tenants,
      IndexStats index,
      long routed,
      long failovers,
      Map<RejectReason, Long> rejected) {
    this(takenAtNanos, backends, tenants, index, routed, failovers, rejected, List.of());
  }

  /** The capacity plan of a model, if planning is on and the model has backends. */
  public Optional<CapacityPlan> capacity(String model) {
    return capacity.stream().filter(c -> c.model().equals(model)).findFirst();
  }

  public Optional<BackendSnapshot> backend(String id) {
    return backends.stream().filter(b -> b.id().equals(id)).findFirst();
  }

  /** Total in-flight leases across backends. */
  public long inFlight() {
    return backends.stream().mapToLong(BackendSnapshot::inFlight).sum();
  }
}
