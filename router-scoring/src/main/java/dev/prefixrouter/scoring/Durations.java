package dev.prefixrouter.scoring;

import java.time.Duration;
import java.util.Objects;

/** Validation of builder durations: bounds compared as {@link Duration}s, so nothing overflows. */
final class Durations {
  private Durations() {}

  /**
   * Returns {@code d} if it is in {@code (0, max]}.
   *
   * @throws IllegalArgumentException naming {@code field}, the bound and the value otherwise
   * @throws NullPointerException naming {@code field} if {@code d} is null
   */
  static Duration positiveAtMost(String field, Duration d, Duration max) {
    Objects.requireNonNull(d, field);
    if (d.isNegative() || d.isZero() || d.compareTo(max) > 0) {
      throw new IllegalArgumentException(field + " must be in (0, " + max + "], was " + d);
    }
    return d;
  }
}
