package dev.prefixrouter.vllm;

import java.time.Duration;
import java.util.Objects;

/** Range checks of builder durations. */
final class Durations {
  private Durations() {}

  /**
   * Returns {@code d} if it lies in {@code [minMillis, maxMillis]} ms.
   *
   * @throws IllegalArgumentException naming {@code field} and the range otherwise
   */
  static Duration within(String field, Duration d, long minMillis, long maxMillis) {
    Objects.requireNonNull(d, field);
    if (d.compareTo(Duration.ofMillis(minMillis)) < 0
        || d.compareTo(Duration.ofMillis(maxMillis)) > 0) {
      throw new IllegalArgumentException(
          field + " must be in [" + minMillis + " ms, " + maxMillis + " ms], was " + d);
    }
    return d;
  }
}
