package dev.prefixrouter.gateway;

import java.util.concurrent.ThreadLocalRandom;
import org.jspecify.annotations.Nullable;

/**
 * W3C trace context, as far as the gateway needs it: the trace id of an incoming {@code
 * traceparent} (or a new one), and a {@code traceparent} for the hop to the backend with a new span
 * id, so the gateway's log line and the engine's share one trace id. Stateless.
 */
final class Trace {
  static final String TRACEPARENT = "traceparent";

  private Trace() {}

  /** The 32-hex-digit trace id of a valid {@code traceparent}, else a new random one. */
  static String traceId(@Nullable String traceparent) {
    if (traceparent != null
        && traceparent.length() >= 55
        && traceparent.charAt(2) == '-'
        && traceparent.charAt(35) == '-') {
      String id = traceparent.substring(3, 35);
      if (isLowerHex(id) && !id.equals("00000000000000000000000000000000")) {
        return id;
      }
    }
    ThreadLocalRandom r = ThreadLocalRandom.current();
    return hex(r.nextLong()) + hex(r.nextLong() | 1);
  }

  /** A {@code traceparent} (version 00, sampled) for the next hop, with a new span id. */
  static String traceparent(String traceId) {
    return "00-" + traceId + "-" + hex(ThreadLocalRandom.current().nextLong() | 1) + "-01";
  }

  static String hex(long v) {
    String s = Long.toHexString(v);
    return "0".repeat(16 - s.length()) + s;
  }

  private static boolean isLowerHex(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
        return false;
      }
    }
    return true;
  }
}
