package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.HealthPolicy;
import dev.prefixrouter.api.spi.SlotLifecycle;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.UnaryOperator;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine's backends: dense slots in {@code [0, maxBackends)}, a copy-on-write table that routes
 * read without locking, and the slot lifecycle of every slot-keyed part (index, health, scorer).
 * Add, update and remove take {@link #lock} and publish a new table; a removed slot is reused only
 * after every part has forgotten it (see {@link BackendEntry} for the claim protocol).
 */
final class Membership implements BackendRegistry {
  private static final Logger log = LoggerFactory.getLogger(RoutingEngine.class);

  /** Immutable membership table. */
  private record Table(BackendEntry[] entries, Map<String, BackendEntry> byId) {}

  private final int maxBackends;
  private final SlotLifecycle[] parts;
  private final HealthPolicy health;
  private final Listeners listeners;
  private final LongSupplier ticker;

  private final Object lock = new Object();
  private final BitSet usedSlots = new BitSet();
  private volatile Table table = new Table(new BackendEntry[0], Map.of());

  /**
   * Requests placed on backends removed since, and the entries being removed (out of the table,
   * waiting for their claims): with the table's entries, each entry is counted exactly once at any
   * instant the lock is held, so the routed total never goes down. Guarded by {@link #lock}.
   */
  private long removedRequests;

  private final List<BackendEntry> removing = new ArrayList<>();

  /**
   * Hands {@code maxBackends} down to every part ({@link SlotLifecycle#start}); {@code health} is
   * one of {@code parts}.
   */
  Membership(
      int maxBackends,
      List<SlotLifecycle> parts,
      HealthPolicy health,
      Listeners listeners,
      LongSupplier ticker) {
    this.maxBackends = maxBackends;
    this.parts = parts.toArray(new SlotLifecycle[0]);
    this.health = health;
    this.listeners = listeners;
    this.ticker = ticker;
    for (SlotLifecycle p : this.parts) {
      p.start(maxBackends);
    }
  }

  int maxBackends() {
    return maxBackends;
  }

  /** The current backends; read without locking. */
  BackendEntry[] entries() {
    return table.entries;
  }

  @Nullable BackendEntry entry(String backendId) {
    return table.byId.get(backendId);
  }

  @Override
  public void add(Backend backend) {
    Objects.requireNonNull(backend, "backend");
    BackendEntry existing;
    synchronized (lock) {
      Table t = table;
      existing = t.byId.get(backend.id());
      if (existing != null) {
        replace(existing, backend);
      } else {
        int slot = usedSlots.nextClearBit(0);
        if (slot >= maxBackends) {
          throw new IllegalStateException(
              "cannot add backend '"
                  + backend.id()
                  + "': maxBackends "
                  + maxBackends
                  + " reached (removed backends free their slot once removal completes)");
        }
        addToParts(slot, backend);
        usedSlots.set(slot);
        BackendEntry e = new BackendEntry(slot, backend);
        BackendEntry[] entries = Arrays.copyOf(t.entries, t.entries.length + 1);
        entries[entries.length - 1] = e;
        Map<String, BackendEntry> byId = new LinkedHashMap<>(t.byId);
        byId.put(backend.id(), e);
        table = new Table(entries, Map.copyOf(byId));
      }
    }
    log.info("backend {} {}", backend.id(), existing == null ? "added" : "updated");
    listeners.notify(l -> l.onBackendAdded(backend));
  }

  /** Adds the slot to every part, or to none (see {@link #inEveryPartOrNone}). Lock held. */
  private void addToParts(int slot, Backend backend) {
    inEveryPartOrNone(p -> p.addBackend(slot, backend), p -> p.removeBackend(slot));
  }

  /** Swaps the descriptor in every part and the entry, or in none. Lock held. */
  private void replace(BackendEntry existing, Backend backend) {
    Backend before = existing.backend;
    inEveryPartOrNone(
        p -> p.updateBackend(existing.slot, before, backend),
        p -> p.updateBackend(existing.slot, backend, before));
    existing.backend = backend;
  }

  /**
   * Applies {@code change} to every part in order; if a part rejects it (e.g. an index whose
   * capacity bound the descriptor exceeds), undoes it in the parts before that one, newest first,
   * and rethrows. Lock held.
   */
  private void inEveryPartOrNone(Consumer<SlotLifecycle> change, Consumer<SlotLifecycle> undo) {
    int done = 0;
    try {
      for (SlotLifecycle p : parts) {
        change.accept(p);
        done++;
      }
    } catch (RuntimeException | Error x) {
      for (int i = done - 1; i >= 0; i--) {
        try {
          undo.accept(parts[i]);
        } catch (RuntimeException y) {
          x.addSuppressed(y);
        }
      }
      throw x;
    }
  }

  @Override
  public boolean update(String backendId, UnaryOperator<Backend> change) {
    Objects.requireNonNull(backendId, "backendId");
    Objects.requireNonNull(change, "change");
    Backend updated;
    synchronized (lock) {
      BackendEntry e = table.byId.get(backendId);
      if (e == null) {
        return false;
      }
      updated = Objects.requireNonNull(change.apply(e.backend), "changed backend");
      if (!updated.id().equals(backendId)) {
        throw new IllegalArgumentException(
            "update of '" + backendId + "' must keep the id, got '" + updated.id() + "'");
      }
      replace(e, updated);
    }
    Backend b = updated;
    listeners.notify(l -> l.onBackendAdded(b));
    return true;
  }

  @Override
  public boolean remove(String backendId) {
    Objects.requireNonNull(backendId, "backendId");
    BackendEntry e;
    synchronized (lock) {
      Table t = table;
      e = t.byId.get(backendId);
      if (e == null) {
        return false;
      }
      List<BackendEntry> rest = new ArrayList<>(t.entries.length);
      Map<String, BackendEntry> byId = new LinkedHashMap<>();
      for (BackendEntry x : t.entries) {
        if (x != e) {
          rest.add(x);
          byId.put(x.backend.id(), x);
        }
      }
      table = new Table(rest.toArray(new BackendEntry[0]), Map.copyOf(byId));
      e.removed = true;
      removing.add(e);
    }
    e.awaitNoClaims();
    synchronized (lock) {
      removing.remove(e);
      removedRequests += e.requests(); // no claim left: the count is final
    }
    // every part forgets the slot and the slot is freed even if one part throws: a part that
    // throws must not leave the others with the old backend's state or leak the slot (capacity
    // for maxBackends shrinking for good); the first throw is rethrown after, the rest suppressed
    RuntimeException thrown = null;
    try {
      for (SlotLifecycle p : parts) {
        try {
          p.removeBackend(e.slot);
        } catch (RuntimeException ex) {
          if (thrown == null) {
            thrown = ex;
          } else {
            thrown.addSuppressed(ex);
          }
        }
      }
    } finally {
      synchronized (lock) {
        usedSlots.clear(e.slot);
      }
    }
    Backend b = e.backend;
    log.info("backend {} removed ({} leases still open)", b.id(), e.inFlight());
    listeners.notify(l -> l.onBackendRemoved(b));
    if (thrown != null) {
      throw thrown;
    }
    return true;
  }

  @Override
  public void drain(String backendId) {
    setDraining(backendId, true);
  }

  @Override
  public void undrain(String backendId) {
    setDraining(backendId, false);
  }

  private void setDraining(String backendId, boolean draining) {
    Objects.requireNonNull(backendId, "backendId");
    BackendEntry e = table.byId.get(backendId);
    if (e == null) {
      throw new NoSuchElementException("no backend '" + Bounds.echo(backendId) + "'");
    }
    boolean was = e.draining;
    e.draining = draining;
    if (was != draining) {
      Backend b = e.backend;
      log.info("backend {} {}", b.id(), draining ? "draining" : "undrained");
      listeners.notify(l -> l.onDrainChanged(b, draining));
    }
  }

  @Override
  public boolean reportLoad(String backendId, LoadReport report) {
    Objects.requireNonNull(backendId, "backendId");
    Objects.requireNonNull(report, "report");
    BackendEntry e = table.byId.get(backendId);
    if (e == null) {
      return false;
    }
    long now = ticker.getAsLong();
    long age = Bounds.saturatedNanos(report.age());
    e.load = new BackendEntry.TimedLoad(report, Bounds.saturatedMinus(now, age));
    return true;
  }

  @Override
  public boolean reportFailure(String backendId, Failure failure) {
    Objects.requireNonNull(backendId, "backendId");
    Objects.requireNonNull(failure, "failure");
    BackendEntry e = table.byId.get(backendId);
    if (e == null || !e.claim()) {
      return false;
    }
    HealthChange change = null;
    try {
      if (failure.countsAgainstBackend()) {
        long now = ticker.getAsLong();
        change = healthFeedback(e, now, now, failure);
      }
    } finally {
      e.release();
    }
    announce(change);
    return true;
  }

  /** A health state change to announce once the claim it was made under is released. */
  record HealthChange(Backend backend, HealthState from, HealthState to) {}

  /**
   * Feeds a success ({@code failure == null}) or a failure to the backend's health policy; the
   * caller holds a claim on the entry. Returns the state change, or {@code null}: the caller hands
   * it to {@link #announce} after releasing the claim, because a listener may remove the backend,
   * and {@link #remove} waits for every claim on it (the caller's own included).
   */
  @Nullable HealthChange healthFeedback(
      BackendEntry entry, long now, long placedNanos, @Nullable Failure failure) {
    HealthState before;
    HealthState after;
    try {
      before = health.state(entry.slot, now);
      if (failure == null) {
        health.onSuccess(entry.slot, now, placedNanos);
      } else {
        health.onFailure(entry.slot, failure, now);
      }
      after = health.state(entry.slot, now);
    } catch (RuntimeException ex) {
      listeners.ignored(health, ex); // a host's health policy threw: the lease still ends
      return null;
    }
    if (before == after) {
      return null;
    }
    Backend b = entry.backend;
    log.info("backend {} health {} -> {}", b.id(), before, after);
    return new HealthChange(b, before, after);
  }

  /**
   * Tells the health policy that a request placed at {@code placedNanos} ended without an outcome
   * ({@link HealthPolicy#onNoOutcome}); the caller holds the entry's claim.
   */
  void noOutcome(BackendEntry entry, long now, long placedNanos) {
    try {
      health.onNoOutcome(entry.slot, now, placedNanos);
    } catch (RuntimeException ex) {
      listeners.ignored(health, ex); // a host's health policy threw: the lease still ends
    }
  }

  /** Tells the listeners of a change {@link #healthFeedback} returned; no claim may be held. */
  void announce(@Nullable HealthChange change) {
    if (change != null) {
      listeners.notify(l -> l.onHealthChanged(change.backend(), change.from(), change.to()));
    }
  }

  @Override
  public Optional<Backend> get(String backendId) {
    BackendEntry e = table.byId.get(Objects.requireNonNull(backendId, "backendId"));
    return e == null ? Optional.empty() : Optional.of(e.backend);
  }

  @Override
  public List<Backend> all() {
    BackendEntry[] entries = table.entries;
    List<Backend> out = new ArrayList<>(entries.length);
    for (BackendEntry e : entries) {
      out.add(e.backend);
    }
    return List.copyOf(out);
  }

  /** Requests routed so far: their first placements, summed over current and removed backends. */
  long routedRequests() {
    synchronized (lock) {
      long n = removedRequests;
      for (BackendEntry e : table.entries) {
        n += e.requests();
      }
      for (BackendEntry e : removing) {
        n += e.requests();
      }
      return n;
    }
  }
}
