package dev.prefixrouter.vllm;

import dev.prefixrouter.api.AllBlocksCleared;
import dev.prefixrouter.api.KvEvent;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * Subscribes to the KV-cache events of vLLM and SGLang engines over ZMQ and applies them to a
 * routing engine ({@code engine::applyKvEvents}), so that the prefix index knows what each engine
 * really holds.
 *
 * <pre>{@code
 * KvEventSubscriber events = KvEventSubscriber.builder(engine::applyKvEvents).build();
 * events.subscribe("b0", "tcp://10.0.0.5:5557", "tcp://10.0.0.5:5558"); // PUB, replay ROUTER
 * // ... events.close() on shutdown
 * }</pre>
 *
 * <p><b>Wire.</b> One SUB socket per subscribed endpoint (a data-parallel engine publishes rank
 * {@code r} on port {@code 5557 + r}: subscribe each rank's endpoint under the same backend id),
 * filtered by the topic; each message is {@code [topic, seq (8 bytes, big-endian), payload]},
 * decoded by {@link KvEventDecoder}. Messages of another shape are dropped and counted.
 *
 * <p><b>Sequence.</b> Per endpoint: the first message is taken as is (after a best-effort replay of
 * what the engine still buffers before it); a gap ({@code seq > last + 1}) asks the engine's replay
 * socket (a DEALER connected to its ROUTER: {@code ["", first missing seq]}, answered by {@code
 * (seq, payload)} frames, with or without a topic frame, until seq {@code -1}) for the missing
 * batches. The DEALER is connected when the endpoint is subscribed and reused while replays end at
 * their terminator, so a replay costs one round trip. If the replay cannot fill the gap (no replay
 * endpoint, timeout, the batches have left the engine's buffer) or a batch cannot be decoded, the
 * backend's confirmed state is unknown: an {@link AllBlocksCleared} is applied for it, so the index
 * drops what it believed and falls back to predictions, instead of trusting entries whose removal
 * may have been lost. A live seq at or below the last live seq means the engine restarted (its
 * cache is empty and its hash seed may be new): cleared the same way. So does, after the connection
 * was lost (the socket monitor's {@code EVENT_DISCONNECTED}, or a SUB socket replaced as silent or
 * stalled), a first seq other than the next one: a restarted engine may have published past the
 * last seq seen before the SUB socket reconnected, and its seq then looks like a gap, whose replay
 * would "succeed" against the new process's buffer and keep the old process's blocks. After a
 * restart the engine's buffer is replayed from seq 0, best effort (an engine that did not restart,
 * only lost the connection, then has its blocks cleared and rebuilt from what it still buffers).
 *
 * <p><b>Threads and bounds.</b> One I/O thread polls every socket (replays run on it, each bounded
 * by the replay timeout, during which other endpoints wait and buffer in ZMQ), decodes each batch
 * and applies it to the sink itself (the default, {@link Builder#applyOnIoThread}). Each endpoint's
 * backlog then waits in its own SUB socket, bounded at {@link Builder#queueCapacity} messages (the
 * socket's receive high-water mark); beyond it JeroMQ stops reading the connection and the engine
 * drops messages at its own high-water mark, which shows as a gap and is replayed, so nothing is
 * dropped silently and memory stays bounded. With {@code applyOnIoThread(false)} a second thread
 * applies, from one hand-off queue of at most {@code queueCapacity} batches; when it is full the
 * I/O thread waits and the backlog stays in ZMQ as above. Payloads above {@code maxMessageBytes}
 * are refused by ZMQ. Reconnection is ZMQ's, with exponential backoff between the builder's two
 * intervals.
 *
 * <p><b>Connects.</b> A connect looks the engine's host up, which takes as long as the resolver
 * takes (its timeouts, when it is slow or a name is gone from DNS), so connects run on connect
 * threads, at most {@value #CONNECT_THREADS}, started on need and ended after a minute idle. The
 * I/O thread never waits for a SUB socket's connect: the socket is polled once connected (or once
 * its connect has failed: retried as below). A replay waits for its DEALER's connect within the
 * replay's own bound. An endpoint has at most one SUB and one replay connect in flight, so hosts
 * that resolve slowly delay the connects of other endpoints only when they take every connect
 * thread, and never the streams of endpoints already connected. Not bounded here: JeroMQ looks a
 * host up again on its own I/O thread (one for all of the subscriber's sockets) when it reconnects
 * a socket whose connect succeeded, until the socket is replaced (see below).
 *
 * <p><b>Stalled connections.</b> JeroMQ (0.6.0) leaves a fresh TCP connection now and then with
 * neither side ever completing the ZMTP greeting (measured on loopback on a loaded 2-core host: 1-6
 * % of fresh connects, in runs of 300; its own handshake interval does not end it), and such a SUB
 * socket receives nothing, ever. Each SUB socket is therefore watched through a ZMQ socket monitor:
 * one that has not completed the greeting within {@link Builder#handshakeTimeout} of being opened
 * (or of losing its connection) is replaced by a new one ({@link
 * KvEventStats.Snapshot#handshakeReconnects}). An engine that stays unreachable (down, or a host
 * name that does not resolve: logged once) is retried the same way, each deadline twice the last up
 * to four times the reconnect backoff's maximum, beside ZMQ's own backoff; the deadline is back at
 * the timeout after the next greeting. A stall after the greeting (not seen in those measurements)
 * is left to {@link Builder#idleReconnect}: a stream silent that long is replaced as well. Sockets:
 * four per endpoint (SUB, the monitor's two PAIRs, the replay DEALER), at most {@value
 * #MAX_SOCKETS} in all.
 *
 * <p><b>Failures of the I/O thread.</b> A socket that cannot be created (out of file descriptors,
 * JeroMQ's socket cap) fails that endpoint alone: it is counted ({@link
 * KvEventStats.Snapshot#ioFailures}), logged once until it recovers, and retried with backoff (from
 * the reconnect backoff's minimum, doubling up to the handshake deadline's maximum); a replay
 * without its socket fails like one without an answer. Any other failed step is counted, logged at
 * most once a minute and retried after a poll interval. The I/O thread runs until {@link #close},
 * which waits up to a second for connects in progress and closes every socket even when closing one
 * of them throws.
 *
 * <p><b>Lag</b> (an engine's send to the sink's return for that batch). On the subscriber's side a
 * batch costs JeroMQ's receive (its I/O thread, then this I/O thread through the poller: two thread
 * wake-ups, the least JeroMQ allows), the decode (allocating the events and little else, see {@link
 * KvEventDecoder}) and the sink (plus a third wake-up, the apply thread's, with {@code
 * applyOnIoThread(false)}). Batches of one endpoint are applied in order, so a gap's replay round
 * trip delays the batches behind it. Nothing bounds the lag when the host gives these threads less
 * CPU than the stream needs: batches then wait in ZMQ and in the queue (bounded as above) and drain
 * later. {@link KvEventStats.Snapshot#lastLagMillis} reports the age of the last applied batch from
 * the engine's {@code ts} (across hosts, as good as their clocks' sync). Measured figures: {@code
 * benchmarks/README.md}, "KV events over the wire" and "KV-event lag".
 *
 * <p>Never throws into routing: the sink runs on the subscriber's I/O thread (or its apply thread,
 * see {@link Builder#applyOnIoThread}), and its exceptions are counted and logged. {@link
 * #subscribe} and {@link #unsubscribe} are thread-safe and take effect on the I/O thread within one
 * poll interval. {@link #close} stops the subscriber's threads and closes every socket. Nothing
 * starts before {@link Builder#build()}.
 */
public final class KvEventSubscriber implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(KvEventSubscriber.class);
  private static final long END_OF_REPLAY = -1L;
  private static final int POLL_MILLIS = 100;

  /**
   * JeroMQ sockets of this subscriber's context at most: four per endpoint (SUB, its monitor's two
   * PAIRs, the replay DEALER), so about 4,000 endpoints (JeroMQ's default is 1,024 sockets).
   */
  static final int MAX_SOCKETS = 16_384;

  /** Connect threads at most (see the class comment, "Connects"). */
  static final int CONNECT_THREADS = 8;

  /** A new replay connection gets at least this long for its first answer. */
  private static final long MIN_REPLAY_RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  /** Numbers the socket monitors' inproc addresses (unique within the process). */
  private static final AtomicLong MONITORS = new AtomicLong();

  /** Makes the subscriber's sockets; a hook for tests (socket creation failing). */
  @FunctionalInterface
  interface SocketFactory {
    ZMQ.Socket create(ZContext context, SocketType type);
  }

  /**
   * Looks up the host of an address about to be connected, on a connect thread (JeroMQ's connect
   * then finds it in the JVM's address cache); a hook for tests (a slow resolver). Never throws: a
   * host that does not resolve is left to the connect, which fails for it.
   */
  @FunctionalInterface
  interface HostResolver {
    void resolve(String address);
  }

  /** Where decoded batches go; {@code RoutingEngine::applyKvEvents} fits. */
  @FunctionalInterface
  public interface Sink {
    /** Applies one backend's batch in order; false if the backend is unknown (not an error). */
    boolean apply(String backendId, List<KvEvent> batch);
  }

  private final Sink sink;
  private final byte[] topic;
  private final long replayTimeoutMillis;
  private final long maxMessageBytes;
  private final Duration reconnectMin;
  private final Duration reconnectMax;
  private final long idleReconnectNanos;
  private final long handshakeTimeoutNanos;
  private final long maxStallTimeoutNanos;
  private long nextHandshakeCheck = System.nanoTime(); // I/O thread only
  private long lastIoWarn = Long.MIN_VALUE; // I/O thread only
  private final SocketFactory sockets;
  private final HostResolver resolver;
  private final BlockingQueue<Work> queue; // unused when applying on the I/O thread
  private final int receiveHighWaterMark; // per SUB socket; 0 = JeroMQ's default
  private final ConcurrentLinkedQueue<Runnable> commands = new ConcurrentLinkedQueue<>();
  private final KvEventStats stats = new KvEventStats();
  private final ZContext context = new ZContext(1);
  private final Map<String, Endpoint> endpoints = new LinkedHashMap<>(); // I/O thread only
  // endpoint -> the backend it is subscribed for, as the callers see it (before the I/O thread)
  private final Map<String, String> owners = new HashMap<>(); // guarded by itself
  // backend -> its subscription's generation, from subscribe to unsubscribe (written under owners)
  private final Map<String, Long> generations = new ConcurrentHashMap<>();
  private long nextGeneration; // guarded by owners
  private final ThreadPoolExecutor connects;
  private final Thread io;
  private final @Nullable Thread applier; // null when batches are applied on the I/O thread
  private volatile boolean closed;

  /** One backend's batch on its way to the sink. */
  private record Work(String backendId, long generation, List<KvEvent> events, double timestamp) {}

  private KvEventSubscriber(Builder b) {
    this.sink = b.sink;
    this.topic = b.topic.getBytes(StandardCharsets.UTF_8);
    this.replayTimeoutMillis = b.replayTimeout.toMillis();
    this.maxMessageBytes = b.maxMessageBytes;
    this.reconnectMin = b.reconnectMin;
    this.reconnectMax = b.reconnectMax;
    this.idleReconnectNanos = b.idleReconnect.toNanos();
    this.handshakeTimeoutNanos = b.handshakeTimeout.toNanos();
    this.maxStallTimeoutNanos = Math.max(handshakeTimeoutNanos, 4 * reconnectMax.toNanos());
    this.sockets = b.sockets;
    this.resolver = b.resolver;
    context.getContext().setMaxSockets(MAX_SOCKETS);
    this.queue = new ArrayBlockingQueue<>(b.applyOnIoThread ? 1 : b.queueCapacity);
    this.receiveHighWaterMark = b.applyOnIoThread ? b.queueCapacity : 0;
    this.connects =
        new ThreadPoolExecutor(
            CONNECT_THREADS,
            CONNECT_THREADS,
            1,
            TimeUnit.MINUTES,
            new LinkedBlockingQueue<>(),
            r -> {
              Thread t = new Thread(r, "prefix-router-kv-events-connect");
              t.setDaemon(true);
              return t;
            });
    connects.allowCoreThreadTimeOut(true);
    this.io = new Thread(this::ioLoop, "prefix-router-kv-events-io");
    this.applier =
        b.applyOnIoThread ? null : new Thread(this::applyLoop, "prefix-router-kv-events-apply");
    io.setDaemon(true);
    io.start();
    if (applier != null) {
      applier.setDaemon(true);
      applier.start();
    }
  }

  public static Builder builder(Sink sink) {
    return new Builder(sink);
  }

  /**
   * Subscribes to one engine endpoint for a backend. A backend may have several endpoints (one per
   * data-parallel rank); subscribing an endpoint again for the same backend (without an {@link
   * #unsubscribe} between) replaces its replay endpoint and nothing else: its socket and sequence
   * state stay, so nothing the engine still buffers is replayed and applied a second time.
   *
   * <p>An endpoint belongs to one backend at a time: one engine's stream describes one engine's
   * cache. Subscribing an endpoint that is subscribed for another backend is refused; {@link
   * #unsubscribe} that backend first (the endpoint is free again as soon as {@code unsubscribe}
   * returns). Endpoints are compared as strings: {@code tcp://localhost:5557} and {@code
   * tcp://127.0.0.1:5557} are different endpoints to this check.
   *
   * @param endpoint the engine's PUB address, e.g. {@code tcp://10.0.0.5:5557}
   * @param replayEndpoint the engine's replay ROUTER address, or null if it has none (gaps then
   *     always mark the backend unknown)
   * @throws IllegalArgumentException if an address is not one, or if {@code endpoint} is subscribed
   *     for another backend
   * @throws IllegalStateException if the subscriber is closed
   */
  public void subscribe(String backendId, String endpoint, @Nullable String replayEndpoint) {
    Objects.requireNonNull(backendId, "backendId");
    Objects.requireNonNull(endpoint, "endpoint");
    checkEndpoint(endpoint, "endpoint");
    if (replayEndpoint != null) {
      checkEndpoint(replayEndpoint, "replayEndpoint");
    }
    synchronized (owners) {
      if (closed) {
        throw new IllegalStateException("the subscriber is closed");
      }
      String owner = owners.get(endpoint);
      if (owner != null && !owner.equals(backendId)) {
        throw new IllegalArgumentException(
            "endpoint '"
                + shorten(endpoint)
                + "' is already subscribed for backend '"
                + shorten(owner)
                + "', not subscribed for '"
                + shorten(backendId)
                + "': one engine's events describe one backend (unsubscribe the other first)");
      }
      owners.put(endpoint, backendId);
      long generation = generations.computeIfAbsent(backendId, k -> ++nextGeneration);
      commands.add(
          () -> {
            Endpoint old = endpoints.get(endpoint);
            if (old != null && old.backendId.equals(backendId) && old.generation == generation) {
              old.replayEndpoint(replayEndpoint); // the same subscription: its seq state stays
              return;
            }
            endpoints.remove(endpoint);
            if (old != null) {
              old.close();
            }
            endpoints.put(endpoint, new Endpoint(backendId, generation, endpoint, replayEndpoint));
          });
    }
  }

  /**
   * Closes every endpoint of a backend (e.g. when it leaves the fleet). Batches of these endpoints
   * not yet applied when this returns (read, queued for the apply thread) are dropped: a backend
   * removed and added again (another server behind the id) gets none of the old server's batches
   * once this returns, even before the I/O thread closes the sockets ({@link
   * KvEventSubscriber.Sink#apply} calls already running finish).
   */
  public void unsubscribe(String backendId) {
    Objects.requireNonNull(backendId, "backendId");
    synchronized (owners) {
      owners.values().removeIf(backendId::equals);
      generations.remove(backendId); // batches already read from its endpoints are dropped
      commands.add(
          () ->
              endpoints
                  .values()
                  .removeIf(
                      e -> {
                        if (e.backendId.equals(backendId)) {
                          e.close();
                          return true;
                        }
                        return false;
                      }));
    }
  }

  /** A snapshot of the counters. */
  public KvEventStats.Snapshot stats() {
    return stats.snapshot(queue.size());
  }

  @Override
  public void close() {
    closed = true;
    try {
      io.join(replayTimeoutMillis + 2_000);
      if (applier != null) {
        applier.join(2_000);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static void checkEndpoint(String endpoint, String field) {
    if (!endpoint.startsWith("tcp://")
        && !endpoint.startsWith("ipc://")
        && !endpoint.startsWith("inproc://")) {
      throw new IllegalArgumentException(
          field + " must start with tcp://, ipc:// or inproc://, was '" + shorten(endpoint) + "'");
    }
    if (endpoint.startsWith("tcp://")) {
      int colon = endpoint.lastIndexOf(':');
      int port = -1;
      if (colon > "tcp://".length()) {
        try {
          port = Integer.parseInt(endpoint.substring(colon + 1));
        } catch (NumberFormatException e) {
          port = -1;
        }
      }
      if (port < 1 || port > 65535) {
        throw new IllegalArgumentException(
            field + " must end in :PORT (1..65535), was '" + shorten(endpoint) + "'");
      }
    }
  }

  /**
   * Looks up the host of a {@code tcp://} address ({@code tcp://host:port}, {@code
   * tcp://[v6]:port}, {@code tcp://source;host:port}); other transports have none. A host that does
   * not resolve is left to the connect.
   */
  static void lookUp(String address) {
    String host = tcpHost(address);
    if (host == null) {
      return;
    }
    try {
      InetAddress.getAllByName(host);
    } catch (UnknownHostException | RuntimeException e) {
      // the connect fails for it and says so
    }
  }

  /** The host of a {@code tcp://} address, without brackets; null if it has none to look up. */
  static @Nullable String tcpHost(String address) {
    if (!address.startsWith("tcp://")) {
      return null;
    }
    String rest = address.substring("tcp://".length());
    rest = rest.substring(rest.lastIndexOf(';') + 1);
    int colon = rest.lastIndexOf(':');
    if (colon < 1) {
      return null;
    }
    String host = rest.substring(0, colon);
    if (host.length() > 1 && host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    return host.isEmpty() || host.equals("*") ? null : host;
  }

  private static String shorten(String s) {
    return s.length() <= 64 ? s : s.substring(0, 64) + "... (" + s.length() + " chars)";
  }

  // ---------------------------------------------------------------- I/O thread

  private void ioLoop() {
    ZMQ.Poller poller = null;
    List<Endpoint> polled = List.of();
    try {
      while (!closed) {
        try {
          boolean changed = false;
          Runnable c;
          while ((c = commands.poll()) != null) {
            changed = true;
            c.run(); // never throws: an endpoint that cannot get its sockets retries them
          }
          if (retrySockets()) {
            changed = true;
          }
          if (changed || poller == null) {
            if (poller != null) {
              poller.close();
              poller = null;
            }
            polled = new ArrayList<>(endpoints.size());
            for (Endpoint e : endpoints.values()) {
              if (e.sub != null) {
                polled.add(e);
              }
            }
            stats.endpoints(endpoints.size());
            if (!polled.isEmpty()) {
              poller = context.createPoller(polled.size());
              for (Endpoint e : polled) {
                poller.register(e.sub, ZMQ.Poller.POLLIN);
              }
            }
          }
          if (poller == null) {
            waitForCommands();
            continue;
          }
          poller.poll(POLL_MILLIS);
          for (int i = 0; i < polled.size(); i++) {
            if (poller.pollin(i)) {
              drain(polled.get(i));
            }
          }
          if (reopenSilent(polled) | reopenStalled(polled)) {
            poller.close();
            poller = null; // rebuilt with the new sockets
          }
        } catch (RuntimeException e) {
          // e.g. the poller's selector could not be opened (out of file descriptors): every
          // endpoint waits and the step is tried again; the thread goes on
          stats.ioFailures.increment();
          long now = System.nanoTime();
          if (lastIoWarn == Long.MIN_VALUE || now - lastIoWarn > TimeUnit.MINUTES.toNanos(1)) {
            lastIoWarn = now;
            log.error("KV-event I/O thread: a step failed; retrying", e);
          }
          if (poller != null) {
            quietly(poller::close);
            poller = null;
          }
          waitForCommands();
        }
      }
    } finally {
      if (poller != null) {
        quietly(poller::close);
      }
      endpoints.values().forEach(e -> quietly(e::close));
      endpoints.clear();
      awaitConnects();
      quietly(context::close);
    }
  }

  /**
   * Stops the connect threads, waiting up to a second for them, so that closing the context closes
   * no socket under a connect. Every endpoint is closed by then: a connect not begun never begins,
   * so the wait is for lookups in progress (not interrupted: an interrupt inside JeroMQ's connect
   * could close its context's signalling channels).
   */
  private void awaitConnects() {
    connects.shutdown();
    try {
      connects.awaitTermination(1, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * {@code e.toString()}, or its class and message when that throws (JeroMQ's {@code
   * ZMQException.toString()} throws for an error code its enum does not know, e.g. an errno).
   */
  private static String describe(RuntimeException e) {
    try {
      return e.toString();
    } catch (RuntimeException x) {
      return e.getClass().getName() + ": " + e.getMessage();
    }
  }

  /** Runs {@code r}, logging what it throws (closing what may already be broken). */
  private static void quietly(Runnable r) {
    try {
      r.run();
    } catch (RuntimeException e) {
      log.debug("KV events: closing failed", e);
    }
  }

  /**
   * Opens the SUB sockets of endpoints that could not get one, whose retry time has come; true if
   * any did.
   */
  private boolean retrySockets() {
    long now = System.nanoTime();
    boolean any = false;
    for (Endpoint e : endpoints.values()) {
      if (e.sub == null && e.subConnect == null && now - e.retryAt >= 0 && e.tryOpenSub(now)) {
        any = true;
      }
    }
    return any;
  }

  private boolean reopenSilent(List<Endpoint> polled) {
    long now = System.nanoTime();
    boolean any = false;
    for (Endpoint e : polled) {
      if (now - e.lastHeard > idleReconnectNanos) {
        e.reopen(false);
        stats.idleReconnects.increment();
        any = true;
      }
    }
    return any;
  }

  /**
   * Reads the endpoints' socket monitors (at most once per poll interval) and replaces a SUB socket
   * that has not completed a handshake in time; true if any was replaced.
   */
  private boolean reopenStalled(List<Endpoint> polled) {
    long now = System.nanoTime();
    if (now - nextHandshakeCheck < 0) {
      return false;
    }
    nextHandshakeCheck = now + TimeUnit.MILLISECONDS.toNanos(POLL_MILLIS);
    boolean any = false;
    for (Endpoint e : polled) {
      if (e.stalled(now)) {
        // counted first: a reader that sees the new connection also sees it counted
        stats.handshakeReconnects.increment();
        e.reopen(true);
        any = true;
      }
    }
    return any;
  }

  private void waitForCommands() {
    try {
      Thread.sleep(POLL_MILLIS); // nothing to poll; commands are checked every interval
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      closed = true;
    }
  }

  /** Reads what one socket has, at most 1024 messages, so that other sockets get their turn. */
  private void drain(Endpoint e) {
    if (e.sub == null) {
      return; // lost its socket in this round (a reopen that failed): retried
    }
    e.readMonitor(System.nanoTime());
    for (int n = 0; n < 1024 && !closed; n++) {
      List<byte[]> frames = receive(e.sub, ZMQ.DONTWAIT);
      if (frames == null) {
        return;
      }
      onMessage(e, frames);
    }
  }

  /** One multipart message, or null if none is waiting. At most 8 frames are kept. */
  private static @Nullable List<byte[]> receive(ZMQ.Socket s, int flags) {
    byte[] first = s.recv(flags);
    if (first == null) {
      return null;
    }
    List<byte[]> frames = new ArrayList<>(4);
    frames.add(first);
    while (s.hasReceiveMore()) {
      byte[] f = s.recv(0);
      if (frames.size() < 8) {
        frames.add(f);
      }
    }
    return frames;
  }

  private void onMessage(Endpoint e, List<byte[]> frames) {
    stats.messages.increment();
    e.lastHeard = System.nanoTime();
    if (frames.size() != 3 || frames.get(1).length != 8) {
      stats.garbageMessages.increment();
      return;
    }
    long seq = ByteBuffer.wrap(frames.get(1)).getLong();
    byte[] payload = frames.get(2);
    boolean reconnected = e.reconnected;
    e.reconnected = false;
    if (e.lastLive != Long.MIN_VALUE
        && (Long.compareUnsigned(seq, e.lastLive) <= 0 || (reconnected && seq != e.last + 1))) {
      stats.restarts.increment();
      log.info(
          "KV events of backend {} at {} restarted at seq {} (was {}): its cached blocks are"
              + " dropped",
          e.backendId,
          e.endpoint,
          Long.toUnsignedString(seq),
          Long.toUnsignedString(e.lastLive));
      markUnknown(e);
      e.last = seq - 1;
      if (seq > 0 && e.replayEndpoint != null) {
        replay(e, 0, seq - 1, false); // the new process's first batches, if the SUB missed them
      }
    } else if (e.last == Long.MIN_VALUE) {
      e.last = seq - 1; // joined: history before this seq is best effort
      if (seq > 0 && e.replayEndpoint != null) {
        replay(e, 0, seq - 1, false);
      }
    } else if (seq > e.last + 1) {
      stats.gaps.increment();
      if (!replay(e, e.last + 1, seq - 1, true)) {
        markUnknown(e);
      }
      e.last = seq - 1;
    } else if (seq <= e.last) {
      stats.duplicates.increment(); // already delivered by a replay
      e.lastLive = seq;
      return;
    }
    e.lastLive = seq;
    accept(e, seq, payload);
  }

  /** Decodes and queues one batch; an undecodable batch makes the backend unknown. */
  private void accept(Endpoint e, long seq, byte[] payload) {
    e.last = seq;
    KvEventDecoder.Batch batch;
    try {
      batch = KvEventDecoder.decode(payload, e.groups);
    } catch (KvEventDecoder.DecodeException x) {
      stats.decodeErrors.increment();
      log.warn(
          "KV-event batch {} of backend {} cannot be decoded ({}): its cached blocks are dropped",
          Long.toUnsignedString(seq),
          e.backendId,
          x.getMessage());
      markUnknown(e);
      return;
    }
    stats.count(batch);
    if (!batch.events().isEmpty()) {
      hand(new Work(e.backendId, e.generation, batch.events(), batch.timestamp()));
    }
  }

  private void markUnknown(Endpoint e) {
    stats.markedUnknown.increment();
    hand(new Work(e.backendId, e.generation, List.of(AllBlocksCleared.INSTANCE), 0));
  }

  /** Waits for room in the queue (the backlog stays in ZMQ meanwhile); gives up on close. */
  private void hand(Work w) {
    if (applier == null) {
      apply(w);
      return;
    }
    try {
      while (!closed) {
        if (queue.offer(w, POLL_MILLIS, TimeUnit.MILLISECONDS)) {
          return;
        }
        stats.queueFullWaits.increment();
      }
    } catch (InterruptedException x) {
      Thread.currentThread().interrupt();
      closed = true;
    }
  }

  /**
   * Asks the engine for batches {@code from..until} and applies them. Returns whether all of them
   * arrived. Answers above {@code until} are left to the live stream. A replay that is not {@code
   * strict} (catching up after a join or a restart) starts wherever the engine's buffer starts and
   * counts no failure.
   */
  private boolean replay(Endpoint e, long from, long until, boolean strict) {
    boolean counted = strict;
    if (e.replayEndpoint == null) {
      if (counted) {
        stats.replayFailures.increment();
      }
      return false;
    }
    stats.replays.increment();
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(replayTimeoutMillis);
    long expect = from;
    // a connect still in progress (a slow host lookup) gets half the replay's time
    ZMQ.Socket d =
        e.replaySocket(deadline - TimeUnit.MILLISECONDS.toNanos(replayTimeoutMillis / 2));
    if (d == null) {
      if (counted) {
        stats.replayFailures.increment();
      }
      // no socket now (counted in ioFailures), or its connect is still in progress: the next
      // replay tries again
      return false;
    }
    // until the first answer, a new connection each time half the remaining time passes silent
    long firstAnswerBy = halfwayTo(deadline);
    // false: no connection to queue the request on (the address did not resolve): the replay
    // fails at once, and the next one connects again
    boolean sent = sendRequest(d, from);
    boolean answered = false;
    boolean clean = false; // ended at the terminator: nothing of this replay left in flight
    try {
      while (sent && !closed) {
        long until0 = answered ? deadline : Math.min(deadline, firstAnswerBy);
        long left = TimeUnit.NANOSECONDS.toMillis(until0 - System.nanoTime());
        List<byte[]> frames = null;
        if (left > 0) {
          d.setReceiveTimeOut((int) Math.min(left, Integer.MAX_VALUE));
          frames = receive(d, 0);
        }
        if (frames == null) {
          long remaining = deadline - System.nanoTime();
          if (answered || remaining < 2 * MIN_REPLAY_RETRY_NANOS) {
            break; // timed out
          }
          // no answer at all (a connection JeroMQ left stalled, or a slow engine): ask again on a
          // new connection, which gets half of what remains before the next one
          stats.replayRetries.increment();
          e.dropReplaySocket();
          d = e.replaySocket(halfwayTo(deadline));
          if (d == null || !sendRequest(d, from)) {
            break; // the new connection has nowhere to queue it either
          }
          firstAnswerBy = halfwayTo(deadline);
          continue;
        }
        answered = true;
        int n = frames.size();
        if (n < 2 || frames.get(n - 2).length != 8) {
          stats.garbageMessages.increment();
          break;
        }
        long seq = ByteBuffer.wrap(frames.get(n - 2)).getLong();
        if (seq == END_OF_REPLAY) {
          clean = true;
          break;
        }
        if (seq < expect) {
          continue;
        }
        if (!strict && expect == from && seq <= until) {
          expect = seq; // best effort: the buffer starts later
        }
        if (seq > until && expect > until) {
          continue; // complete: the rest is the live stream's; read on to the terminator
        }
        if (seq > expect || seq > until) {
          break; // evicted from the engine's buffer
        }
        stats.replayedBatches.increment();
        accept(e, seq, frames.get(n - 1));
        expect = seq + 1;
      }
    } finally {
      if (!clean) {
        e.dropReplaySocket(); // answers may still arrive: they must not reach the next replay
      }
    }
    boolean complete = expect > until;
    if (!complete && counted) {
      stats.replayFailures.increment();
      log.warn(
          "KV-event replay of backend {} from {} got up to {} of {}: its cached blocks are"
              + " dropped",
          e.backendId,
          from,
          expect - 1,
          until);
    }
    return complete;
  }

  /** The {@link System#nanoTime()} halfway from now to {@code deadline}. */
  private static long halfwayTo(long deadline) {
    long now = System.nanoTime();
    return now + (deadline - now) / 2;
  }

  /**
   * Queues a replay request without waiting: false if the socket has no connection to queue it on
   * (a DEALER whose connect failed, e.g. a host name that does not resolve, would block its sender
   * for ever, and the I/O thread serves every endpoint).
   */
  private static boolean sendRequest(ZMQ.Socket d, long from) {
    return d.send(new byte[0], ZMQ.SNDMORE | ZMQ.DONTWAIT)
        && d.send(ByteBuffer.allocate(8).putLong(from).array(), ZMQ.DONTWAIT);
  }

  /** One subscribed engine endpoint; touched by the I/O thread only. */
  private final class Endpoint {
    final String backendId;
    final long generation; // of the backend's subscription this endpoint belongs to
    final String endpoint;
    @Nullable String replayEndpoint;
    // null while it cannot be created (out of file descriptors, JeroMQ's socket cap): retried at
    // retryAt, the delay doubling from the reconnect backoff's minimum up to maxStallTimeoutNanos
    ZMQ.@Nullable Socket sub;
    ZMQ.@Nullable Socket monitor; // PAIR receiving sub's connection events
    long retryAt;
    long retryDelay;
    boolean openFailed; // the last socket creation threw (logged once until one succeeds)
    long handshakeBy; // System.nanoTime() by which sub must complete a handshake; MAX_VALUE: done
    long stallTimeout = handshakeTimeoutNanos; // doubles while reopens find no handshake
    boolean connectFailed; // the last connect threw (logged once until a handshake)
    // the next SUB socket and its monitor while a connect thread connects it (sub is null then)
    @Nullable Connect subConnect;
    ZMQ.@Nullable Socket subConnectMonitor;
    ZMQ.@Nullable Socket replay; // connected ahead of need, reused while replays end cleanly
    @Nullable Connect replayConnect; // the next replay socket while a connect thread connects it
    long last = Long.MIN_VALUE; // last seq accepted (live or replayed)
    long lastLive = Long.MIN_VALUE; // last seq seen on the live stream
    long lastHeard = System.nanoTime();
    // the connection was lost since the last live batch: its next batch may be a new process's
    boolean reconnected;
    // the engine's KV-cache groups known not to be full attention (their removals are skipped)
    final KvEventDecoder.Groups groups = new KvEventDecoder.Groups();

    Endpoint(String backendId, long generation, String endpoint, @Nullable String replayEndpoint) {
      this.backendId = backendId;
      this.generation = generation;
      this.endpoint = endpoint;
      this.replayEndpoint = replayEndpoint;
      if (tryOpenSub(System.nanoTime()) && replayEndpoint != null) {
        replaySocket(System.nanoTime()); // connected ahead of need; made again on need if it fails
      }
    }

    /**
     * Opens the SUB socket and its monitor; false if they cannot be created now (counted, logged
     * once until they can), in which case the endpoint has no socket and is retried with backoff.
     */
    boolean tryOpenSub(long now) {
      try {
        openSub();
      } catch (RuntimeException e) {
        socketFailed(e);
        retryDelay =
            retryDelay == 0
                ? reconnectMin.toNanos()
                : Math.min(2 * retryDelay, Math.max(maxStallTimeoutNanos, reconnectMin.toNanos()));
        retryAt = now + retryDelay;
        return false;
      }
      retryDelay = 0;
      if (openFailed) {
        openFailed = false;
        log.info("KV events of backend {}: the socket for {} is open again", backendId, endpoint);
      }
      return true;
    }

    private void socketFailed(RuntimeException e) {
      stats.ioFailures.increment();
      if (!openFailed) {
        openFailed = true;
        log.warn(
            "KV events of backend {}: cannot create a socket for {} ({}); retrying",
            backendId,
            endpoint,
            describe(e));
      }
    }

    /**
     * The DEALER to the engine's replay ROUTER. It stays connected between replays, so that a
     * replay costs one round trip and not a new connection (a fresh loopback connect under load was
     * seen to take over a second); it is replaced after a replay that did not end at its
     * terminator, whose late answers must not reach the next replay. Its connect runs on a connect
     * thread; this waits for it until {@code waitUntil} ({@link System#nanoTime()}) and returns
     * null if it is not done by then (it goes on, and the next call waits for it again) or if the
     * socket cannot be created now (the next call tries again).
     */
    ZMQ.@Nullable Socket replaySocket(long waitUntil) {
      if (replay != null) {
        return replay;
      }
      Connect c = replayConnect;
      if (c == null) {
        ZMQ.Socket d;
        try {
          d = withOptions(SocketType.DEALER);
        } catch (RuntimeException e) {
          socketFailed(e); // the replay fails; the next one tries again
          return null;
        }
        c = new Connect(d, Objects.requireNonNull(replayEndpoint, "replayEndpoint"), null);
        if (!c.start(() -> quietly(d::close))) {
          return null; // closing
        }
        replayConnect = c;
      }
      if (!c.await(waitUntil - System.nanoTime())) {
        return null;
      }
      replayConnect = null;
      connected(c);
      replay = c.socket;
      return replay;
    }

    /**
     * A new replay endpoint (the old one's socket is closed, or its connect abandoned; the next
     * replay connects the new one).
     */
    void replayEndpoint(@Nullable String address) {
      if (!Objects.equals(address, replayEndpoint)) {
        dropReplaySocket();
        abandonReplayConnect();
        replayEndpoint = address;
      }
    }

    private void abandonReplayConnect() {
      Connect c = replayConnect;
      replayConnect = null;
      if (c != null) {
        c.abandon(() -> quietly(c.socket::close));
      }
    }

    void dropReplaySocket() {
      ZMQ.Socket r = replay;
      replay = null;
      if (r != null) {
        quietly(r::close);
      }
    }

    /**
     * A new socket of {@code type} with the options every endpoint socket has (no linger, the
     * message bound, the reconnect interval); closed again if setting them throws.
     */
    private ZMQ.Socket withOptions(SocketType type) {
      ZMQ.Socket s = sockets.create(context, type);
      try {
        s.setLinger(0);
        s.setMaxMsgSize(maxMessageBytes);
        s.setReconnectIVL(reconnectMin.toMillis());
        s.setReconnectIVLMax(reconnectMax.toMillis());
      } catch (RuntimeException e) {
        quietly(s::close);
        throw e;
      }
      return s;
    }

    /** A SUB socket with the options and the topic, not connected yet. */
    private ZMQ.Socket unconnectedSub() {
      ZMQ.Socket s = withOptions(SocketType.SUB);
      try {
        if (receiveHighWaterMark > 0) {
          s.setRcvHWM(receiveHighWaterMark);
        }
        s.subscribe(topic);
      } catch (RuntimeException e) {
        quietly(s::close);
        throw e;
      }
      return s;
    }

    /**
     * Takes a finished connect's outcome: an address that could not be connected (a host name that
     * does not resolve, e.g. an engine's pod gone from DNS while it restarts) is logged once until
     * the next handshake, and tried again when the handshake deadline passes (the replay's: at the
     * next replay).
     */
    private void connected(Connect c) {
      RuntimeException e = c.failure();
      if (e == null) {
        return;
      }
      if (!connectFailed) {
        log.warn(
            "KV events of backend {}: cannot connect to {} ({}); retrying",
            backendId,
            c.address,
            describe(e));
      }
      connectFailed = true;
    }

    /**
     * A monitor of {@code s}'s greetings and disconnections, on a PAIR socket of its own. JeroMQ
     * writes monitor events from its own I/O thread and blocks when about a thousand are unread;
     * they are read every poll interval, and only connection changes are monitored.
     */
    private ZMQ.Socket monitor(ZMQ.Socket s) {
      String address = "inproc://prefix-router-kv-monitor-" + MONITORS.incrementAndGet();
      if (!s.monitor(address, ZMQ.EVENT_HANDSHAKE_PROTOCOL | ZMQ.EVENT_DISCONNECTED)) {
        throw new IllegalStateException("JeroMQ refused a socket monitor at " + address);
      }
      ZMQ.Socket m = sockets.create(context, SocketType.PAIR);
      try {
        m.setLinger(0);
        m.connect(address);
      } catch (RuntimeException e) {
        quietly(m::close);
        throw e;
      }
      return m;
    }

    /**
     * Reads the monitor's pending events; true if the SUB socket has gone past its greeting
     * deadline (opened, or disconnected, longer ago than its stall timeout without completing the
     * ZMTP greeting).
     */
    boolean stalled(long now) {
      if (sub == null) {
        return false; // its socket is being retried
      }
      readMonitor(now);
      return handshakeBy != Long.MAX_VALUE && now - handshakeBy > 0;
    }

    /**
     * Reads the monitor's pending events. Also read before the SUB socket's messages are: JeroMQ
     * writes a disconnection before the reconnected connection can deliver anything, so the first
     * batch after a reconnection is known as such.
     */
    void readMonitor(long now) {
      if (monitor == null) {
        return;
      }
      ZMQ.Event ev;
      while ((ev = ZMQ.Event.recv(monitor, ZMQ.DONTWAIT)) != null) {
        if (ev.getEvent() == ZMQ.EVENT_HANDSHAKE_PROTOCOL) {
          handshakeBy = Long.MAX_VALUE;
          stallTimeout = handshakeTimeoutNanos;
          connectFailed = false;
        } else if (ev.getEvent() == ZMQ.EVENT_DISCONNECTED) {
          handshakeBy = now + stallTimeout; // ZMQ reconnects: it must greet again
          reconnected = true;
        }
      }
    }

    /**
     * A new socket in place of a silent or stalled one; the sequence state is kept. After a stall
     * the next deadline doubles, up to {@link #maxStallTimeoutNanos} (an engine that is down is not
     * retried faster than ZMQ's own backoff would), and is back at the handshake timeout after the
     * next greeting.
     */
    void reopen(boolean afterStall) {
      readMonitor(System.nanoTime()); // a disconnection it saw must not be lost with it
      reconnected = true; // the new socket's first batch may come from a restarted engine
      closeSub();
      if (afterStall) {
        stallTimeout = Math.min(2 * stallTimeout, maxStallTimeoutNanos);
      }
      lastHeard = System.nanoTime();
      tryOpenSub(lastHeard);
    }

    /**
     * A new SUB socket and its monitor (attached before the connect: its greeting must not go
     * unseen), handed to a connect thread; {@link #subConnected} takes them back.
     */
    private void openSub() {
      ZMQ.Socket s = null;
      ZMQ.Socket m;
      try {
        s = unconnectedSub();
        m = monitor(s);
      } catch (RuntimeException e) {
        if (s != null) {
          closeWithMonitor(s, null);
        }
        throw e;
      }
      ZMQ.Socket monitored = s;
      Connect c = new Connect(s, endpoint, done -> commands.add(() -> subConnected(done)));
      if (!c.start(() -> closeWithMonitor(monitored, m))) {
        return; // closing
      }
      subConnect = c;
      subConnectMonitor = m;
    }

    /**
     * The SUB socket whose connect is done (or failed: the socket is kept, and replaced when its
     * handshake deadline passes, which retries the connect): polled from now, due to greet within
     * the stall timeout. Ignored for a connect abandoned since (its socket closed with it).
     */
    private void subConnected(Connect c) {
      if (subConnect != c) {
        return;
      }
      subConnect = null;
      sub = c.socket;
      monitor = subConnectMonitor;
      subConnectMonitor = null;
      long now = System.nanoTime();
      handshakeBy = now + stallTimeout;
      lastHeard = now;
      connected(c);
    }

    private void closeSub() {
      ZMQ.Socket s = sub;
      ZMQ.Socket m = monitor;
      sub = null;
      monitor = null;
      if (s != null) {
        closeWithMonitor(s, m);
      }
      Connect c = subConnect;
      ZMQ.Socket cm = subConnectMonitor;
      subConnect = null;
      subConnectMonitor = null;
      if (c != null) {
        c.abandon(() -> closeWithMonitor(c.socket, cm));
      }
    }

    void close() {
      closeSub();
      dropReplaySocket();
      abandonReplayConnect();
    }
  }

  /** Closes {@code s} and its monitor's PAIR, stopping the monitor before its socket goes. */
  private static void closeWithMonitor(ZMQ.Socket s, ZMQ.@Nullable Socket m) {
    quietly(() -> s.monitor(null, 0));
    if (m != null) {
      quietly(m::close);
    }
    quietly(s::close);
  }

  /**
   * One socket's connect on a connect thread: the host lookup, which may take as long as the
   * resolver's timeouts, then JeroMQ's connect (which finds the host in the JVM's address cache).
   * The I/O thread hands the socket over in {@link #start} and touches it again only after {@link
   * #await} returned true, or after {@code onDone} was called, or not at all after {@link
   * #abandon}.
   */
  private final class Connect implements Runnable {
    final ZMQ.Socket socket;
    final String address;
    private final @Nullable Consumer<Connect> onDone; // on the connect thread, unless abandoned
    private final CountDownLatch done = new CountDownLatch(1);
    private @Nullable RuntimeException failure; // written before done counts down
    private boolean inConnect; // guarded by this: the connect thread is using the socket
    private @Nullable Runnable closer; // guarded by this: set once abandoned

    Connect(ZMQ.Socket socket, String address, @Nullable Consumer<Connect> onDone) {
      this.socket = socket;
      this.address = address;
      this.onDone = onDone;
    }

    /** Hands the connect to a connect thread; false (the socket closed) when they are stopped. */
    boolean start(Runnable close) {
      try {
        connects.execute(this);
        return true;
      } catch (RejectedExecutionException e) {
        close.run();
        return false;
      }
    }

    @Override
    public void run() {
      synchronized (this) {
        if (closer != null) {
          done.countDown();
          return; // abandoned before it began: its socket is closed
        }
      }
      RuntimeException failed = null;
      try {
        resolver.resolve(address); // the slow part, touching no socket
      } catch (RuntimeException e) {
        failed = e;
      }
      synchronized (this) {
        if (closer != null) {
          done.countDown();
          return; // abandoned while looking up: its socket is closed, and must stay untouched
        }
        inConnect = true;
      }
      if (failed == null) {
        try {
          socket.connect(address);
        } catch (RuntimeException e) {
          failed = e;
        }
      }
      Runnable close;
      synchronized (this) {
        inConnect = false;
        failure = failed;
        close = closer;
      }
      done.countDown();
      if (close != null) {
        close.run();
      } else if (onDone != null) {
        onDone.accept(this);
      }
    }

    /**
     * Waits up to {@code nanos} for the connect; true once it is done, and the socket is the
     * calling thread's again.
     */
    boolean await(long nanos) {
      try {
        return done.await(Math.max(0, nanos), TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        closed = true;
        return false;
      }
    }

    /** The connect's failure, null if it connected; read after {@link #await} returned true. */
    @Nullable RuntimeException failure() {
      synchronized (this) {
        return failure;
      }
    }

    /**
     * Gives the socket up: {@code close} runs now, unless the connect thread is using the socket,
     * which then runs it when it is done with it. A connect not begun yet never begins.
     */
    void abandon(Runnable close) {
      synchronized (this) {
        closer = close;
        if (inConnect) {
          return;
        }
      }
      close.run();
    }
  }

  // ---------------------------------------------------------------- apply thread

  private void applyLoop() {
    while (!closed || !queue.isEmpty()) {
      Work w;
      try {
        w = queue.poll(POLL_MILLIS, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      if (w != null) {
        apply(w);
      }
    }
  }

  /** Hands one batch to the sink; its exceptions are counted and logged. */
  private void apply(Work w) {
    Long current = generations.get(w.backendId);
    if (current == null || current != w.generation) {
      stats.staleBatches.increment(); // its subscription was unsubscribed since it was read
      return;
    }
    try {
      if (!sink.apply(w.backendId, w.events)) {
        stats.unknownBackend.increment();
      }
      stats.applied(w.events.size(), w.timestamp);
    } catch (RuntimeException e) {
      stats.applyErrors.increment();
      log.warn("KV events of backend {} could not be applied", w.backendId, e);
    }
  }

  /** Builder for {@link KvEventSubscriber}; setters validate at once. */
  public static final class Builder {
    private final Sink sink;
    private String topic = "";
    private Duration replayTimeout = Duration.ofSeconds(2);
    private int queueCapacity = 4096;
    private long maxMessageBytes = 16 << 20;
    private Duration reconnectMin = Duration.ofMillis(100);
    private Duration reconnectMax = Duration.ofSeconds(5);
    private Duration idleReconnect = Duration.ofSeconds(30);
    private Duration handshakeTimeout = Duration.ofSeconds(5);
    private boolean applyOnIoThread = true;
    private SocketFactory sockets = ZContext::createSocket;
    private HostResolver resolver = KvEventSubscriber::lookUp;

    private Builder(Sink sink) {
      this.sink = Objects.requireNonNull(sink, "sink");
    }

    /** The topic prefix to subscribe to ({@code ""}, the engines' default, takes all). */
    public Builder topic(String topic) {
      Objects.requireNonNull(topic, "topic");
      if (topic.length() > 256) {
        throw new IllegalArgumentException(
            "topic must be at most 256 chars, was " + topic.length());
      }
      this.topic = topic;
      return this;
    }

    /** How long one replay may take, 10 ms .. 60 s (default 2 s). */
    public Builder replayTimeout(Duration timeout) {
      this.replayTimeout = Durations.within("replayTimeout", timeout, 10, 60_000);
      return this;
    }

    /**
     * Batches that may wait, 1 .. 1,048,576 (default 4096): per endpoint in its SUB socket (the
     * receive high-water mark) when applying on the I/O thread, else in the apply thread's hand-off
     * queue (one for all endpoints).
     */
    public Builder queueCapacity(int batches) {
      if (batches < 1 || batches > 1 << 20) {
        throw new IllegalArgumentException("queueCapacity must be in [1, 1048576], was " + batches);
      }
      this.queueCapacity = batches;
      return this;
    }

    /** Largest message accepted from an engine, 1 KiB .. 1 GiB (default 16 MiB). */
    public Builder maxMessageBytes(long bytes) {
      if (bytes < 1024 || bytes > 1L << 30) {
        throw new IllegalArgumentException(
            "maxMessageBytes must be in [1024, 1073741824], was " + bytes);
      }
      this.maxMessageBytes = bytes;
      return this;
    }

    /**
     * Reconnect backoff: the first retry after {@code min}, doubling up to {@code max} (1 ms .. 10
     * min each, {@code min <= max}; default 100 ms .. 5 s).
     */
    public Builder reconnectBackoff(Duration min, Duration max) {
      Duration lo = Durations.within("reconnectBackoff min", min, 1, 600_000);
      Duration hi = Durations.within("reconnectBackoff max", max, 1, 600_000);
      if (lo.compareTo(hi) > 0) {
        throw new IllegalArgumentException(
            "reconnectBackoff min must be <= max, was " + lo + " > " + hi);
      }
      this.reconnectMin = lo;
      this.reconnectMax = hi;
      return this;
    }

    /**
     * An endpoint silent this long gets a new SUB socket (100 ms .. 1 h, default 30 s). An idle
     * engine sends nothing, and a new socket costs one connect. It is the fallback for a connection
     * that completed its greeting but never delivers anything (a stall before the greeting is
     * {@link #handshakeTimeout}'s). A gap across the new socket is replayed as usual.
     */
    public Builder idleReconnect(Duration idle) {
      this.idleReconnect = Durations.within("idleReconnect", idle, 100, 3_600_000);
      return this;
    }

    /**
     * A SUB socket that has not completed its ZMTP greeting this long after it was opened, or after
     * its connection was lost, is replaced by a new one (100 ms .. 10 min, default 5 s): it ends a
     * connection that JeroMQ left stalled (see the class comment) within this time instead of the
     * idle reconnect's. While the engine stays unreachable the deadline doubles on each
     * replacement, up to four times the reconnect backoff's maximum. A greeting takes a network
     * round trip or two, so the default leaves a wide margin.
     */
    public Builder handshakeTimeout(Duration timeout) {
      this.handshakeTimeout = Durations.within("handshakeTimeout", timeout, 100, 600_000);
      return this;
    }

    /**
     * Applies each batch on the I/O thread right after decoding it (default true), instead of
     * handing it to a second, apply thread. Applying on the I/O thread saves a thread wake-up per
     * batch (lower lag and CPU where cores are contended: {@code benchmarks/README.md}, "KV-event
     * lag"); the sink then delays reading: while it runs, messages wait in their SUB sockets (up to
     * {@link #queueCapacity} each, beyond which the engine drops them, which shows as a gap and is
     * replayed). With false, a sink that is slow for a while is absorbed by the hand-off queue
     * while the I/O thread keeps reading (and replaying).
     */
    public Builder applyOnIoThread(boolean on) {
      this.applyOnIoThread = on;
      return this;
    }

    /** How sockets are made (default the context's); for tests. */
    Builder socketFactory(SocketFactory sockets) {
      this.sockets = Objects.requireNonNull(sockets, "sockets");
      return this;
    }

    /**
     * How the host of an address is looked up before its connect (default the JVM's); for tests.
     */
    Builder hostResolver(HostResolver resolver) {
      this.resolver = Objects.requireNonNull(resolver, "resolver");
      return this;
    }

    /**
     * Starts the subscriber's thread (two with {@code applyOnIoThread(false)}); connect threads
     * start on need.
     */
    public KvEventSubscriber build() {
      return new KvEventSubscriber(this);
    }
  }
}
