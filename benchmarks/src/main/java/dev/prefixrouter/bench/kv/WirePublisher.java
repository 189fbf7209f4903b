package dev.prefixrouter.bench.kv;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * A vLLM-like KV-event publisher on loopback, as {@code vllm/distributed/kv_events.py}'s {@code
 * ZmqEventPublisher}: a PUB socket (XPUB, wire-compatible, so that {@link #awaitSubscriber} can see
 * the subscription arrive) sending {@code [topic, seq (8 bytes, big-endian), payload]} with seq
 * counting from 0, and a ROUTER replay socket answering a request {@code ["", start seq]} with
 * {@code ["", seq, payload]} for every buffered batch from {@code start} and a terminator of seq
 * {@code -1} with an empty payload. The last {@code bufferSteps} batches are kept for replay.
 *
 * <p>Threads: {@link #publish} and {@link #drop} from one thread at a time (the PUB socket is not
 * thread-safe); replays are served by the publisher's own thread. {@link #close} stops it.
 */
public final class WirePublisher implements AutoCloseable {
  private final ZContext context = new ZContext(1);
  private final ZMQ.Socket pub = context.createSocket(SocketType.XPUB);
  private final byte[] topic;
  private final int bufferSteps;
  private final ArrayDeque<Object[]> buffer = new ArrayDeque<>(); // {Long seq, byte[]}; guarded
  private final Thread replayThread;
  private final String endpoint;
  private final String replayEndpoint;
  private volatile boolean closed;
  private long nextSeq;
  private long replaysServed;

  /**
   * Binds both sockets on random loopback ports and starts the replay thread.
   *
   * @param bufferSteps batches kept for replay, {@code >= 1} (vLLM's default is 10,000)
   */
  public WirePublisher(String topic, int bufferSteps) {
    if (bufferSteps < 1) {
      throw new IllegalArgumentException("bufferSteps must be >= 1, was " + bufferSteps);
    }
    this.topic = topic.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    this.bufferSteps = bufferSteps;
    pub.setLinger(0);
    pub.setSndHWM(100_000); // vLLM's default high-water mark
    endpoint = "tcp://127.0.0.1:" + pub.bindToRandomPort("tcp://127.0.0.1");
    ZMQ.Socket replay = context.createSocket(SocketType.ROUTER);
    replay.setLinger(0);
    replayEndpoint = "tcp://127.0.0.1:" + replay.bindToRandomPort("tcp://127.0.0.1");
    replayThread = new Thread(() -> serve(replay), "kv-publisher-replay");
    replayThread.setDaemon(true);
    replayThread.start();
  }

  /** The PUB address. */
  public String endpoint() {
    return endpoint;
  }

  /** The replay ROUTER address. */
  public String replayEndpoint() {
    return replayEndpoint;
  }

  /** Replay requests answered so far. */
  public synchronized long replaysServed() {
    return replaysServed;
  }

  /**
   * Blocks until a subscription reaches the PUB socket (what is published after it is not lost to
   * ZMQ's slow-joiner window). An unsubscription (a subscriber that left, e.g. one whose handshake
   * was retried) is skipped.
   *
   * @throws IllegalStateException if none arrives within {@code timeout}
   */
  public void awaitSubscriber(Duration timeout) {
    if (!tryAwaitSubscriber(timeout)) {
      throw new IllegalStateException("no subscriber joined within " + timeout);
    }
  }

  /**
   * As {@link #awaitSubscriber}, but false instead of an exception when none arrives in time. A
   * fresh JeroMQ loopback connection sometimes never delivers its subscription (1-2 % of fresh
   * connects on a loaded 2-core host; a shorter handshake interval does not change that): a caller
   * that can, connects again.
   */
  public boolean tryAwaitSubscriber(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    long left;
    while ((left = deadline - System.nanoTime()) > 0) {
      pub.setReceiveTimeOut((int) Math.max(1, left / 1_000_000));
      byte[] sub = pub.recv(0);
      if (sub != null && sub.length > 0 && sub[0] == 1) {
        return true;
      }
    }
    return false;
  }

  /** Buffers and sends the next batch; returns its seq. */
  public long publish(byte[] payload) {
    long seq = record(payload);
    pub.sendMore(topic);
    pub.sendMore(seqBytes(seq));
    pub.send(payload);
    return seq;
  }

  /**
   * Sends a buffered batch again on the live stream, as it was (a subscriber that has it counts a
   * duplicate; one that lost it applies it, replaying any gap before it). False if it has left the
   * buffer.
   */
  public boolean resend(long seq) {
    byte[] payload = null;
    synchronized (this) {
      for (Object[] b : buffer) {
        if ((Long) b[0] == seq) {
          payload = (byte[]) b[1];
        }
      }
    }
    if (payload == null) {
      return false;
    }
    pub.sendMore(topic);
    pub.sendMore(seqBytes(seq));
    pub.send(payload);
    return true;
  }

  /** Buffers the next batch for replay without sending it (a loss on the wire); returns its seq. */
  public long drop(byte[] payload) {
    return record(payload);
  }

  private synchronized long record(byte[] payload) {
    long seq = nextSeq++;
    buffer.addLast(new Object[] {seq, payload});
    while (buffer.size() > bufferSteps) {
      buffer.removeFirst();
    }
    return seq;
  }

  private synchronized List<Object[]> from(long start) {
    replaysServed++;
    List<Object[]> out = new ArrayList<>();
    for (Object[] b : buffer) {
      if ((Long) b[0] >= start) {
        out.add(b);
      }
    }
    return out;
  }

  private void serve(ZMQ.Socket replay) {
    replay.setReceiveTimeOut(100);
    try {
      while (!closed) {
        byte[] id = replay.recv(0);
        if (id == null) {
          continue;
        }
        List<byte[]> rest = new ArrayList<>();
        while (replay.hasReceiveMore()) {
          rest.add(replay.recv(0));
        }
        byte[] start = rest.isEmpty() ? null : rest.get(rest.size() - 1);
        if (start == null || start.length != 8) {
          continue; // not a replay request
        }
        for (Object[] b : from(ByteBuffer.wrap(start).getLong())) {
          replay.sendMore(id);
          replay.sendMore(new byte[0]);
          replay.sendMore(seqBytes((Long) b[0]));
          replay.send((byte[]) b[1]);
        }
        replay.sendMore(id);
        replay.sendMore(new byte[0]);
        replay.sendMore(seqBytes(-1));
        replay.send(new byte[0]);
      }
    } catch (RuntimeException e) {
      if (!closed) {
        throw e;
      }
    } finally {
      replay.close();
    }
  }

  private static byte[] seqBytes(long seq) {
    return ByteBuffer.allocate(8).putLong(seq).array();
  }

  @Override
  public void close() {
    closed = true;
    try {
      replayThread.join(2_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    pub.close();
    context.close();
  }
}
