package dev.prefixrouter.vllm;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * A vLLM-like KV-event publisher on loopback: an XPUB socket (wire-compatible with PUB, and it
 * tells when a subscriber has joined) and a ROUTER replay socket answering {@code ["", start seq]}
 * with {@code ["", seq, payload]} frames and a {@code -1} terminator, from a bounded buffer. Not
 * thread-safe: the test thread drives it (replays are served by {@link #serveReplay}).
 */
final class TestPublisher implements AutoCloseable {
  private final ZContext context = new ZContext(1);
  private final ZMQ.Socket pub = context.createSocket(SocketType.XPUB);
  private final ZMQ.Socket replay = context.createSocket(SocketType.ROUTER);
  private final byte[] topic;
  private final Deque<Object[]> buffer = new ArrayDeque<>(); // {Long seq, byte[] payload}
  private final int bufferSteps;
  final String endpoint;
  final String replayEndpoint;
  long nextSeq;

  TestPublisher(String topic, int bufferSteps) {
    this.topic = topic.getBytes(StandardCharsets.UTF_8);
    this.bufferSteps = bufferSteps;
    pub.setLinger(0);
    replay.setLinger(0);
    endpoint = "tcp://127.0.0.1:" + pub.bindToRandomPort("tcp://127.0.0.1");
    replayEndpoint = "tcp://127.0.0.1:" + replay.bindToRandomPort("tcp://127.0.0.1");
  }

  /**
   * A publisher bound at the given addresses (e.g. those of one just closed: a restarted engine),
   * retrying for up to 10 s while the old sockets still hold them.
   */
  TestPublisher(String topic, int bufferSteps, String endpoint, String replayEndpoint) {
    this.topic = topic.getBytes(StandardCharsets.UTF_8);
    this.bufferSteps = bufferSteps;
    pub.setLinger(0);
    replay.setLinger(0);
    bindRetrying(pub, endpoint);
    bindRetrying(replay, replayEndpoint);
    this.endpoint = endpoint;
    this.replayEndpoint = replayEndpoint;
  }

  private static void bindRetrying(ZMQ.Socket s, String address) {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (true) {
      try {
        if (s.bind(address)) {
          return;
        }
      } catch (RuntimeException inUse) {
        if (System.nanoTime() > deadline) {
          throw inUse;
        }
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }

  /** Blocks until a subscriber's subscription arrives (so nothing published after is lost). */
  void awaitSubscriber() {
    pub.setReceiveTimeOut(10_000);
    byte[] sub = pub.recv(0);
    if (sub == null || sub.length == 0 || sub[0] != 1) {
      throw new AssertionError("no subscriber joined");
    }
  }

  /**
   * Whether a subscription arrives within {@code timeoutMillis} (unsubscriptions before it are
   * skipped); false if none does.
   */
  boolean subscriptionWithin(int timeoutMillis) {
    long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
    long left;
    while ((left = (deadline - System.nanoTime()) / 1_000_000L) > 0) {
      pub.setReceiveTimeOut((int) left);
      byte[] m = pub.recv(0);
      if (m == null) {
        return false;
      }
      if (m.length > 0 && m[0] == 1) {
        return true;
      }
    }
    return false;
  }

  /** Publishes the next batch. */
  long publish(byte[] payload) {
    long seq = record(payload);
    sendLive(seq, payload);
    return seq;
  }

  /** Buffers the next batch for replay without sending it (a loss on the way). */
  long lose(byte[] payload) {
    return record(payload);
  }

  /** Sends raw frames as they are. */
  void sendRaw(byte[]... frames) {
    for (int i = 0; i < frames.length; i++) {
      pub.send(frames[i], i < frames.length - 1 ? ZMQ.SNDMORE : 0);
    }
  }

  void sendLive(long seq, byte[] payload) {
    pub.sendMore(topic);
    pub.sendMore(seqBytes(seq));
    pub.send(payload);
  }

  private long record(byte[] payload) {
    long seq = nextSeq++;
    buffer.addLast(new Object[] {seq, payload});
    while (buffer.size() > bufferSteps) {
      buffer.removeFirst();
    }
    return seq;
  }

  /** Drops the replay buffer (as if the batches aged out). */
  void forget() {
    buffer.clear();
  }

  /** Waits for one replay request and answers it from the buffer. */
  long serveReplay() {
    return serveReplay(10_000);
  }

  /** Waits up to {@code timeoutMillis} for one replay request and answers it from the buffer. */
  long serveReplay(int timeoutMillis) {
    replay.setReceiveTimeOut(timeoutMillis);
    byte[] id = replay.recv(0);
    if (id == null) {
      throw new AssertionError("no replay request");
    }
    byte[] delimiter = replay.recv(0);
    byte[] start = replay.recv(0);
    if (delimiter.length != 0 || start.length != 8) {
      throw new AssertionError("bad replay request");
    }
    long from = ByteBuffer.wrap(start).getLong();
    for (Object[] b : buffer) {
      if ((Long) b[0] >= from) {
        replay.sendMore(id);
        replay.sendMore(new byte[0]);
        replay.sendMore(seqBytes((Long) b[0]));
        replay.send((byte[]) b[1]);
      }
    }
    replay.sendMore(id);
    replay.sendMore(new byte[0]);
    replay.sendMore(seqBytes(-1));
    replay.send(new byte[0]);
    return from;
  }

  /** Reads one replay request and answers nothing (a replay that times out). */
  void ignoreReplay() {
    replay.setReceiveTimeOut(10_000);
    if (replay.recv(0) == null) {
      throw new AssertionError("no replay request");
    }
    while (replay.hasReceiveMore()) {
      replay.recv(0);
    }
  }

  static byte[] seqBytes(long seq) {
    return ByteBuffer.allocate(8).putLong(seq).array();
  }

  @Override
  public void close() {
    pub.close();
    replay.close();
    context.close();
  }
}
