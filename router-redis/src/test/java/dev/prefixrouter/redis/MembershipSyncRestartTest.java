package dev.prefixrouter.redis;

import static dev.prefixrouter.redis.RedisPredictionSharingTest.await;
import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BackendSnapshot;
import dev.prefixrouter.api.RoutingEngine;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.output.StatusOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Two replicas follow one membership through the test's own redis-server; the test kills it, drains
 * a backend on one replica while Redis is away, and starts a fresh, empty server on the same port:
 * the change made during the outage reaches the other replica after the re-sync. Bounded: each wait
 * at most 15 s.
 */
@Tag("stress")
class MembershipSyncRestartTest {

  private static boolean draining(RoutingEngine e, String id) {
    return e.inspect().backends().stream()
        .filter(b -> b.backend().id().equals(id))
        .anyMatch(BackendSnapshot::draining);
  }

  /** A replica with b0 and b1 on the test's server, attached; added to the lists. */
  private static RedisMembershipSync replica(
      PrivateRedisServer server,
      String id,
      Duration commandTimeout,
      List<RedisMembershipSync> syncs,
      List<RoutingEngine> engines) {
    RedisMembershipSync s =
        RedisMembershipSync.builder(server.uri())
            .keyPrefix("restart-test:")
            .replicaId(id)
            .commandTimeout(commandTimeout)
            .retryInterval(Duration.ofMillis(50))
            .build();
    RoutingEngine e =
        RoutingEngine.builder()
            .listener(s)
            .backend(Backend.of("b0", "m"))
            .backend(Backend.of("b1", "m"))
            .build();
    s.attach(e);
    syncs.add(s);
    engines.add(e);
    return s;
  }

  @Test
  void aChangeMadeWhileRedisIsAwayReachesTheFleetAfterARestart() throws Exception {
    try (PrivateRedisServer server = new PrivateRedisServer()) {
      List<RedisMembershipSync> syncs = new ArrayList<>();
      List<RoutingEngine> engines = new ArrayList<>();
      try {
        for (String id : new String[] {"a", "b"}) {
          replica(server, id, Duration.ofMillis(200), syncs, engines);
        }
        await(() -> syncs.stream().allMatch(RedisMembershipSync::redisUp));
        server.kill();
        await(() -> syncs.stream().noneMatch(RedisMembershipSync::redisUp));
        engines.get(0).backends().drain("b1"); // local only for now
        assertThat(syncs.get(0).stats().pending()).isEqualTo(1);
        assertThat(draining(engines.get(1), "b1")).isFalse();
        server.restart();
        await(() -> syncs.stream().allMatch(RedisMembershipSync::redisUp));
        await(() -> draining(engines.get(1), "b1"));
        assertThat(draining(engines.get(0), "b1")).isTrue(); // the fleet did not undo it
        assertThat(syncs.get(0).stats().pending()).isZero();
        assertThat(syncs).allMatch(s -> s.stats().transitions() >= 3); // up, down, up
      } finally {
        syncs.forEach(RedisMembershipSync::close);
      }
    }
  }

  /**
   * A change made while the worker is writing an earlier change of the same backend is written
   * after it, not lost: the test's server pauses writes (CLIENT PAUSE WRITE) so that A's write of a
   * drain hangs, A undrains meanwhile, and the fleet ends undrained. (The worker used to take the
   * id out of its pending set only after the write, dropping the undrain queued meanwhile.) If the
   * worker had not read the drained state before the undrain, both coalesce and the check passes
   * without telling anything: never a false failure.
   */
  @Test
  void aChangeMadeWhileAnEarlierOneIsBeingWrittenIsNotLost() throws Exception {
    try (PrivateRedisServer server = new PrivateRedisServer()) {
      List<RedisMembershipSync> syncs = new ArrayList<>();
      List<RoutingEngine> engines = new ArrayList<>();
      RedisClient client = RedisClient.create(server.uri());
      try (StatefulRedisConnection<byte[], byte[]> admin =
          client.connect(ByteArrayCodec.INSTANCE)) {
        for (String id : new String[] {"a", "b"}) {
          // a command timeout longer than the pause; one after the other: A seeds the fleet
          await(replica(server, id, Duration.ofSeconds(5), syncs, engines)::redisUp);
        }
        RedisMembershipSync a = syncs.get(0);
        long seeded = a.stats().published();
        admin
            .sync()
            .dispatch(
                CommandType.CLIENT,
                new StatusOutput<>(ByteArrayCodec.INSTANCE),
                new CommandArgs<>(ByteArrayCodec.INSTANCE).add("PAUSE").add(1_000).add("WRITE"));
        engines.get(0).backends().drain("b0"); // A's worker reads it and its write hangs
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200));
        engines.get(0).backends().undrain("b0"); // made while the drain is being written
        await(() -> a.stats().published() > seeded);
        byte[] hash = "restart-test:backends".getBytes(StandardCharsets.UTF_8);
        byte[] field = "b0".getBytes(StandardCharsets.UTF_8);
        await(() -> !BackendState.decode(admin.sync().hget(hash, field)).draining());
        await(() -> a.stats().pending() == 0);
        await(() -> !draining(engines.get(1), "b0"));
        assertThat(draining(engines.get(0), "b0")).isFalse();
      } finally {
        syncs.forEach(RedisMembershipSync::close);
        client.shutdown();
      }
    }
  }
}
