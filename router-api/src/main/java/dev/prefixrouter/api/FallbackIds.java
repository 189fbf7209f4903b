package dev.prefixrouter.api;

import java.util.AbstractList;
import java.util.RandomAccess;
import org.jspecify.annotations.Nullable;

/**
 * {@link Routed#fallbacks()} as the engine builds it: an unmodifiable list of non-null ids that
 * only this list references, so {@link Routed} keeps it without copying. Up to {@link #INLINE} ids
 * are held in fields (one object per route, 32 bytes); more in an array the list owns. Immutable,
 * thread-safe.
 */
abstract sealed class FallbackIds extends AbstractList<String> implements RandomAccess
    permits FallbackIds.Inline, FallbackIds.Many {

  /** Most ids held without an array. */
  static final int INLINE = 3;

  /** One to three ids: {@code first}, then {@code second} and {@code third} while not null. */
  static FallbackIds of(String first, @Nullable String second, @Nullable String third) {
    return new Inline(first, second, third);
  }

  /** Takes ownership of {@code ids} (non-null elements; the caller keeps no reference). */
  static FallbackIds of(String[] ids) {
    return new Many(ids);
  }

  static final class Inline extends FallbackIds {
    private final String first;
    private final @Nullable String second;
    private final @Nullable String third;

    Inline(String first, @Nullable String second, @Nullable String third) {
      this.first = first;
      this.second = second;
      this.third = second == null ? null : third;
    }

    @Override
    public String get(int index) {
      String id =
          switch (index) {
            case 0 -> first;
            case 1 -> second;
            case 2 -> third;
            default -> null;
          };
      if (id == null) {
        throw new IndexOutOfBoundsException("index " + index + " of " + size());
      }
      return id;
    }

    @Override
    public int size() {
      return second == null ? 1 : third == null ? 2 : 3;
    }
  }

  static final class Many extends FallbackIds {
    private final String[] ids;

    Many(String[] ids) {
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
}
