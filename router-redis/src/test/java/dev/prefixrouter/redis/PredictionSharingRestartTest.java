package dev.prefixrouter.redis;

import static dev.prefixrouter.redis.RedisPredictionSharingTest.await;
import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteDecision;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Two replicas share predictions through the test's own redis-server while routing threads run; the
 * test kills the server and starts a fresh one on the same port: no route fails or throws, both
 * replicas see Redis down and up again, and a route after the restart reaches the other replica.
 * Bounded: a few seconds of load, each wait at most 15 s.
 */
@Tag("stress")
class PredictionSharingRestartTest {

  @Test
  void killAndRestartRedisDuringLoadLosesNoRouteAndResyncs() throws Exception {
    try (PrivateRedisServer server = new PrivateRedisServer()) {
      List<RedisPredictionSharing> sharings = new ArrayList<>();
      List<RoutingEngine> engines = new ArrayList<>();
      List<KeyRecordingIndex> indexes = new ArrayList<>();
      for (String id : new String[] {"a", "b"}) {
        RedisPredictionSharing s =
            RedisPredictionSharing.builder(server.uri())
                .keyPrefix("restart-test:")
                .replicaId(id)
                .commandTimeout(Duration.ofMillis(200))
                .retryInterval(Duration.ofMillis(50))
                .build();
        KeyRecordingIndex index = new KeyRecordingIndex();
        RoutingEngine e =
            RoutingEngine.builder()
                .hasher(new KeyRecordingIndex.TokenHasher())
                .prefixIndex(index)
                .predictionSink(s)
                .backend(Backend.of("b0", "m"))
                .build();
        s.attach(e);
        sharings.add(s);
        engines.add(e);
        indexes.add(index);
      }
      AtomicBoolean stop = new AtomicBoolean();
      AtomicReference<Throwable> failure = new AtomicReference<>();
      LongAdder routed = new LongAdder();
      LongAdder notRouted = new LongAdder();
      Thread load =
          new Thread(
              () -> {
                int i = 0;
                while (!stop.get()) {
                  for (RoutingEngine e : engines) {
                    try {
                      RouteDecision d = e.route(request(i++ % 50, 3));
                      if (d instanceof Routed r) {
                        r.lease().complete(new dev.prefixrouter.api.Usage(3, 1, 0));
                        routed.increment();
                      } else {
                        notRouted.increment();
                      }
                    } catch (Throwable t) {
                      failure.compareAndSet(null, t);
                    }
                  }
                  LockSupport.parkNanos(200_000); // leave the 2 shared cores some room
                }
              });
      load.start();
      try {
        await(() -> sharings.stream().allMatch(s -> s.redisUp() && s.stats().applied() > 0));
        server.kill();
        await(() -> sharings.stream().noneMatch(RedisPredictionSharing::redisUp));
        long routedWhileDown = routed.sum();
        await(() -> routed.sum() > routedWhileDown + 100);
        server.restart();
        await(() -> sharings.stream().allMatch(RedisPredictionSharing::redisUp));
        long appliedAtRestart = sharings.get(1).stats().applied();
        String fresh = KeyRecordingIndex.entry(0, keysOf(1_000, 4), 4);
        long[] nextRoute = {System.nanoTime()};
        await(
            () -> {
              // a prompt nobody routed before, routed again every second: a first route that a
              // loaded host's command timeout marked Redis down for drops its prediction
              if (System.nanoTime() - nextRoute[0] >= 0) {
                engines.get(0).route(request(1_000, 4));
                nextRoute[0] = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
              }
              return indexes.get(1).recorded.contains(fresh);
            });
        // counted just after the index recorded it
        await(() -> sharings.get(1).stats().applied() > appliedAtRestart);
        assertThat(sharings.get(1).stats().applied()).isGreaterThan(appliedAtRestart);
      } finally {
        stop.set(true);
        load.join(TimeUnit.SECONDS.toMillis(10));
        sharings.forEach(RedisPredictionSharing::close);
      }
      assertThat(failure.get()).as("an exception escaped route()").isNull();
      assertThat(notRouted.sum()).isZero();
      assertThat(sharings).allMatch(s -> s.stats().transitions() >= 3); // up, down, up
      assertThat(sharings).allMatch(s -> s.stats().droppedDown() > 0);
    }
  }

  private static RouteRequest request(int first, int n) {
    int[] tokens = new int[n];
    for (int i = 0; i < n; i++) {
      tokens[i] = first + i;
    }
    return RouteRequest.builder("t", "m")
        .prompt(Prompt.ofTokens(tokens))
        .maxOutputTokens(1)
        .build();
  }

  private static long[] keysOf(int first, int n) {
    long[] out = new long[n];
    long k = 0;
    for (int i = 0; i < n; i++) {
      k = k * 31 + first + i;
      out[i] = k;
    }
    return out;
  }
}
