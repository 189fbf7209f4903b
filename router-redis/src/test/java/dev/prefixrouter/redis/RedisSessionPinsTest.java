package dev.prefixrouter.redis;

import static dev.prefixrouter.redis.RedisPredictionSharingTest.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Session pins shared through the shared Redis at 127.0.0.1:6379, one prefix per test. */
class RedisSessionPinsTest {
  private final SharedRedis redis = new SharedRedis();
  private final List<RedisSessionPins> open = new ArrayList<>();

  private RedisSessionPins replica(String id) {
    RedisSessionPins p =
        RedisSessionPins.builder(SharedRedis.URI)
            .keyPrefix(redis.prefix)
            .replicaId(id)
            .ttl(Duration.ofMinutes(2))
            .retryInterval(Duration.ofMillis(20))
            // the default 250 ms marks Redis down on one stall of a loaded host, and a replica
            // that was down skips what was announced meanwhile
            .commandTimeout(Duration.ofSeconds(2))
            .build();
    open.add(p);
    await(p::redisUp);
    return p;
  }

  @AfterEach
  void close() {
    open.forEach(RedisSessionPins::close);
    redis.close();
  }

  @Test
  void aPinOnOneReplicaIsLocalOnTheOthersAndALateJoinerReadsItThrough() {
    RedisSessionPins a = replica("a");
    RedisSessionPins b = replica("b");
    a.pin("s1", "b3"); // through the SessionPins SPI
    assertThat(a.backendOf("s1", System.nanoTime())).isEqualTo("b3");
    await(() -> b.stats().received() == 1);
    assertThat(b.backendOf("s1", System.nanoTime())).isEqualTo("b3");
    assertThat(a.stats().received()).isZero(); // its own announcement skipped

    long pttl = redis.commands().pttl(redis.prefix + "pin:s1");
    assertThat(pttl).isPositive().isLessThanOrEqualTo(Duration.ofMinutes(2).toMillis());

    RedisSessionPins c = replica("c"); // joins after the announcement
    assertThat(c.backendOf("s1", System.nanoTime())).isNull(); // not local yet: read queued
    await(() -> "b3".equals(c.backendOf("s1", System.nanoTime())));
    await(() -> c.stats().readThroughHits() >= 1); // counted just after the local pin appeared
    assertThat(c.stats().readThroughHits()).isEqualTo(1);

    b.pin("s1", "b5", System.nanoTime()); // last write wins everywhere
    await(() -> "b5".equals(a.backendOf("s1", System.nanoTime())));
    await(() -> "b5".equals(c.backendOf("s1", System.nanoTime())));
    assertThat(redis.commands().get(redis.prefix + "pin:s1")).isEqualTo("b5");

    a.pin("s2", "b5");
    assertThat(a.size()).isEqualTo(2);
    a.forgetBackend("b5");
    assertThat(a.size()).isZero(); // local only: a later use reads s1 through again
  }

  @Test
  void aFirstPinYieldsToTheFleetsPinAndAMoveOverwritesIt() {
    RedisSessionPins a = replica("a");
    a.pin("s1", "b3");
    await(() -> a.stats().written() == 1);
    RedisSessionPins c = replica("c"); // joins after the announcement, routes s1 on its own
    c.pin("s1", "b7"); // no local pin: written only if the fleet holds none
    await(() -> "b3".equals(c.backendOf("s1", System.nanoTime())));
    await(() -> c.stats().adopted() >= 1); // counted just after the local pin changed
    assertThat(c.stats().adopted()).isEqualTo(1);
    assertThat(c.stats().written()).isZero();
    assertThat(redis.commands().get(redis.prefix + "pin:s1")).isEqualTo("b3");

    c.pin("s1", "b7"); // a move away from a known pin: last write wins
    await(() -> "b7".equals(a.backendOf("s1", System.nanoTime())));
    assertThat(redis.commands().get(redis.prefix + "pin:s1")).isEqualTo("b7");
  }

  /**
   * The read-through of a miss lands before the caller's pin of another backend (a route that
   * missed, then paused): the pin is still a first pin and yields to the fleet's, not a move.
   */
  @Test
  void aReadThroughThatLandsBeforeTheCallersPinIsNotMovedByIt() {
    RedisSessionPins a = replica("a");
    a.pin("s1", "b3");
    await(() -> a.stats().written() == 1);
    RedisSessionPins c = replica("c");
    assertThat(c.backendOf("s1", System.nanoTime())).isNull(); // the miss queues a read
    await(() -> c.stats().readThroughHits() == 1); // the fleet's pin is local, not yet returned
    c.pin("s1", "b7"); // the caller's pin after its miss
    await(() -> c.stats().adopted() >= 1);
    assertThat(c.stats().adopted()).isEqualTo(1);
    assertThat(c.stats().written()).isZero();
    assertThat(c.backendOf("s1", System.nanoTime())).isEqualTo("b3");
    assertThat(redis.commands().get(redis.prefix + "pin:s1")).isEqualTo("b3");

    c.pin("s1", "b7"); // a move away from the pin it has now seen: last write wins
    await(() -> "b7".equals(a.backendOf("s1", System.nanoTime())));
    assertThat(redis.commands().get(redis.prefix + "pin:s1")).isEqualTo("b7");
  }

  /**
   * A use a quarter TTL after the last refresh extends the pin only if Redis still holds it: a move
   * this replica missed is adopted, not reverted by an unconditional write; a pin Redis no longer
   * holds is written again.
   */
  @Test
  void aRefreshAdoptsAPinTheFleetMovedInsteadOfRevertingIt() {
    RedisSessionPins b = replica("b");
    String key = redis.prefix + "pin:s";
    b.pin("s", "x");
    await(() -> b.stats().written() == 1);
    redis.commands().set(key, "y", io.lettuce.core.SetArgs.Builder.px(120_000)); // missed move
    long later = System.nanoTime() + Duration.ofSeconds(31).toNanos(); // past a quarter TTL
    assertThat(b.backendOf("s", later)).isEqualTo("x"); // queues the refresh
    await(() -> "y".equals(b.backendOf("s", later)));
    assertThat(redis.commands().get(key)).isEqualTo("y");
    assertThat(b.stats().written()).isEqualTo(1);
    assertThat(b.stats().adopted()).isEqualTo(1);

    redis.commands().del(key); // expired in Redis while still used here
    long evenLater = later + Duration.ofSeconds(61).toNanos();
    assertThat(b.backendOf("s", evenLater)).isEqualTo("y");
    await(() -> "y".equals(redis.commands().get(key)));
    await(() -> b.stats().written() == 2); // written and announced again
    assertThat(redis.commands().pttl(key)).isPositive();
  }

  /**
   * A replica whose link blips (Redis paused longer than its command timeout) while another moves a
   * session applies the move once it is back: it resumes the stream after the last announcement it
   * read (it used to skip to the newest entry and keep its stale pin).
   */
  @Test
  void aReplicaBackFromABlipAppliesTheMovesAnnouncedMeanwhile() throws Exception {
    try (PrivateRedisServer server = new PrivateRedisServer()) {
      RedisSessionPins a =
          RedisSessionPins.builder(server.uri())
              .keyPrefix(redis.prefix)
              .replicaId("a")
              .ttl(Duration.ofMinutes(2))
              .retryInterval(Duration.ofMillis(20))
              .commandTimeout(Duration.ofSeconds(5))
              .build();
      open.add(a);
      RedisSessionPins b =
          RedisSessionPins.builder(server.uri())
              .keyPrefix(redis.prefix)
              .replicaId("b")
              .ttl(Duration.ofMinutes(2))
              .retryInterval(Duration.ofSeconds(1)) // back after the move was announced
              .commandTimeout(Duration.ofMillis(100))
              .build();
      open.add(b);
      await(() -> a.redisUp() && b.redisUp());
      a.pin("s", "x");
      await(() -> "x".equals(b.backendOf("s", System.nanoTime())));
      io.lettuce.core.RedisClient admin = io.lettuce.core.RedisClient.create(server.uri());
      try (var connection = admin.connect()) {
        var c = connection.sync();
        c.clientPause(400);
        await(() -> !b.redisUp());
        a.pin("s", "y"); // a move, applied and announced when the pause ends
        await(() -> "y".equals(c.get(redis.prefix + "pin:s")));
        await(b::redisUp);
        await(() -> "y".equals(b.backendOf("s", System.nanoTime())));
      } finally {
        admin.shutdown();
      }
    }
  }

  @Test
  void compareIdsOrdersStreamIds() {
    assertThat(RedisLink.compareStreamIds("5-1", "5-1")).isZero();
    assertThat(RedisLink.compareStreamIds("5-2", "5-10")).isNegative();
    assertThat(RedisLink.compareStreamIds("10-0", "9-99")).isPositive();
  }

  @Test
  void builderNamesTheFieldAndBound() {
    RedisSessionPins.Builder b = RedisSessionPins.builder(SharedRedis.URI);
    assertThatThrownBy(() -> b.ttl(Duration.ZERO))
        .hasMessage("ttl must be in [1 s, 1 day], was PT0S");
    assertThatThrownBy(() -> b.maxPending(0)).hasMessage("maxPending must be in [1, 1e6], was 0");
  }
}
