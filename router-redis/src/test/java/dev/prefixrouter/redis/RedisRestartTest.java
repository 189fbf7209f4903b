package dev.prefixrouter.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Four replicas under load while the test kills its own redis-server and starts a fresh one on the
 * same port: no call throws, replicas that saw the outage admit from their local share meanwhile,
 * and every replica leases from the new server afterwards (its script cache and keys start empty).
 * Bounded: about two seconds of load, each wait at most 15 s.
 */
@Tag("stress")
class RedisRestartTest {

  @Test
  void killAndRestartDuringLoadThrowsNothingAndRecovers() throws Exception {
    try (PrivateRedisServer server = new PrivateRedisServer()) {
      List<RedisTenantLimiter> replicas = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        replicas.add(
            RedisTenantLimiter.builder(server.uri())
                .keyPrefix("restart-test:")
                .defaultQuota(new FleetQuota(20_000, 600_000, Duration.ofMinutes(1)))
                .expectedReplicas(4)
                .commandTimeout(Duration.ofMillis(200))
                .retryInterval(Duration.ofMillis(50))
                .build());
      }
      AtomicBoolean stop = new AtomicBoolean();
      AtomicReference<Throwable> failure = new AtomicReference<>();
      LongAdder calls = new LongAdder();
      List<Thread> load = new ArrayList<>();
      for (int th = 0; th < 2; th++) {
        int seed = th;
        Thread t =
            new Thread(
                () -> {
                  long i = seed;
                  while (!stop.get()) {
                    for (RedisTenantLimiter r : replicas) {
                      String tenant = "t" + (i++ % 8);
                      try {
                        if (r.tryAcquire(tenant, 100, System.nanoTime()).granted()) {
                          r.adjust(tenant, (i % 7) - 3, System.nanoTime());
                        }
                        calls.increment();
                      } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                      }
                    }
                    LockSupport.parkNanos(20_000); // leave the 2 shared cores some room
                  }
                });
        t.start();
        load.add(t);
      }
      try {
        awaitTrue(() -> replicas.stream().allMatch(r -> r.redisUp() && r.leases() > 0));
        server.kill();
        awaitTrue(() -> replicas.stream().anyMatch(r -> r.fallbackAdmissions() > 0));
        long callsWhileDown = calls.sum();
        server.restart();
        long[] leasesAtRestart = replicas.stream().mapToLong(RedisTenantLimiter::leases).toArray();
        awaitTrue(
            () -> {
              for (int i = 0; i < replicas.size(); i++) {
                RedisTenantLimiter r = replicas.get(i);
                if (!r.redisUp() || r.leases() <= leasesAtRestart[i]) {
                  return false;
                }
              }
              return true;
            });
        assertThat(calls.sum()).isGreaterThan(callsWhileDown);
      } finally {
        stop.set(true);
        for (Thread t : load) {
          t.join(TimeUnit.SECONDS.toMillis(10));
        }
        replicas.forEach(RedisTenantLimiter::close);
      }
      assertThat(failure.get()).as("an exception escaped the limiter").isNull();
      assertThat(replicas).anyMatch(r -> r.transitions() >= 3); // up, down, up again
      RedisClient client = RedisClient.create(server.uri());
      try (StatefulRedisConnection<String, String> c = client.connect()) {
        assertThat(c.sync().keys("restart-test:quota:*")).isNotEmpty(); // the new server's buckets
      } finally {
        client.shutdown();
      }
    }
  }

  /** Polls a condition on external processes (a server starting or dying), at most 15 s. */
  private static void awaitTrue(BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime() - deadline).as("condition not met within 15 s").isNegative();
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
    }
  }
}
