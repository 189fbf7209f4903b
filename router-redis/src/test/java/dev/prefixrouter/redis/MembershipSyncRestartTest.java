package dev.prefixrouter.redis;

import static dev.prefixrouter.redis.RedisPredictionSharingTest.await;
import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BackendSnapshot;
import dev.prefixrouter.api.RoutingEngine;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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

  @Test
  void aChangeMadeWhileRedisIsAwayReachesTheFleetAfterARestart() throws Exception {
    try (PrivateRedisServer server = new PrivateRedisServer()) {
      List<RedisMembershipSync> syncs = new ArrayList<>();
      List<RoutingEngine> engines = new ArrayList<>();
      try {
        for (String id : new String[] {"a", "b"}) {
          RedisMembershipSync s =
              RedisMembershipSync.builder(server.uri())
                  .keyPrefix("restart-test:")
                  .replicaId(id)
                  .commandTimeout(Duration.ofMillis(200))
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
}
