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

  @Test
  void builderNamesTheFieldAndBound() {
    RedisSessionPins.Builder b = RedisSessionPins.builder(SharedRedis.URI);
    assertThatThrownBy(() -> b.ttl(Duration.ZERO))
        .hasMessage("ttl must be in [1 s, 1 day], was PT0S");
    assertThatThrownBy(() -> b.maxPending(0)).hasMessage("maxPending must be in [1, 1e6], was 0");
  }
}
