package dev.prefixrouter.bench.sim;

import dev.prefixrouter.api.AllBlocksCleared;
import dev.prefixrouter.api.KvEvent;
import dev.prefixrouter.bench.kv.KvWire;
import dev.prefixrouter.bench.kv.WirePublisher;
import dev.prefixrouter.vllm.KvEventStats;
import dev.prefixrouter.vllm.KvEventSubscriber;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code --kv-events wire}: the simulated backends' KV events go through the real wire. One {@link
 * WirePublisher} per backend (PUB + replay ROUTER on loopback, vLLM's framing and msgpack encoding)
 * and one real {@link KvEventSubscriber} whose sink applies each batch to the run's engines. A
 * dropped batch is kept in its publisher's replay buffer but not sent, so the subscriber sees the
 * gap at that backend's next batch and replays it.
 *
 * <p>Determinism: the simulation publishes every batch due at one simulated instant, then, before
 * it handles any other event, waits ({@link #await}) until the subscriber has applied every batch
 * published so far (a dropped batch counts once the backend's next batch, which reveals the gap,
 * has been sent). Every batch is thus applied at the simulated time it is delivered (a dropped one
 * at the time of its backend's next batch), with the simulation clock standing still, and the
 * router sees exactly what it would see with events applied in-process: the same run twice gives
 * the same result, as long as no wait times out (counted; a timeout means the wire lost something
 * the replay could not recover, and the run is then no longer deterministic).
 */
final class WireLink implements AutoCloseable {
  /** Applies one backend's batch to the run's engines. */
  interface Applier {
    void apply(int backend, List<KvEvent> batch);
  }

  private static final long RESEND_AFTER_MILLIS = 5_000;
  private static final int MAX_RESENDS = 10;

  private final List<WirePublisher> publishers = new ArrayList<>();
  private final KvEventSubscriber subscriber;
  private final long[] recorded; // sim thread: batches published or dropped, per backend
  private final long[] expected; // sim thread: batches the subscriber must have applied
  private final long[] lastLive; // sim thread: seq of the last batch sent, -1 before
  private final long[] applied; // guarded by this
  private long cleared; // guarded by this
  private boolean pending;
  long sent;
  long dropped;
  long resends;
  long timeouts;

  WireLink(int backends, Applier applier) {
    recorded = new long[backends];
    expected = new long[backends];
    applied = new long[backends];
    lastLive = new long[backends];
    java.util.Arrays.fill(lastLive, -1);
    subscriber =
        KvEventSubscriber.builder(
                (id, events) -> {
                  int b = Integer.parseInt(id, 1, id.length(), 10);
                  boolean clear = events.size() == 1 && events.get(0) instanceof AllBlocksCleared;
                  applier.apply(b, events);
                  synchronized (this) {
                    if (clear) {
                      cleared++; // the sim never clears: the subscriber dropped a backend
                    } else {
                      applied[b]++;
                    }
                    notifyAll();
                  }
                  return true;
                })
            // a stalled loopback connect is made again after 1 s; a backend's stream that is only
            // quiet (the simulation gave it no events for a while) is never reopened
            .handshakeTimeout(Duration.ofSeconds(1))
            .idleReconnect(Duration.ofMinutes(10))
            .queueCapacity(1 << 16)
            .build();
    for (int b = 0; b < backends; b++) {
      WirePublisher p = new WirePublisher("", 10_000);
      publishers.add(p);
      subscriber.subscribe("b" + b, p.endpoint(), p.replayEndpoint());
    }
    for (WirePublisher p : publishers) {
      p.awaitSubscriber(Duration.ofSeconds(30)); // a stalled connection: reopened after 1 s
    }
  }

  /** Publishes (or, if {@code drop}, loses on the wire) one backend's batch. */
  void send(int backend, List<KvEvent> batch, double simSeconds, boolean drop) {
    byte[] payload = KvWire.encode(simSeconds, batch, KvWire.Encoding.ARRAY);
    recorded[backend]++;
    if (drop) {
      publishers.get(backend).drop(payload);
      dropped++;
    } else {
      lastLive[backend] = publishers.get(backend).publish(payload);
      expected[backend] = recorded[backend]; // this one and any dropped before it
      sent++;
      pending = true;
    }
  }

  /** Whether batches were sent since the last {@link #await}. */
  boolean pending() {
    return pending;
  }

  /**
   * Waits until every batch that can arrive has been applied. A backend still short after 5 s has
   * its last batch sent again (ZMQ loses what is published while a SUB reconnects; the subscriber
   * applies a lost batch, replaying any gap before it, and ignores one it has), up to 10 times;
   * then the wait is counted as a timeout and the simulation moves on.
   */
  synchronized void await() throws InterruptedException {
    pending = false;
    for (int b = 0; b < applied.length; b++) {
      int tries = 0;
      long seen = applied[b];
      long progress = System.nanoTime();
      while (applied[b] < expected[b]) {
        long waitMillis = RESEND_AFTER_MILLIS - (System.nanoTime() - progress) / 1_000_000;
        if (waitMillis > 0) {
          wait(waitMillis);
          if (applied[b] != seen) {
            seen = applied[b];
            progress = System.nanoTime();
          }
          continue;
        }
        if (++tries > MAX_RESENDS) { // no progress for 5 s, ten times over
          timeouts++;
          break;
        }
        resends++;
        publishers.get(b).resend(lastLive[b]);
        progress = System.nanoTime();
      }
    }
  }

  /** One line for the run's log. */
  String summary() {
    KvEventStats.Snapshot s = subscriber.stats();
    synchronized (this) {
      return String.format(
          "wire: %d batches sent, %d dropped, %d gaps, %d replays (%d batches, %d failed),"
              + " %d backends cleared, %d resends, %d wait timeouts",
          sent,
          dropped,
          s.gaps(),
          s.replays(),
          s.replayedBatches(),
          s.replayFailures(),
          cleared,
          resends,
          timeouts);
    }
  }

  @Override
  public void close() {
    subscriber.close();
    publishers.forEach(WirePublisher::close);
  }
}
