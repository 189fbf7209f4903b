package dev.prefixrouter.vllm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * {@link KvEventSubscriber.Builder#handshakeTimeout}: a SUB socket whose connection never completes
 * a ZMTP handshake is replaced; one that does is left alone.
 */
class KvEventSubscriberHandshakeTest {

  /**
   * A listener that never greets: without the handshake timeout the SUB socket would sit on the
   * first connection for JeroMQ's 30 s handshake interval.
   */
  @Test
  void aConnectionThatNeverHandshakesIsReplaced() throws Exception {
    try (SilentListener silent = new SilentListener();
        KvEventSubscriber sub =
            KvEventSubscriber.builder((backend, batch) -> true)
                .handshakeTimeout(Duration.ofMillis(300))
                .idleReconnect(Duration.ofHours(1))
                .build()) {
      sub.subscribe("b0", silent.endpoint(), null);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
      while ((silent.accepted() < 3 || sub.stats().handshakeReconnects() < 2)
          && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertThat(silent.accepted()).as("connections the subscriber made").isGreaterThanOrEqualTo(3);
      assertThat(sub.stats().handshakeReconnects()).isGreaterThanOrEqualTo(2);
      assertThat(sub.stats().idleReconnects()).isZero();
    }
  }

  /**
   * A connection that completes its handshake is kept: over three seconds at a 300 ms timeout, a
   * subscriber that did not see its handshakes would replace its socket about ten times. (JeroMQ
   * stalls a fresh loopback connection now and then on a loaded host, which is replaced once; hence
   * at most two, not zero.)
   */
  @Test
  void aConnectionThatHandshakesIsKept() throws Exception {
    AtomicInteger batches = new AtomicInteger();
    try (TestPublisher pub = new TestPublisher("", 16);
        KvEventSubscriber sub =
            counting(batches)
                .handshakeTimeout(Duration.ofMillis(300))
                .idleReconnect(Duration.ofHours(1))
                .build()) {
      sub.subscribe("b0", pub.endpoint, null);
      pub.awaitSubscriber();
      Thread.sleep(3_000);
      pub.publish(Batches.batch(1.0, p -> Batches.removedMap(p, 5L)));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (batches.get() < 1 && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      assertThat(batches.get()).as("the batch arrived on the kept connection").isEqualTo(1);
      assertThat(sub.stats().handshakeReconnects()).isLessThanOrEqualTo(2);
    }
  }

  /**
   * A replay whose connection never answers is asked again on new connections while time remains
   * (at half the replay timeout, then at half of what remains, down to 100 ms): a silent listener
   * as the replay endpoint sees the first connection and at least three more within one replay.
   */
  @Test
  void aReplayWithoutAnswerIsAskedAgainOnNewConnections() throws Exception {
    try (SilentListener silent = new SilentListener();
        TestPublisher pub = new TestPublisher("", 16);
        KvEventSubscriber sub =
            KvEventSubscriber.builder((backend, batch) -> true)
                .replayTimeout(Duration.ofSeconds(2))
                .idleReconnect(Duration.ofHours(1))
                .build()) {
      sub.subscribe("b0", pub.endpoint, silent.endpoint());
      pub.awaitSubscriber();
      pub.publish(Batches.batch(1.0, p -> Batches.removedMap(p, 5L)));
      pub.lose(Batches.batch(2.0, p -> Batches.removedMap(p, 6L)));
      pub.publish(Batches.batch(3.0, p -> Batches.removedMap(p, 7L))); // a gap: seq 1
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
      while (sub.stats().replayFailures() < 1 && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertThat(sub.stats().replayFailures()).as("the gap could not be filled").isEqualTo(1);
      assertThat(sub.stats().replayRetries()).isGreaterThanOrEqualTo(3);
      assertThat(silent.accepted()).as("replay connections").isGreaterThanOrEqualTo(4);
    }
  }

  /**
   * An endpoint whose host does not resolve (an engine's pod gone from DNS while it restarts:
   * JeroMQ throws from connect) is retried and counted, and the other endpoints go on being served.
   * The two phases have deadlines of their own: the retries wait on the machine's resolver (a
   * {@code .invalid} lookup takes milliseconds, or the resolver's timeouts when it is slow), the
   * other endpoint's batch must not (a loopback connect: ten seconds is slack, which an endpoint
   * kept waiting behind the lookups would miss).
   */
  @Test
  void anUnresolvableHostDoesNotStopTheOtherEndpoints() throws Exception {
    AtomicInteger batches = new AtomicInteger();
    try (TestPublisher pub = new TestPublisher("", 16);
        KvEventSubscriber sub =
            counting(batches)
                .handshakeTimeout(Duration.ofMillis(200))
                .reconnectBackoff(Duration.ofMillis(10), Duration.ofMillis(20))
                .build()) {
      sub.subscribe("gone", "tcp://no-such-host.invalid:5557", "tcp://no-such-host.invalid:5558");
      long retriedBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(40); // a slow resolver
      while (sub.stats().handshakeReconnects() < 2 && System.nanoTime() < retriedBy) {
        Thread.sleep(20);
      }
      assertThat(sub.stats().handshakeReconnects()).as("retried").isGreaterThanOrEqualTo(2);
      sub.subscribe("b1", pub.endpoint, null);
      assertThat(pub.subscriptionWithin(10_000)).as("the other endpoint connected").isTrue();
      pub.publish(Batches.batch(1.0, p -> Batches.removedMap(p, 5L)));
      long appliedBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (batches.get() < 1 && System.nanoTime() < appliedBy) {
        Thread.sleep(5);
      }
      assertThat(batches.get()).as("the other endpoint's batch").isEqualTo(1);
      assertThat(sub.stats().endpoints()).isEqualTo(2);
    }
  }

  /**
   * A host whose lookup takes long (an engine's pod gone from DNS behind a slow resolver) delays no
   * other endpoint: while its lookups are held, an endpoint subscribed after it connects and
   * delivers its batch. The bounds are a loopback connect's slack; the held lookups last the whole
   * test, so an endpoint waiting behind them misses any bound.
   */
  @Test
  void aHostThatResolvesSlowlyDelaysNoOtherEndpoint() throws Exception {
    CountDownLatch letGo = new CountDownLatch(1);
    AtomicInteger slowLookups = new AtomicInteger();
    AtomicInteger batches = new AtomicInteger();
    try (TestPublisher pub = new TestPublisher("", 16);
        KvEventSubscriber sub =
            counting(batches)
                .handshakeTimeout(Duration.ofMillis(200))
                .hostResolver(
                    address -> {
                      if (address.contains("[::1x]")) {
                        slowLookups.incrementAndGet();
                        awaitQuietly(letGo);
                      }
                    })
                .build()) {
      try {
        // once let go, an address JeroMQ cannot connect, without a DNS query
        sub.subscribe("slow", "tcp://[::1x]:5557", "tcp://[::1x]:5558");
        long lookingUpBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (slowLookups.get() < 1 && System.nanoTime() < lookingUpBy) {
          Thread.sleep(5);
        }
        assertThat(slowLookups.get()).as("the slow host's lookup began").isPositive();
        sub.subscribe("b1", pub.endpoint, null);
        assertThat(pub.subscriptionWithin(10_000)).as("the other endpoint connected").isTrue();
        pub.publish(Batches.batch(1.0, p -> Batches.removedMap(p, 5L)));
        long appliedBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (batches.get() < 1 && System.nanoTime() < appliedBy) {
          Thread.sleep(5);
        }
        assertThat(batches.get()).as("the other endpoint's batch").isEqualTo(1);
        assertThat(letGo.getCount()).as("the slow lookups are still held").isEqualTo(1);
        assertThat(sub.stats().endpoints()).isEqualTo(2);
      } finally {
        letGo.countDown();
      }
    }
  }

  /**
   * A replay endpoint whose host lookup takes long holds the replay no longer than its timeout: the
   * gap is given up (the backend's blocks cleared) and the stream goes on, while the lookup is
   * still held.
   */
  @Test
  void aReplayEndpointThatResolvesSlowlyFailsItsReplayWithinTheTimeout() throws Exception {
    CountDownLatch letGo = new CountDownLatch(1);
    AtomicInteger batches = new AtomicInteger();
    try (TestPublisher pub = new TestPublisher("", 16);
        KvEventSubscriber sub =
            counting(batches)
                .replayTimeout(Duration.ofSeconds(1))
                .hostResolver(
                    address -> {
                      if (address.contains("[::1x]")) {
                        awaitQuietly(letGo);
                      }
                    })
                .build()) {
      try {
        sub.subscribe("b0", pub.endpoint, "tcp://[::1x]:5558");
        assertThat(pub.subscriptionWithin(10_000)).as("connected").isTrue();
        pub.publish(Batches.batch(1.0, p -> Batches.removedMap(p, 5L)));
        pub.lose(Batches.batch(2.0, p -> Batches.removedMap(p, 6L)));
        pub.publish(Batches.batch(3.0, p -> Batches.removedMap(p, 7L))); // a gap: seq 1
        long appliedBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (batches.get() < 3 && System.nanoTime() < appliedBy) {
          Thread.sleep(5);
        }
        assertThat(batches.get())
            .as("seq 0, the clear after the failed replay, seq 2")
            .isEqualTo(3);
        assertThat(sub.stats().replayFailures()).isEqualTo(1);
        assertThat(sub.stats().markedUnknown()).isEqualTo(1);
        assertThat(letGo.getCount()).as("the slow lookup is still held").isEqualTo(1);
      } finally {
        letGo.countDown();
      }
    }
  }

  /** Waits for {@code latch}, at most a minute (a test that fails lets it go sooner). */
  private static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await(1, TimeUnit.MINUTES);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Test
  void aTcpEndpointNeedsAPort() {
    try (KvEventSubscriber sub = KvEventSubscriber.builder((backend, batch) -> true).build()) {
      for (String bad :
          new String[] {"tcp://10.0.0.5", "tcp://10.0.0.5:0", "tcp://h:99999", "tcp://h:x"}) {
        assertThatThrownBy(() -> sub.subscribe("b0", bad, null))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining(":PORT");
      }
      sub.subscribe("b0", "tcp://[::1]:5557", null); // accepted
    }
  }

  @Test
  void theTimeoutIsBounded() {
    KvEventSubscriber.Builder b = KvEventSubscriber.builder((backend, batch) -> true);
    assertThatThrownBy(() -> b.handshakeTimeout(Duration.ofMillis(99)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("handshakeTimeout");
    assertThatThrownBy(() -> b.handshakeTimeout(Duration.ofMinutes(11)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("handshakeTimeout");
  }

  /** A subscriber builder whose sink counts the batches. */
  private static KvEventSubscriber.Builder counting(AtomicInteger batches) {
    return KvEventSubscriber.builder(
        (backend, batch) -> {
          batches.incrementAndGet();
          return true;
        });
  }

  /**
   * A loopback TCP listener that accepts and never speaks, as a connection JeroMQ left stalled
   * looks from the subscriber's side: connected, no greeting. Keeps what it accepted open until
   * closed.
   */
  private static final class SilentListener implements AutoCloseable {
    private final ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    private final AtomicInteger accepted = new AtomicInteger();
    private final List<Socket> held = new CopyOnWriteArrayList<>();

    SilentListener() throws IOException {
      Thread acceptor =
          new Thread(
              () -> {
                try {
                  while (true) {
                    held.add(server.accept());
                    accepted.incrementAndGet();
                  }
                } catch (IOException closed) {
                  // the listener was closed: done
                }
              },
              "silent-listener");
      acceptor.setDaemon(true);
      acceptor.start();
    }

    String endpoint() {
      return "tcp://127.0.0.1:" + server.getLocalPort();
    }

    int accepted() {
      return accepted.get();
    }

    @Override
    public void close() throws IOException {
      server.close();
      for (Socket s : held) {
        s.close();
      }
    }
  }
}
