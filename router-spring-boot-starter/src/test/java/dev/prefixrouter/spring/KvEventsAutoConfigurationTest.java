package dev.prefixrouter.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.spi.IndexSignal;
import dev.prefixrouter.vllm.HashParityCheck;
import dev.prefixrouter.vllm.KvEventSubscriber;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/** Precise mode switched on by one property, against a real engine-like publisher on loopback. */
class KvEventsAutoConfigurationTest {
  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(
              AutoConfigurations.of(
                  PrefixRouterAutoConfiguration.class, KvEventsAutoConfiguration.class))
          .withBean(MeterRegistry.class, SimpleMeterRegistry::new);

  @Test
  void offByDefault() {
    runner.run(ctx -> assertThat(ctx).doesNotHaveBean(KvEventSubscriber.class));
  }

  @Test
  void onePropertyRoutesOnTheEnginesOwnEvents() throws Exception {
    try (ZContext zmq = new ZContext(1)) {
      ZMQ.Socket pub = zmq.createSocket(SocketType.XPUB);
      pub.setLinger(0);
      int port = pub.bindToRandomPort("tcp://127.0.0.1");
      runner
          .withPropertyValues(
              "prefix-router.backends[0].id=b0",
              "prefix-router.backends[0].url=http://127.0.0.1:8000",
              "prefix-router.backends[0].models=m",
              "prefix-router.backends[1].id=b1",
              "prefix-router.backends[1].url=http://localhost:8001",
              "prefix-router.backends[1].models=m",
              "prefix-router.kv-events.enabled=true",
              "prefix-router.kv-events.port=" + port,
              "prefix-router.kv-events.idle-reconnect=1s")
          .run(
              ctx -> {
                assertThat(ctx).hasSingleBean(KvEventSubscriber.class);
                KvEventSubscriber events = ctx.getBean(KvEventSubscriber.class);
                RoutingEngine engine = ctx.getBean(RoutingEngine.class);
                // both backends subscribe to the one publisher (same port on loopback); a
                // match on either shows the engine's events reached the index
                pub.setReceiveTimeOut(10_000);
                assertThat(pub.recv(0)).as("a subscription").isNotNull();
                int[] tokens = new int[64];
                for (int i = 0; i < tokens.length; i++) {
                  tokens[i] = 1000 + i;
                }
                // sent until applied: with a 1 s idle reconnect, a subscription that took a
                // loaded host over a second arrives just before its socket is replaced, and a
                // batch sent once then is lost
                publishUntil(pub, storedBatch(tokens), () -> events.stats().appliedEvents() >= 1);
                assertThat(events.stats().appliedEvents()).isPositive();
                Routed r =
                    (Routed)
                        engine.route(
                            RouteRequest.builder("t", "m")
                                .prompt(Prompt.ofTokens(tokens))
                                .maxOutputTokens(1)
                                .build());
                assertThat(r.matchedTokens()).as("the engine's stored blocks").isEqualTo(64);
                MeterRegistry meters = ctx.getBean(MeterRegistry.class);
                ctx.getBeansOfType(MeterBinder.class).values().forEach(m -> m.bindTo(meters));
                assertThat(meters.get("prefixrouter.kv.events").functionCounter().count())
                    .isPositive();
              });
    }
  }

  @Test
  void backendsAddedAtRuntimeAreSubscribedAndRemovedOnesUnsubscribed() throws Exception {
    try (ZContext zmq = new ZContext(1)) {
      ZMQ.Socket pub = zmq.createSocket(SocketType.XPUB);
      pub.setLinger(0);
      pub.setXpubVerbose(true); // every subscriber's subscription, not only the first
      int port = pub.bindToRandomPort("tcp://127.0.0.1");
      oneBackend(port)
          .run(
              ctx -> {
                KvEventSubscriber events = ctx.getBean(KvEventSubscriber.class);
                KvEventMembership membership = ctx.getBean(KvEventMembership.class);
                RoutingEngine engine = ctx.getBean(RoutingEngine.class);
                ctx.getBean(BackendUrls.class).put("b1", "http://localhost:8001");
                engine.backends().add(Backend.of("b1", "m"));
                engine.backends().add(Backend.of("b2", "m")); // no url: not subscribed
                engine.backends().update("b1", b -> b.withCapacityBlocks(1000)); // no churn
                assertThat(membership.subscribed())
                    .containsOnlyKeys("b0", "b1")
                    .containsEntry("b1", java.util.List.of("tcp://localhost:" + port));
                int[] tokens = new int[64];
                for (int i = 0; i < tokens.length; i++) {
                  tokens[i] = 2000 + i;
                }
                // send until b1's index holds the blocks (a fresh loopback connect may need
                // the idle reconnect; batches sent before it are simply not seen)
                publishUntil(pub, storedBatch(tokens), () -> confirmed(engine, "b1") >= 4);
                assertThat(confirmed(engine, "b1")).as("b1's confirmed blocks").isEqualTo(4);
                engine.backends().remove("b1");
                assertThat(membership.subscribed()).containsOnlyKeys("b0");
                long deadline = System.nanoTime() + 20_000_000_000L; // its own, not what is left
                while (events.stats().endpoints() != 1 && System.nanoTime() < deadline) {
                  Thread.sleep(10);
                }
                assertThat(events.stats().endpoints()).isEqualTo(1);
              });
    }
  }

  /**
   * Two engines on one host (HTTP :8000 and :8001) map to one KV-event endpoint (the port is one
   * for every backend): the second backend is not subscribed, where it silently took the first's
   * socket before (the first's entries then stayed for ever).
   */
  @Test
  void twoBackendsOnOneHostAreNotBothSubscribedToOneEndpoint() {
    runner
        .withPropertyValues(
            "prefix-router.backends[0].id=b0",
            "prefix-router.backends[0].url=http://127.0.0.1:8000",
            "prefix-router.backends[0].models=m",
            "prefix-router.backends[1].id=b1",
            "prefix-router.backends[1].url=http://127.0.0.1:8001",
            "prefix-router.backends[1].models=m",
            "prefix-router.kv-events.enabled=true",
            "prefix-router.kv-events.port=5557")
        .run(
            ctx -> {
              KvEventMembership membership = ctx.getBean(KvEventMembership.class);
              RoutingEngine engine = ctx.getBean(RoutingEngine.class);
              assertThat(membership.subscribed())
                  .containsOnlyKeys("b0")
                  .containsEntry("b0", java.util.List.of("tcp://127.0.0.1:5557"));
              engine.backends().remove("b0");
              ctx.getBean(BackendUrls.class).put("b2", "http://127.0.0.1:8002");
              engine.backends().add(Backend.of("b2", "m")); // the endpoint is free again
              assertThat(membership.subscribed()).containsOnlyKeys("b2");
            });
  }

  @Test
  void dataParallelRanksAreSubscribedAtTheirPortOffsets() throws Exception {
    try (ZContext zmq = new ZContext(1)) {
      ZMQ.Socket rank0 = zmq.createSocket(SocketType.XPUB);
      ZMQ.Socket rank1 = zmq.createSocket(SocketType.XPUB);
      rank0.setLinger(0);
      rank1.setLinger(0);
      int port = bindPair(rank0, rank1);
      runner
          .withPropertyValues(
              "prefix-router.backends[0].id=b0",
              "prefix-router.backends[0].url=http://127.0.0.1:8000",
              "prefix-router.backends[0].models=m",
              "prefix-router.kv-events.enabled=true",
              "prefix-router.kv-events.port=" + port,
              "prefix-router.kv-events.data-parallel-size=2",
              "prefix-router.kv-events.idle-reconnect=1s")
          .run(
              ctx -> {
                KvEventMembership membership = ctx.getBean(KvEventMembership.class);
                RoutingEngine engine = ctx.getBean(RoutingEngine.class);
                assertThat(membership.subscribed())
                    .containsEntry(
                        "b0",
                        java.util.List.of(
                            "tcp://127.0.0.1:" + port, "tcp://127.0.0.1:" + (port + 1)));
                int[] tokens = new int[64];
                for (int i = 0; i < tokens.length; i++) {
                  tokens[i] = 4000 + i;
                }
                // only rank 1 publishes: its events reach b0 through the second subscription
                publishUntil(rank1, storedBatch(tokens), () -> confirmed(engine, "b0") >= 4);
                assertThat(confirmed(engine, "b0")).as("b0's confirmed blocks").isEqualTo(4);
              });
    }
  }

  /** Binds two sockets on consecutive loopback ports; returns the first. */
  private static int bindPair(ZMQ.Socket first, ZMQ.Socket second) {
    for (int attempt = 0; attempt < 50; attempt++) {
      int port = first.bindToRandomPort("tcp://127.0.0.1", 20_000, 60_000);
      try {
        if (second.bind("tcp://127.0.0.1:" + (port + 1))) {
          return port;
        }
      } catch (RuntimeException taken) {
        // the next port is in use: try another pair
      }
      first.unbind("tcp://127.0.0.1:" + port);
    }
    throw new AssertionError("no two consecutive free ports");
  }

  @Test
  void aHandshakeTimeoutOutOfRangeNamesItsProperty() {
    runner
        .withPropertyValues(
            "prefix-router.backends[0].id=b0",
            "prefix-router.backends[0].url=http://127.0.0.1:8000",
            "prefix-router.backends[0].models=m",
            "prefix-router.kv-events.enabled=true",
            "prefix-router.kv-events.handshake-timeout=10ms")
        .run(
            ctx ->
                assertThat(ctx.getStartupFailure())
                    .hasStackTraceContaining("prefix-router.kv-events.handshake-timeout")
                    .hasStackTraceContaining("handshakeTimeout"));
  }

  @Test
  void theLastRanksPortMustBeAPort() {
    runner
        .withPropertyValues(
            "prefix-router.kv-events.enabled=true",
            "prefix-router.kv-events.port=65535",
            "prefix-router.kv-events.data-parallel-size=2")
        .run(
            ctx ->
                assertThat(ctx.getStartupFailure())
                    .hasStackTraceContaining("prefix-router.kv-events.port")
                    .hasStackTraceContaining("plus data-parallel-size - 1 must be at most 65535"));
  }

  /** The runner with one backend whose engine publishes on {@code port} of loopback. */
  private ApplicationContextRunner oneBackend(int port) {
    return runner.withPropertyValues(
        "prefix-router.backends[0].id=b0",
        "prefix-router.backends[0].url=http://127.0.0.1:8000",
        "prefix-router.backends[0].models=m",
        "prefix-router.kv-events.enabled=true",
        "prefix-router.kv-events.port=" + port,
        "prefix-router.kv-events.idle-reconnect=1s",
        "prefix-router.kv-events.handshake-timeout=1s");
  }

  /**
   * Publishes the batch with rising seqs every 50 ms until {@code done} or 20 s (a fresh loopback
   * connect may need the subscriber's idle reconnect; batches sent before it are not seen); returns
   * the deadline.
   */
  private static long publishUntil(ZMQ.Socket pub, byte[] batch, BooleanSupplier done)
      throws InterruptedException {
    long deadline = System.nanoTime() + 20_000_000_000L;
    long seq = 0;
    while (!done.getAsBoolean() && System.nanoTime() < deadline) {
      pub.sendMore(new byte[0]);
      pub.sendMore(ByteBuffer.allocate(8).putLong(seq++).array());
      pub.send(batch);
      Thread.sleep(50);
    }
    return deadline;
  }

  private static long confirmed(RoutingEngine engine, String id) {
    return engine
        .inspect()
        .backend(id)
        .orElseThrow()
        .indexSignals()
        .getOrDefault(IndexSignal.CONFIRMED_BLOCKS, 0L);
  }

  @Test
  void theParityCheckSeesTheRoutedTokensInTheEnginesEvents() throws Exception {
    try (ZContext zmq = new ZContext(1)) {
      ZMQ.Socket pub = zmq.createSocket(SocketType.XPUB);
      pub.setLinger(0);
      int port = pub.bindToRandomPort("tcp://127.0.0.1");
      oneBackend(port)
          .run(
              ctx -> {
                HashParityCheck parity = ctx.getBean(HashParityCheck.class);
                RoutingEngine engine = ctx.getBean(RoutingEngine.class);
                int[] tokens = new int[64];
                for (int i = 0; i < tokens.length; i++) {
                  tokens[i] = 3000 + i;
                }
                engine.route(
                    RouteRequest.builder("t", "m")
                        .prompt(Prompt.ofTokens(tokens))
                        .maxOutputTokens(1)
                        .build());
                publishUntil(pub, storedBatch(tokens), () -> parity.stats().checked() > 0);
                // the check counts `checked` and then `matched`, and a batch sent before the
                // loop ended may still be checked: wait until both agree (a mismatch never does)
                long deadline = System.nanoTime() + 20_000_000_000L;
                HashParityCheck.Stats s = parity.stats();
                while (s.matched() != s.checked() && System.nanoTime() < deadline) {
                  Thread.sleep(10);
                  s = parity.stats();
                }
                assertThat(s.checked()).isPositive();
                assertThat(s.matched()).isEqualTo(s.checked());
                MeterRegistry meters = new SimpleMeterRegistry();
                ctx.getBeansOfType(MeterBinder.class).values().forEach(m -> m.bindTo(meters));
                assertThat(meters.get("prefixrouter.kv.parity.matched").functionCounter().count())
                    .isPositive();
              });
    }
  }

  @Test
  void badPropertiesNameTheProperty() {
    runner
        .withPropertyValues(
            "prefix-router.kv-events.enabled=true", "prefix-router.kv-events.replay-timeout=0s")
        .run(
            ctx ->
                assertThat(ctx.getStartupFailure())
                    .hasStackTraceContaining("prefix-router.kv-events.replay-timeout")
                    .hasStackTraceContaining("must be in [10 ms, 60000 ms], was PT0S"));
  }

  /** {@code [ts, [BlockStored of 4 blocks, array form], 0]}. */
  private static byte[] storedBatch(int[] tokens) throws IOException {
    try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
      p.packArrayHeader(3).packDouble(1.0).packArrayHeader(1);
      p.packArrayHeader(7).packString("BlockStored").packArrayHeader(4);
      for (long h = 11; h <= 14; h++) {
        p.packLong(h);
      }
      p.packNil().packArrayHeader(tokens.length);
      for (int t : tokens) {
        p.packInt(t);
      }
      p.packInt(16).packNil().packString("GPU");
      p.packInt(0);
      return p.toByteArray();
    }
  }
}
