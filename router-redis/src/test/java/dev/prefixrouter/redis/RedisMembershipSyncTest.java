package dev.prefixrouter.redis;

import static dev.prefixrouter.redis.RedisPredictionSharingTest.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BackendSnapshot;
import dev.prefixrouter.api.RoutingEngine;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Membership and drain changes between replicas through the shared Redis, one prefix per test. */
class RedisMembershipSyncTest {
  private final SharedRedis redis = new SharedRedis();
  private final List<RedisMembershipSync> open = new ArrayList<>();

  private record Replica(RoutingEngine engine, RedisMembershipSync sync) {
    boolean draining(String id) {
      return engine.inspect().backends().stream()
          .filter(b -> b.backend().id().equals(id))
          .anyMatch(BackendSnapshot::draining);
    }

    Optional<Backend> get(String id) {
      return engine.backends().get(id);
    }
  }

  private Replica replica(String id, String... backends) {
    RedisMembershipSync sync =
        RedisMembershipSync.builder(SharedRedis.URI)
            .keyPrefix(redis.prefix)
            .replicaId(id)
            .retryInterval(Duration.ofMillis(20))
            .commandTimeout(Duration.ofSeconds(2)) // the default 250 ms: down on one host stall
            .build();
    open.add(sync);
    var b = RoutingEngine.builder().listener(sync);
    for (String backend : backends) {
      b.backend(Backend.of(backend, "m"));
    }
    RoutingEngine engine = b.build();
    sync.attach(engine);
    await(sync::redisUp);
    return new Replica(engine, sync);
  }

  @AfterEach
  void close() {
    open.forEach(RedisMembershipSync::close);
    redis.close();
  }

  @Test
  void changesThroughOneReplicaReachTheOthersAndALateJoinerConverges() {
    Replica a = replica("a", "b0", "b1");
    Replica b = replica("b", "b0", "b1");

    a.engine().backends().drain("b0");
    await(() -> b.draining("b0"));
    a.engine().backends().undrain("b0");
    await(() -> !b.draining("b0"));

    Backend b2 = Backend.of("b2", "m", "m2").withCapacityBlocks(5_000).withLabel("zone", "z1");
    a.engine().backends().add(b2);
    await(() -> b.get("b2").equals(Optional.of(b2)));
    a.engine().backends().remove("b1");
    await(() -> b.get("b1").isEmpty());

    b.engine().backends().update("b2", x -> x.withWeight(2.5));
    await(() -> a.get("b2").map(Backend::weight).orElse(0.0) == 2.5);
    b.engine().backends().drain("b2");
    await(() -> a.draining("b2"));

    // configured with the removed b1 and a b9 the fleet does not know yet
    Replica c = replica("c", "b0", "b1", "b9");
    assertThat(c.get("b1")).isEmpty();
    assertThat(c.get("b2")).contains(b2.withWeight(2.5));
    assertThat(c.draining("b2")).isTrue();
    await(() -> a.get("b9").isPresent() && b.get("b9").isPresent());

    // nothing echoed: each replica wrote only its own changes (a: 2 seeds + 4, b: 2, c: b9)
    assertThat(a.sync().stats().published()).isEqualTo(6);
    assertThat(b.sync().stats().published()).isEqualTo(2);
    assertThat(c.sync().stats().published()).isEqualTo(1);
    assertThat(a.sync().stats().undecodable() + b.sync().stats().rejected()).isZero();
  }

  /**
   * A backend whose descriptor no replica could decode (a label over 65,535 bytes, more than 4,096
   * models) is skipped with a WARN and counted, and the changes after it still reach the fleet: its
   * encoding threw, which marked Redis down and re-queued it first, forever.
   */
  @Test
  void anUnencodableBackendIsSkippedAndDoesNotBlockTheQueue() {
    Replica a = replica("a", "b0");
    Replica b = replica("b", "b0");
    a.engine().backends().add(Backend.of("huge", "m").withLabel("notes", "x".repeat(70_000)));
    java.util.Set<String> models = new java.util.HashSet<>();
    for (int i = 0; i < 5_000; i++) {
      models.add("lora-" + i);
    }
    a.engine()
        .backends()
        .add(new Backend("many", models, java.util.Set.of(), java.util.Map.of(), 0, 1.0));
    a.engine().backends().drain("b0");
    await(() -> b.draining("b0"));
    assertThat(a.sync().stats().unencodable()).isEqualTo(2);
    assertThat(a.sync().redisUp()).isTrue();
    assertThat(a.sync().stats().pending()).isZero();
    assertThat(b.get("huge")).isEmpty();
    assertThat(b.get("many")).isEmpty();
    assertThat(b.sync().stats().undecodable()).isZero();
  }

  /**
   * A tombstone older than tombstoneTtl is deleted by the worker's regular cycle while Redis stays
   * up: it used to be deleted only on attach and after an outage, so a long-lived fleet kept every
   * removed backend's tombstone.
   */
  @Test
  void oldTombstonesArePrunedWhileRedisStaysUp() {
    java.util.concurrent.atomic.AtomicLong wall =
        new java.util.concurrent.atomic.AtomicLong(1_000_000_000L);
    RedisMembershipSync sync =
        RedisMembershipSync.builder(SharedRedis.URI)
            .keyPrefix(redis.prefix)
            .replicaId("a")
            .retryInterval(Duration.ofMillis(20))
            .commandTimeout(Duration.ofSeconds(2))
            .tombstoneTtl(Duration.ofMinutes(4))
            .wallMillis(wall::get)
            .build();
    open.add(sync);
    RoutingEngine engine =
        RoutingEngine.builder()
            .listener(sync)
            .backend(Backend.of("b0", "m"))
            .backend(Backend.of("b1", "m"))
            .build();
    sync.attach(engine);
    await(sync::redisUp);
    byte[] field = "b1".getBytes(StandardCharsets.UTF_8);
    String hash = redis.prefix + "backends";
    engine.backends().remove("b1");
    await(() -> sync.stats().published() == 3); // two seeds and the tombstone
    RedisClient client = RedisClient.create(SharedRedis.URI);
    try (StatefulRedisConnection<byte[], byte[]> raw = client.connect(ByteArrayCodec.INSTANCE)) {
      byte[] key = hash.getBytes(StandardCharsets.UTF_8);
      assertThat(BackendState.decode(raw.sync().hget(key, field)).removed()).isTrue();
      wall.addAndGet(Duration.ofMinutes(4).toMillis()); // not older than the TTL yet
      LockSupport.parkNanos(Duration.ofMillis(300).toNanos()); // several worker cycles
      assertThat(raw.sync().hexists(key, field)).isTrue();
      wall.addAndGet(Duration.ofMinutes(1).plusMillis(1).toMillis()); // a quarter TTL later
      await(() -> !raw.sync().hexists(key, field));
      assertThat(raw.sync().hexists(key, "b0".getBytes(StandardCharsets.UTF_8))).isTrue();
      assertThat(sync.redisUp()).isTrue();
    } finally {
      client.shutdown();
    }
  }

  @Test
  void aReplicaSkipsItsOwnAnnouncementsAndAppliesOthers() {
    Replica a = replica("a", "b0", "b1");
    RedisClient client = RedisClient.create(SharedRedis.URI);
    try (StatefulRedisConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE)) {
      byte[] hash = bytes(redis.prefix + "backends");
      byte[] stream = bytes(redis.prefix + "backends:changes");
      // an echo of a's own (stale) write: b0 draining; then another replica's: b1 draining
      c.sync()
          .hset(hash, bytes("b0"), new BackendState("b0", Backend.of("b0", "m"), true, 1).encode());
      c.sync().xadd(stream, bytes("id"), bytes("b0"), bytes("r"), bytes("a"));
      c.sync()
          .hset(hash, bytes("b1"), new BackendState("b1", Backend.of("b1", "m"), true, 1).encode());
      c.sync().xadd(stream, bytes("id"), bytes("b1"), bytes("r"), bytes("x"));
    } finally {
      client.shutdown();
    }
    await(() -> a.draining("b1")); // read in stream order: b0's entry came first
    assertThat(a.draining("b0")).as("its own announcement is not applied").isFalse();
    await(() -> a.sync().stats().applied() >= 1); // counted right after the engine changed
    assertThat(a.sync().stats().applied()).isEqualTo(1);
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void backendStateRoundTripsAndRefusesMalformedBytes() {
    Backend full =
        new Backend(
            "b0",
            java.util.Set.of("m", "n"),
            java.util.Set.of("vision"),
            java.util.Map.of("zone", "z1"),
            123,
            0.5);
    BackendState s = new BackendState("b0", full, true, 42);
    assertThat(BackendState.decode(s.encode())).isEqualTo(s);
    BackendState gone = new BackendState("b0", null, false, 43);
    assertThat(BackendState.decode(gone.encode())).isEqualTo(gone);
    byte[] bytes = s.encode();
    for (int cut = 0; cut < bytes.length; cut++) {
      byte[] truncated = java.util.Arrays.copyOf(bytes, cut);
      assertThatThrownBy(() -> BackendState.decode(truncated))
          .isInstanceOf(IllegalArgumentException.class);
    }
  }
}
