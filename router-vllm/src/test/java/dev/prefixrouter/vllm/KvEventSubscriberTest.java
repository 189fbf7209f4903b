package dev.prefixrouter.vllm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.AllBlocksCleared;
import dev.prefixrouter.api.BlockRemoved;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.KvEvent;
import java.math.BigInteger;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZMQException;

/** The subscriber against a real publisher on loopback (XPUB + ROUTER sockets). */
class KvEventSubscriberTest {
  private record Applied(String backend, List<KvEvent> events, String thread) {}

  private final BlockingQueue<Applied> applied = new LinkedBlockingQueue<>();
  private TestPublisher pub;
  private KvEventSubscriber sub;

  @BeforeEach
  void start() {
    pub = new TestPublisher("kv", 100);
    sub = subscriber(true);
  }

  private KvEventSubscriber subscriber(boolean applyOnIoThread) {
    return KvEventSubscriber.builder(
            (backend, events) -> {
              applied.add(new Applied(backend, events, Thread.currentThread().getName()));
              return true;
            })
        .applyOnIoThread(applyOnIoThread)
        .topic("kv")
        // each replay request's connection lives half of this: on a loaded host a 1 s loopback
        // handshake did not complete once (the publisher saw no replay request at all)
        .replayTimeout(Duration.ofSeconds(5))
        // a connect that never completes is retried within awaitSubscriber's 10 s; not shorter:
        // on a loaded host a 1 s idle reopen could fire between the subscription and the first
        // batch and drop it, and these tests send nothing after it that would reveal the gap
        .idleReconnect(Duration.ofSeconds(4))
        .build();
  }

  @AfterEach
  void stop() {
    sub.close();
    pub.close();
  }

  private void join(String replayEndpoint) {
    sub.subscribe("b0", pub.endpoint, replayEndpoint);
    pub.awaitSubscriber();
  }

  /** The applied-batch counter once it reaches {@code expected}, or its value after 10 s. */
  private long appliedBatchesWithin10s(long expected) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    long n = sub.stats().appliedBatches();
    while (n < expected && System.nanoTime() < deadline) {
      Thread.sleep(5);
      n = sub.stats().appliedBatches();
    }
    return n;
  }

  private Applied next() throws InterruptedException {
    Applied a = applied.poll(10, TimeUnit.SECONDS);
    assertThat(a).as("a batch within 10 s").isNotNull();
    return a;
  }

  private static byte[] removed(long hash) {
    return Batches.batch(1.0, p -> Batches.removedArray(p, hash));
  }

  private static List<KvEvent> removedEvents(long hash) {
    return List.of(new BlockRemoved(new long[] {hash}, "GPU"));
  }

  @Test
  void batchesInBothEncodingsReachTheSinkInOrder() throws Exception {
    join(pub.replayEndpoint);
    pub.publish(
        Batches.batch(
            1.0,
            p ->
                Batches.storedArray(
                    p,
                    new Object[] {new BigInteger("15760518052499183552")},
                    null,
                    Batches.tokens(0, 16))));
    pub.publish(Batches.batch(2.0, p -> Batches.removedMap(p, 5L)));
    Applied first = next();
    assertThat(first.backend()).isEqualTo("b0");
    assertThat(first.events())
        .containsExactly(
            new BlockStored(
                new long[] {-2686226021210368064L}, null, Batches.tokens(0, 16), 16, "GPU"));
    assertThat(next().events()).isEqualTo(removedEvents(5));
    assertThat(sub.stats().gaps()).isZero();
    // the sink saw both batches; the counter is bumped after the sink returns
    assertThat(appliedBatchesWithin10s(2)).isEqualTo(2);
    assertThat(first.thread()).as("applied on the I/O thread by default").endsWith("-io");
  }

  @Test
  void withAnApplyThreadAGapIsStillFilledInOrder() throws Exception {
    sub.close();
    sub = subscriber(false);
    join(pub.replayEndpoint);
    pub.publish(removed(0));
    Applied first = next();
    assertThat(first.events()).isEqualTo(removedEvents(0));
    assertThat(first.thread()).endsWith("-apply");
    pub.lose(removed(1));
    pub.publish(removed(2));
    assertThat(pub.serveReplay()).isEqualTo(1);
    assertThat(next().events()).isEqualTo(removedEvents(1));
    assertThat(next().events()).isEqualTo(removedEvents(2));
    assertThat(sub.stats().replayFailures()).isZero();
    assertThat(sub.stats().markedUnknown()).isZero();
  }

  /**
   * A replay endpoint whose host does not resolve: the DEALER has no connection, and a blocking
   * send on it waited for ever on the I/O thread, so no event of any backend arrived again.
   */
  @Test
  void aReplayEndpointThatDoesNotResolveFailsTheReplayInsteadOfHangingTheIoThread()
      throws Exception {
    // an address JeroMQ cannot connect (as a host name that does not resolve), without a DNS query
    join("tcp://[::1x]:5558");
    pub.lose(removed(0));
    pub.publish(removed(1)); // a gap before the first batch: a replay of seq 0 is asked for
    pub.publish(removed(2));
    List<KvEvent> seen = new java.util.ArrayList<>();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!seen.containsAll(removedEvents(2)) && System.nanoTime() < deadline) {
      Applied a = applied.poll(100, TimeUnit.MILLISECONDS);
      if (a != null) {
        seen.addAll(a.events());
      }
    }
    assertThat(seen).as("events after the failed replay").containsAll(removedEvents(2));
  }

  @Test
  void aGapIsFilledByReplayInOrder() throws Exception {
    join(pub.replayEndpoint);
    pub.publish(removed(0));
    assertThat(next().events()).isEqualTo(removedEvents(0));
    pub.lose(removed(1));
    pub.lose(removed(2));
    pub.publish(removed(3));
    assertThat(pub.serveReplay()).as("asks from the first missing seq").isEqualTo(1);
    assertThat(next().events()).isEqualTo(removedEvents(1));
    assertThat(next().events()).isEqualTo(removedEvents(2));
    assertThat(next().events()).isEqualTo(removedEvents(3));
    KvEventStats.Snapshot s = sub.stats();
    assertThat(s.gaps()).isEqualTo(1);
    assertThat(s.replayedBatches()).isEqualTo(2);
    assertThat(s.replayFailures()).isZero();
    assertThat(s.markedUnknown()).isZero();
  }

  @Test
  void aReplayThatCannotFillTheGapMarksTheBackendUnknown() throws Exception {
    join(pub.replayEndpoint);
    pub.publish(removed(0));
    next();
    pub.lose(removed(1));
    pub.forget(); // batch 1 has left the engine's buffer
    pub.publish(removed(2));
    pub.serveReplay();
    assertThat(next().events()).containsExactly(AllBlocksCleared.INSTANCE);
    assertThat(next().events()).isEqualTo(removedEvents(2));
    assertThat(sub.stats().replayFailures()).isEqualTo(1);
    assertThat(sub.stats().markedUnknown()).isEqualTo(1);
  }

  @Test
  void aReplayThatTimesOutMarksTheBackendUnknown() throws Exception {
    join(pub.replayEndpoint);
    pub.publish(removed(0));
    next();
    pub.lose(removed(1));
    pub.publish(removed(2));
    pub.ignoreReplay();
    assertThat(next().events()).containsExactly(AllBlocksCleared.INSTANCE);
    assertThat(next().events()).isEqualTo(removedEvents(2));
    assertThat(sub.stats().replayFailures()).isEqualTo(1);
  }

  @Test
  void withoutAReplayEndpointAGapMarksTheBackendUnknown() throws Exception {
    join(null);
    pub.publish(removed(0));
    next();
    pub.lose(removed(1));
    pub.publish(removed(2));
    assertThat(next().events()).containsExactly(AllBlocksCleared.INSTANCE);
    assertThat(next().events()).isEqualTo(removedEvents(2));
  }

  @Test
  void garbageFramesAreCountedAndUndecodableBatchesMarkTheBackendUnknown() throws Exception {
    join(pub.replayEndpoint);
    pub.publish(removed(0));
    next();
    pub.sendRaw("kv".getBytes(), TestPublisher.seqBytes(1)); // two frames
    pub.sendRaw("kv".getBytes(), new byte[] {1, 2, 3}, removed(9)); // a 3-byte seq
    pub.sendRaw("kv".getBytes(), TestPublisher.seqBytes(1), new byte[] {(byte) 0xc1, 0, 7});
    pub.nextSeq = 2;
    pub.publish(removed(2));
    assertThat(next().events()).containsExactly(AllBlocksCleared.INSTANCE);
    assertThat(next().events()).isEqualTo(removedEvents(2));
    KvEventStats.Snapshot s = sub.stats();
    assertThat(s.garbageMessages()).isEqualTo(2);
    assertThat(s.decodeErrors()).isEqualTo(1);
    assertThat(s.gaps()).as("the undecodable batch still counts as received").isZero();
  }

  @Test
  void aPublisherRestartDropsTheBackendsBlocks() throws Exception {
    join(pub.replayEndpoint);
    pub.publish(removed(0));
    pub.publish(removed(1));
    next();
    next();
    pub.nextSeq = 0; // a new engine process, with a new hash seed: its seq starts again
    pub.forget();
    pub.publish(removed(100));
    assertThat(next().events()).containsExactly(AllBlocksCleared.INSTANCE);
    assertThat(next().events()).isEqualTo(removedEvents(100));
    assertThat(sub.stats().restarts()).isEqualTo(1);
  }

  /**
   * An engine restarts and its new process publishes past the last seq seen before the SUB socket
   * reconnects: that looked like a gap, whose replay "succeeded" against the new process's buffer
   * (the old process's blocks stayed, and the new seq 0.. up to the old last were never applied).
   */
  @Test
  void aRestartedEngineThatPublishedPastTheLastSeqBeforeTheReconnectIsARestart() throws Exception {
    join(pub.replayEndpoint);
    pub.publish(removed(0));
    pub.publish(removed(1));
    next();
    next();
    String endpoint = pub.endpoint;
    String replayEndpoint = pub.replayEndpoint;
    pub.close(); // the engine stops; a new process binds the same ports and counts from 0
    pub = new TestPublisher("kv", 100, endpoint, replayEndpoint);
    for (int i = 0; i < 5; i++) {
      pub.lose(removed(100 + i)); // seq 0..4, published before the SUB socket reconnected
    }
    pub.awaitSubscriber();
    pub.publish(removed(105)); // seq 5: past the old process's last seq (1)
    assertThat(pub.serveReplay()).as("the new process's buffer, from its start").isZero();
    assertThat(next().events()).containsExactly(AllBlocksCleared.INSTANCE);
    for (int i = 0; i < 5; i++) {
      assertThat(next().events()).isEqualTo(removedEvents(100 + i));
    }
    assertThat(next().events()).isEqualTo(removedEvents(105));
    assertThat(sub.stats().restarts()).isEqualTo(1);
    assertThat(sub.stats().gaps()).isZero();
  }

  @Test
  void aJoinMidStreamReplaysWhatTheEngineStillBuffers() throws Exception {
    pub.lose(removed(0));
    pub.lose(removed(1));
    join(pub.replayEndpoint);
    pub.publish(removed(2));
    assertThat(pub.serveReplay()).isZero();
    assertThat(next().events()).isEqualTo(removedEvents(0));
    assertThat(next().events()).isEqualTo(removedEvents(1));
    assertThat(next().events()).isEqualTo(removedEvents(2));
    assertThat(sub.stats().replayFailures()).isZero();
  }

  @Test
  void aThrowingSinkIsCountedAndLaterBatchesStillArrive() throws Exception {
    sub.close();
    BlockingQueue<Long> seen = new LinkedBlockingQueue<>();
    sub =
        KvEventSubscriber.builder(
                (backend, events) -> {
                  long h = ((BlockRemoved) events.get(0)).blockHash(0);
                  if (h == 0) {
                    throw new IllegalStateException("boom");
                  }
                  seen.add(h);
                  return true;
                })
            .topic("kv")
            .idleReconnect(Duration.ofSeconds(4)) // as in start(): 1 s could drop both batches
            .build();
    join(pub.replayEndpoint);
    pub.publish(removed(0));
    pub.publish(removed(1));
    assertThat(seen.poll(10, TimeUnit.SECONDS)).isEqualTo(1L);
    assertThat(sub.stats().applyErrors()).isEqualTo(1);
  }

  /**
   * Endpoints were keyed by address only: a second backend subscribing the same address took the
   * first one's socket silently (its entries stayed for ever, and unsubscribing it did nothing).
   */
  @Test
  void anEndpointSubscribedForAnotherBackendIsRefused() throws Exception {
    join(pub.replayEndpoint);
    assertThatThrownBy(() -> sub.subscribe("b1", pub.endpoint, pub.replayEndpoint))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("already subscribed for backend 'b0'");
    pub.publish(removed(0));
    Applied a = next();
    assertThat(a.backend()).as("the endpoint stays b0's").isEqualTo("b0");
    sub.subscribe("b0", pub.endpoint, null); // the same backend again: allowed
    sub.unsubscribe("b0");
    sub.subscribe("b1", pub.endpoint, pub.replayEndpoint); // free once b0 is unsubscribed
  }

  /**
   * A socket that cannot be created (here the first two SUB sockets of a second endpoint, as out of
   * file descriptors) failed the whole I/O thread: no backend's events arrived again, while
   * subscribe() went on returning normally.
   */
  @Test
  void aSocketThatCannotBeCreatedFailsItsEndpointAloneAndIsRetried() throws Exception {
    sub.close();
    AtomicInteger failSubs = new AtomicInteger();
    sub =
        KvEventSubscriber.builder(
                (backend, events) -> {
                  applied.add(new Applied(backend, events, Thread.currentThread().getName()));
                  return true;
                })
            .topic("kv")
            .replayTimeout(Duration.ofSeconds(5))
            .idleReconnect(Duration.ofSeconds(4))
            .socketFactory(
                (context, type) -> {
                  if (type == SocketType.SUB
                      && failSubs.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                    throw new ZMQException("Too many open files", 24);
                  }
                  return context.createSocket(type);
                })
            .build();
    join(pub.replayEndpoint);
    pub.publish(removed(0));
    assertThat(next().backend()).isEqualTo("b0");
    try (TestPublisher other = new TestPublisher("kv", 100)) {
      failSubs.set(2);
      sub.subscribe("b1", other.endpoint, other.replayEndpoint);
      pub.publish(removed(1));
      Applied a = next();
      assertThat(a.backend()).as("the other endpoint goes on").isEqualTo("b0");
      assertThat(a.events()).isEqualTo(removedEvents(1));
      other.awaitSubscriber(); // b1's SUB socket, created on a retry
      other.publish(removed(7));
      Applied b = next();
      assertThat(b.backend()).isEqualTo("b1");
      assertThat(b.events()).isEqualTo(removedEvents(7));
      assertThat(sub.stats().ioFailures()).isEqualTo(2);
      assertThat(sub.stats().endpoints()).isEqualTo(2);
    }
  }

  /**
   * A backend removed and added again behind another engine: a batch already read from its old
   * endpoint (here waiting for the apply thread) was applied to the new registration.
   */
  @Test
  void batchesOfAnUnsubscribedEndpointAreNotAppliedToTheBackendAddedAgain() throws Exception {
    sub.close();
    CountDownLatch inSink = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    sub =
        KvEventSubscriber.builder(
                (backend, events) -> {
                  if (events.equals(removedEvents(1))) {
                    inSink.countDown();
                    try {
                      release.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                      Thread.currentThread().interrupt();
                    }
                  }
                  applied.add(new Applied(backend, events, Thread.currentThread().getName()));
                  return true;
                })
            .applyOnIoThread(false)
            .topic("kv")
            .replayTimeout(Duration.ofSeconds(5))
            .idleReconnect(Duration.ofSeconds(4))
            .build();
    join(pub.replayEndpoint);
    pub.publish(removed(1));
    assertThat(inSink.await(10, TimeUnit.SECONDS)).as("the first batch in the sink").isTrue();
    pub.publish(removed(2)); // read from the old endpoint, waiting in the hand-off queue
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (sub.stats().queued() < 1 && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertThat(sub.stats().queued()).isEqualTo(1);
    try (TestPublisher other = new TestPublisher("kv", 100)) {
      sub.unsubscribe("b0"); // the engine removed b0 and added it again behind another engine
      sub.subscribe("b0", other.endpoint, other.replayEndpoint);
      release.countDown();
      assertThat(next().events()).isEqualTo(removedEvents(1));
      other.awaitSubscriber();
      other.publish(removed(9));
      assertThat(next().events()).as("not the old engine's batch 2").isEqualTo(removedEvents(9));
      assertThat(sub.stats().staleBatches()).isEqualTo(1);
    }
  }

  /**
   * Subscribing an endpoint again (the documented way to change its replay endpoint) made a new
   * endpoint that joined afresh and replayed the engine's buffer from 0: a store applied twice is a
   * second copy, and the block stays believed resident after the engine's single removal.
   */
  @Test
  void subscribingAnEndpointAgainKeepsItsSequenceAndAppliesNothingTwice() throws Exception {
    join(pub.replayEndpoint);
    byte[] h1 =
        Batches.batch(
            1.0, p -> Batches.storedArray(p, new Object[] {1L}, null, Batches.tokens(16, 16)));
    pub.publish(h1); // seq 0
    List<KvEvent> stored = next().events();
    // a replay request, if any is made, is answered (the engine still buffers seq 0)
    Thread server =
        new Thread(
            () -> {
              try {
                pub.serveReplay(3_000);
              } catch (AssertionError none) {
                // no replay asked for within 3 s: as it should be
              }
            });
    server.setDaemon(true);
    server.start();
    try (TestPublisher other = new TestPublisher("kv", 100)) {
      sub.subscribe("b0", pub.endpoint, pub.replayEndpoint); // e.g. a new replay endpoint
      sub.subscribe("b9", other.endpoint, null); // a marker: commands run in order
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (sub.stats().endpoints() < 2 && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      assertThat(sub.stats().endpoints()).isEqualTo(2);
      // a new SUB socket (as before the fix) would subscribe again: let it, so that it gets seq 1;
      // the kept one does not, and this only waits
      pub.subscriptionWithin(1_000);
      pub.publish(removed(2)); // seq 1
      List<List<KvEvent>> seen = new java.util.ArrayList<>();
      while (!seen.contains(removedEvents(2))) {
        seen.add(next().events());
      }
      assertThat(seen).as("h1's store is not applied again").doesNotContain(stored);
      assertThat(seen).containsExactly(removedEvents(2));
      assertThat(sub.stats().replays()).isZero();
    }
    server.join(10_000); // before the publisher closes
  }

  @Test
  void unsubscribeAndCloseStopCleanly() throws Exception {
    join(pub.replayEndpoint);
    pub.publish(removed(0));
    next();
    sub.unsubscribe("b0");
    sub.close();
    assertThat(sub.stats().endpoints()).isLessThanOrEqualTo(1);
  }
}
