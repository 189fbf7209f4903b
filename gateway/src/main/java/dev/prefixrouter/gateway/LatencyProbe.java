package dev.prefixrouter.gateway;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * Per-request timestamps along the gateway's path, for finding where its added latency goes: off
 * unless the system property {@value #PROPERTY} names a file, and then each request that reaches
 * the end of its body leaves one line there when the JVM exits: the request id, the {@link
 * System#nanoTime()} of each {@link Stage} (0 when not reached), then the id of the thread that
 * reached each stage (so a line tells whether both hops ran on one event loop). {@code nanoTime} is
 * {@code CLOCK_MONOTONIC} on Linux, so the lines line up with timestamps the client and the engine
 * take in other processes on the same machine (the latency tool and the fake engine do, keyed by
 * the {@code X-Request-Id} each sees). The engine gets the gateway's own request id, not the
 * client's: a line {@code # upstream CLIENT_ID UPSTREAM_ID} before the request's line maps one to
 * the other.
 *
 * <p>Cost: when off, a call is a test of a {@code static final} flag that the JIT folds away, and
 * no array is made; when on, one {@code long[]} per request and one line per request held in memory
 * (at most {@value #MAX_LINES} lines; the rest are counted and dropped). Thread-safe.
 */
final class LatencyProbe {
  /** The system property naming the output file; unset: the probe is off. */
  static final String PROPERTY = "prefixrouter.gateway.latency-probe";

  /** Most lines held (about 100 bytes each). */
  static final int MAX_LINES = 1_000_000;

  private static final @Nullable String FILE = System.getProperty(PROPERTY);

  /** Whether the probe records. */
  static final boolean ON = FILE != null && !FILE.isBlank();

  /** Points along one request's path, in the order they are reached. */
  enum Stage {
    /** The routing filter was called (headers read, the route matched). */
    RECEIVED,
    /** The request body was read whole. */
    BODY_READ,
    /** {@code RoutingEngine.route} returned. */
    ROUTED,
    /** {@link BackendUrlFilter} ran (the gateway's filters before its Netty routing filter). */
    URL_SET,
    /** Reactor Netty holds an upstream connection and is about to send the request on it. */
    CONNECTION,
    /** Reactor Netty subscribed to the body of the request to the backend (connection held). */
    UPSTREAM_WRITE,
    /** Reactor Netty has sent the whole request to the backend. */
    REQUEST_SENT,
    /** The backend's response headers reached the response decorator. */
    UPSTREAM_HEADERS,
    /** The response tap saw the first content line. */
    FIRST_CONTENT,
    /** The chunk holding the first content line was handed to the client's connection. */
    FIRST_CONTENT_SENT,
    /** The backend's body ended. */
    END
  }

  private static final int STAGES = Stage.values().length;

  private static final ConcurrentLinkedQueue<String> LINES = new ConcurrentLinkedQueue<>();
  private static final AtomicInteger COUNT = new AtomicInteger();
  private static final AtomicInteger DROPPED = new AtomicInteger();

  static {
    if (ON) {
      Runtime.getRuntime().addShutdownHook(new Thread(LatencyProbe::dump, "latency-probe"));
    }
  }

  /** Exchange attribute holding a request's timestamps while the probe is on. */
  static final String ATTR = LatencyProbe.class.getName();

  private LatencyProbe() {}

  /** A request's timestamps, or null when the probe is off. */
  static long @Nullable [] start() {
    return ON ? new long[2 * Stage.values().length] : null;
  }

  /** Stamps {@code stage} now (first time only); no-op when {@code t} is null. */
  static void mark(long @Nullable [] t, Stage stage) {
    if (ON && t != null && t[stage.ordinal()] == 0) {
      t[stage.ordinal()] = System.nanoTime();
      t[STAGES + stage.ordinal()] = Thread.currentThread().getId();
    }
  }

  /**
   * Records the request's line, keyed by {@code requestId}, and the id the engine got when it
   * differs (once per request: the caller calls it at one place).
   */
  static void record(String requestId, String upstreamRequestId, long @Nullable [] t) {
    if (!ON || t == null) {
      return;
    }
    if (COUNT.incrementAndGet() > MAX_LINES) {
      DROPPED.incrementAndGet();
      return;
    }
    if (!requestId.equals(upstreamRequestId)) {
      LINES.add("# upstream " + requestId + " " + upstreamRequestId);
    }
    StringBuilder b = new StringBuilder(160).append(requestId);
    for (long v : t) {
      b.append(' ').append(v);
    }
    LINES.add(b.toString());
  }

  private static void dump() {
    List<String> out = new ArrayList<>(LINES.size() + 2);
    StringBuilder head = new StringBuilder("# request_id");
    for (Stage s : Stage.values()) {
      head.append(' ').append(s.name().toLowerCase(java.util.Locale.ROOT));
    }
    for (Stage s : Stage.values()) {
      head.append(" thread_").append(s.name().toLowerCase(java.util.Locale.ROOT));
    }
    out.add(head.toString());
    out.add("# dropped " + DROPPED.get());
    out.addAll(LINES);
    try {
      Files.write(Path.of(FILE), out, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
