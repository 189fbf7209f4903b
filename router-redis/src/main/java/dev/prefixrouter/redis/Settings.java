package dev.prefixrouter.redis;

import java.time.Duration;
import java.util.Objects;

/**
 * The checks the builders of this module share; messages name the setting, its range, the value.
 */
final class Settings {
  /** Timeout of one Redis command: [1 ms, 10 s]. */
  static final Duration MIN_COMMAND_TIMEOUT = Duration.ofMillis(1);

  static final Duration MAX_COMMAND_TIMEOUT = Duration.ofSeconds(10);

  private Settings() {}

  /** A key prefix of 1 to 128 characters. */
  static String keyPrefix(String prefix) {
    Objects.requireNonNull(prefix, "keyPrefix");
    if (prefix.isEmpty() || prefix.length() > 128) {
      throw new IllegalArgumentException(
          "keyPrefix must be 1 to 128 characters, was " + prefix.length());
    }
    return prefix;
  }

  /** A replica id of 1 to 256 characters. */
  static String replicaId(String id) {
    Objects.requireNonNull(id, "replicaId");
    if (id.isEmpty() || id.length() > 256) {
      throw new IllegalArgumentException(
          "replicaId must be 1 to 256 characters, was " + id.length());
    }
    return id;
  }

  /** A command timeout in [1 ms, 10 s]. */
  static Duration commandTimeout(Duration timeout) {
    return within(
        timeout, "commandTimeout", MIN_COMMAND_TIMEOUT, MAX_COMMAND_TIMEOUT, "1 ms, 10 s");
  }

  /** A retry interval while Redis is down, in [10 ms, 1 min]. */
  static Duration retryInterval(Duration interval) {
    return within(
        interval, "retryInterval", Duration.ofMillis(10), Duration.ofMinutes(1), "10 ms, 1 min");
  }

  /**
   * {@code d} if it is in {@code [min, max]}.
   *
   * @param range the bounds as the message shows them, e.g. {@code "1 ms, 10 s"}
   */
  static Duration within(Duration d, String name, Duration min, Duration max, String range) {
    Objects.requireNonNull(d, name);
    if (d.compareTo(min) < 0 || d.compareTo(max) > 0) {
      throw new IllegalArgumentException(name + " must be in [" + range + "], was " + d);
    }
    return d;
  }
}
