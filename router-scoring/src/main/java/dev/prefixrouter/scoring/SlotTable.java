package dev.prefixrouter.scoring;

import java.util.Arrays;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * A value per backend slot, created on first use: a copy-on-write array behind a volatile
 * reference, so reads take no lock and allocate nothing, and the rare writes (a slot's first use, a
 * backend's removal) copy the array under the owner's lock.
 *
 * <p>Thread-safe: writes synchronize on the lock given at construction (the owner's, so they are
 * also ordered with the owner's other writes under it); a value is created at most once per slot
 * until that slot is removed. Bounded by the largest slot used (slots are the engine's dense
 * backend indexes, below its {@code maxBackends}, at most {@code
 * RoutingEngineBuilder.MAX_BACKENDS_LIMIT}).
 */
final class SlotTable<T> {
  private final Object lock;
  private volatile @Nullable Object[] values = new Object[0];

  SlotTable(Object lock) {
    this.lock = lock;
  }

  /** The slot's value, or null when it has none. No lock, no allocation. */
  @SuppressWarnings("unchecked")
  @Nullable T get(int slot) {
    Object[] v = values;
    return slot >= 0 && slot < v.length ? (T) v[slot] : null;
  }

  /** The slot's value, created by {@code create} (under the lock) when it has none. */
  T getOrCreate(int slot, Supplier<T> create) {
    T t = get(slot);
    if (t != null) {
      return t;
    }
    synchronized (lock) {
      @Nullable Object[] v = values;
      @Nullable Object[] copy =
          slot >= v.length
              ? Arrays.copyOf(v, Math.max(slot + 1, Math.max(64, v.length * 2)))
              : v.clone();
      if (copy[slot] == null) {
        copy[slot] = create.get();
      }
      values = copy;
      @SuppressWarnings("unchecked")
      T created = (T) copy[slot];
      return created;
    }
  }

  /** Forgets the slot's value (a removed backend); a later use creates a fresh one. */
  void remove(int slot) {
    synchronized (lock) {
      @Nullable Object[] v = values;
      if (slot >= 0 && slot < v.length && v[slot] != null) {
        @Nullable Object[] copy = v.clone();
        copy[slot] = null;
        values = copy;
      }
    }
  }
}
