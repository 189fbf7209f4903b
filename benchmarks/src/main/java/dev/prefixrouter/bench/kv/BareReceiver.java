package dev.prefixrouter.bench.kv;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * The floor under {@code KvEventSubscriber} for {@link KvSoak}'s {@code bare} mode: the same JeroMQ
 * sockets and threads a subscriber needs at the least, and nothing of ours. One {@link ZContext}
 * with one I/O thread, one SUB socket per endpoint (subscribed to every topic) and one thread that
 * polls them all and reads each ready socket until it has nothing waiting; per message it checks
 * the shape ({@code [topic, seq, payload]}), reads the seq and records the wall clock ({@link
 * KvSoak#wallNanos}) in {@code receivedAt[backend][seq]}. No decode, no hand-off, no index, no
 * replay: a batch the publisher dropped is never received (and not measured).
 */
final class BareReceiver implements AutoCloseable {
  private final ZContext context = new ZContext(1);
  private final List<ZMQ.Socket> subs = new ArrayList<>();
  private final long[][] receivedAt;
  private final Thread thread;
  private volatile boolean closed;
  private final AtomicLong received = new AtomicLong();
  private final AtomicLong outOfOrder = new AtomicLong();

  /** Connects one SUB per endpoint ({@code endpoints[b]}) and starts the polling thread. */
  BareReceiver(String[] endpoints, long[][] receivedAt) {
    this.receivedAt = receivedAt;
    for (String e : endpoints) {
      ZMQ.Socket s = context.createSocket(SocketType.SUB);
      s.setLinger(0);
      s.subscribe(new byte[0]);
      s.connect(e);
      subs.add(s);
    }
    thread = new Thread(this::loop, "kv-soak-bare-receiver");
    thread.setDaemon(true);
    thread.start();
  }

  /** Messages received with the expected shape. */
  long received() {
    return received.get();
  }

  /** Messages whose seq was not above their endpoint's previous one, or out of range. */
  long outOfOrder() {
    return outOfOrder.get();
  }

  private void loop() {
    long[] last = new long[subs.size()];
    Arrays.fill(last, -1);
    try (ZMQ.Poller poller = context.createPoller(subs.size())) {
      for (ZMQ.Socket s : subs) {
        poller.register(s, ZMQ.Poller.POLLIN);
      }
      while (!closed) {
        poller.poll(100);
        for (int b = 0; b < subs.size(); b++) {
          if (poller.pollin(b)) {
            drain(b, subs.get(b), last);
          }
        }
      }
    } catch (RuntimeException e) {
      if (!closed) {
        throw e;
      }
    }
  }

  private void drain(int b, ZMQ.Socket s, long[] last) {
    byte[] first;
    while ((first = s.recv(ZMQ.DONTWAIT)) != null) {
      int frames = 1;
      byte[] seqFrame = null;
      while (s.hasReceiveMore()) {
        byte[] f = s.recv(0);
        if (++frames == 2) {
          seqFrame = f;
        }
      }
      long now = KvSoak.wallNanos();
      if (frames != 3 || seqFrame == null || seqFrame.length != 8) {
        outOfOrder.incrementAndGet();
        continue;
      }
      long seq = ByteBuffer.wrap(seqFrame).getLong();
      if (seq <= last[b] || seq >= receivedAt[b].length) {
        outOfOrder.incrementAndGet();
        continue;
      }
      last[b] = seq;
      receivedAt[b][(int) seq] = now;
      received.incrementAndGet();
    }
  }

  @Override
  public void close() throws InterruptedException {
    closed = true;
    thread.join(2_000);
    subs.forEach(ZMQ.Socket::close);
    context.close();
  }
}
