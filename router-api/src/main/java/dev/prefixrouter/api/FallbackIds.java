package dev.prefixrouter.api;

import java.util.AbstractList;
import java.util.RandomAccess;

/**
 * {@link Routed#fallbacks()} as the engine builds it: an unmodifiable list over an array of
 * non-null ids that only this list references, so {@link Routed} keeps it without copying (one
 * array and this wrapper per route instead of {@code List.of}'s array, its copy and its wrapper).
 * Immutable, thread-safe.
 */
final class FallbackIds extends AbstractList<String> implements RandomAccess {
  private final String[] ids;

  /** Takes ownership of {@code ids} (non-null elements; the caller keeps no reference). */
  FallbackIds(String[] ids) {
    this.ids = ids;
  }

  @Override
  public String get(int index) {
    return ids[index];
  }

  @Override
  public int size() {
    return ids.length;
  }
}
