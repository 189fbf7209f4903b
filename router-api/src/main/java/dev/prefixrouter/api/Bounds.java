package dev.prefixrouter.api;

import java.time.Duration;

/**
 * Bounds the engine applies to what it echoes of its input, and saturating time arithmetic, so that
 * no input makes a message unbounded or a computation overflow.
 */
final class Bounds {
  private Bounds() {}

  /** Longest echo of a model name, id or tenant in a message or log line, in chars. */
  static final int MAX_ECHO_CHARS = 128;

  /**
   * {@code s} as it appears in a message: control and format chars (Unicode Cc, Cf) and line or
   * paragraph separators written as {@code \\uXXXX}, and anything past {@link #MAX_ECHO_CHARS}
   * replaced by {@code …(N chars)} with N the full length.
   */
  static String echo(String s) {
    int n = Math.min(s.length(), MAX_ECHO_CHARS);
    boolean plain = s.length() <= MAX_ECHO_CHARS;
    for (int i = 0; i < n && plain; i++) {
      plain = !unsafe(s.charAt(i));
    }
    if (plain) {
      return s;
    }
    StringBuilder sb = new StringBuilder(n + 24);
    for (int i = 0; i < n; i++) {
      char c = s.charAt(i);
      if (unsafe(c)) {
        sb.append(String.format("\\u%04x", (int) c));
      } else {
        sb.append(c);
      }
    }
    if (s.length() > n) {
      sb.append("…(").append(s.length()).append(" chars)");
    }
    return sb.toString();
  }

  /** Whether a char must not appear raw in a message or log line. */
  static boolean unsafe(char c) {
    int type = Character.getType(c);
    return type == Character.CONTROL
        || type == Character.FORMAT
        || type == Character.LINE_SEPARATOR
        || type == Character.PARAGRAPH_SEPARATOR;
  }

  /** {@code d} in nanoseconds, {@link Long#MAX_VALUE} when it does not fit (d is not negative). */
  static long saturatedNanos(Duration d) {
    return d.compareTo(MAX_NANOS) >= 0 ? Long.MAX_VALUE : d.toNanos();
  }

  private static final Duration MAX_NANOS = Duration.ofNanos(Long.MAX_VALUE);

  /** {@code a - b}, clamped to the range of {@code long}. */
  static long saturatedMinus(long a, long b) {
    long r = a - b;
    // overflow iff the operands have different signs and the result's sign differs from a's
    if (((a ^ b) & (a ^ r)) < 0) {
      return a < 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
    }
    return r;
  }
}
