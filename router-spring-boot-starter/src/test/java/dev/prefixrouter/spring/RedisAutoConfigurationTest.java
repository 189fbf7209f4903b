package dev.prefixrouter.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.BackendSnapshot;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteDecision;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.api.spi.SessionPins;
import dev.prefixrouter.api.spi.TenantLimiter;
import dev.prefixrouter.redis.RedisMembershipSync;
import dev.prefixrouter.redis.RedisPredictionSharing;
import dev.prefixrouter.redis.RedisSessionPins;
import dev.prefixrouter.redis.RedisTenantLimiter;
import dev.prefixrouter.scoring.InProcessSessionPins;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** Two replicas (two contexts) sharing state through the shared Redis at 127.0.0.1:6379. */
class RedisAutoConfigurationTest {
  private final String prefix = "prefixrouter-test:" + UUID.randomUUID() + ":";
  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(
              AutoConfigurations.of(
                  PrefixRouterAutoConfiguration.class, RedisAutoConfiguration.class))
          .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
          .withPropertyValues(
              "prefix-router.backends[0].id=b0",
              "prefix-router.backends[0].models=m",
              "prefix-router.backends[1].id=b1",
              "prefix-router.backends[1].models=m");

  @AfterEach
  void deleteKeys() {
    RedisClient client = RedisClient.create("redis://127.0.0.1:6379");
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      List<String> keys = c.sync().keys(prefix + "*");
      if (!keys.isEmpty()) {
        c.sync().del(keys.toArray(String[]::new));
      }
    } finally {
      client.shutdown();
    }
  }

  @Test
  void offByDefault() {
    runner.run(
        ctx -> {
          assertThat(ctx).doesNotHaveBean(RedisPredictionSharing.class);
          assertThat(ctx).doesNotHaveBean(RedisMembershipSync.class);
        });
  }

  /**
   * An application's own {@code SessionPins} bean replaces the shared pins: the Redis pins were
   * made beside it, and with two candidates the scorer took neither.
   */
  @Test
  void anApplicationsOwnSessionPinsReplaceTheSharedOnes() {
    shared()
        .withBean(
            SessionPins.class,
            () -> InProcessSessionPins.create(java.time.Duration.ofMinutes(5), 1_000))
        .run(
            ctx -> {
              assertThat(ctx).doesNotHaveBean(RedisSessionPins.class);
              assertThat(ctx).hasSingleBean(SessionPins.class);
            });
  }

  @Test
  void sessionPinsSharedByDefaultQuotasOptIn() {
    shared()
        .run(
            ctx -> {
              assertThat(ctx).hasSingleBean(RedisSessionPins.class);
              assertThat(ctx).doesNotHaveBean(RedisTenantLimiter.class);
              assertThat(ctx.getBean(TenantLimiter.class))
                  .isNotInstanceOf(RedisTenantLimiter.class);
            });
    shared()
        .withPropertyValues(
            "prefix-router.redis.share-session-pins=false",
            "prefix-router.redis.share-quotas=true",
            "prefix-router.limiter.tokens-per-minute=1000")
        .run(
            ctx -> {
              assertThat(ctx).doesNotHaveBean(RedisSessionPins.class);
              assertThat(ctx.getBean(TenantLimiter.class)).isInstanceOf(RedisTenantLimiter.class);
            });
    shared() // session affinity off: no pins to share
        .withPropertyValues("prefix-router.scorer.max-sessions=0")
        .run(ctx -> assertThat(ctx).doesNotHaveBean(RedisSessionPins.class));
  }

  @Test
  void sharedQuotasWithoutAQuotaFailNamingTheProperty() {
    shared()
        .withPropertyValues("prefix-router.redis.share-quotas=true")
        .run(
            ctx ->
                assertThat(ctx.getStartupFailure())
                    .hasRootCauseMessage(
                        "prefix-router.redis.share-quotas: needs a quota: set"
                            + " prefix-router.limiter.tokens-per-minute or"
                            + " prefix-router.limiter.tenants"));
    shared()
        .withPropertyValues(
            "prefix-router.redis.share-quotas=true",
            "prefix-router.limiter.tokens-per-minute=1000",
            "prefix-router.redis.expected-replicas=0")
        .run(
            ctx ->
                assertThat(ctx.getStartupFailure())
                    .hasStackTraceContaining(
                        "PrefixRouterPropertyException: prefix-router.redis.expected-replicas:"
                            + " expectedReplicas must be in [1, 1024], was 0"));
  }

  /**
   * A session routed through replica A is pinned in Redis; replica B, which never saw it, routes
   * the session's next turn to the same backend by session affinity (without the shared pins B has
   * no pin, and the reason differs).
   */
  @Test
  void sessionPinnedThroughOneReplicaIsHonouredOnAnother() {
    ApplicationContextRunner replica = shared();
    replica.run(
        a ->
            replica.run(
                b -> {
                  RedisSessionPins pa = a.getBean(RedisSessionPins.class);
                  RedisSessionPins pb = b.getBean(RedisSessionPins.class);
                  await(() -> pa.redisUp() && pb.redisUp());
                  RoutingEngine ea = a.getBean(RoutingEngine.class);
                  RoutingEngine eb = b.getBean(RoutingEngine.class);
                  Random rnd = new Random(7);
                  for (int i = 0; i < 6; i++) {
                    String session = "chat-" + i;
                    Routed first = routed(ea.route(turn(session, rnd)));
                    first.lease().complete(Usage.of(first.promptTokens(), 1));
                    int received = i + 1;
                    await(() -> pb.stats().received() >= received);
                    Routed next = routed(eb.route(turn(session, rnd)));
                    next.lease().complete(Usage.of(next.promptTokens(), 1));
                    assertThat(next.backendId())
                        .as("%s on B", session)
                        .isEqualTo(first.backendId());
                    assertThat(next.reason()).contains("session affinity");
                  }
                  // counted when Redis has answered the write, which B may see before A does
                  await(() -> pa.stats().written() == 6);
                  assertThat(pa.stats().written()).isEqualTo(6);
                }));
  }

  /**
   * A replica that starts after the pins were made routes a session's first request there on its
   * own (a miss), then adopts the fleet's pin instead of moving the session: the next request goes
   * to the pinned backend. A's leases stay open so its sessions spread over both backends, and at
   * least one lands where B would not have put it.
   */
  @Test
  void lateReplicaAdoptsTheFleetsPinInsteadOfMovingTheSession() {
    // without future-wait, B (no load of its own) puts every new session on one backend, so some
    // land where A's open leases did not: the adoption this test is about needs such a session.
    // Without parallel-start: each session's next request follows its first within milliseconds
    // here, which would make it a parallel sibling, released from the pin
    ApplicationContextRunner replica =
        shared()
            .withPropertyValues(
                "prefix-router.scorer.future-wait=0", "prefix-router.scorer.parallel-start=0");
    replica.run(
        a -> {
          RedisSessionPins pa = a.getBean(RedisSessionPins.class);
          await(pa::redisUp);
          Random rnd = new Random(11);
          RoutingEngine ea = a.getBean(RoutingEngine.class);
          List<Routed> pinned = new java.util.ArrayList<>();
          for (int i = 0; i < 4; i++) {
            pinned.add(routed(ea.route(turn("late-" + i, rnd))));
          }
          await(() -> pa.stats().written() == 4);
          replica.run(
              b -> {
                RedisSessionPins pb = b.getBean(RedisSessionPins.class);
                await(pb::redisUp);
                RoutingEngine eb = b.getBean(RoutingEngine.class);
                int moved = 0;
                for (int i = 0; i < 4; i++) {
                  String session = "late-" + i;
                  String fleet = pinned.get(i).backendId();
                  Routed miss = routed(eb.route(turn(session, rnd)));
                  miss.lease().complete(Usage.of(miss.promptTokens(), 1));
                  assertThat(miss.reason()).doesNotContain("session affinity");
                  if (!miss.backendId().equals(fleet)) {
                    int adopted = ++moved;
                    await(() -> pb.stats().adopted() == adopted);
                  }
                  Routed next = routed(eb.route(turn(session, rnd)));
                  next.lease().complete(Usage.of(next.promptTokens(), 1));
                  assertThat(next.backendId()).as(session).isEqualTo(fleet);
                  assertThat(next.reason()).contains("session affinity");
                }
                assertThat(moved).as("sessions B would have put elsewhere").isPositive();
                assertThat(pb.stats().written()).as("B moved no session").isZero();
              });
          pinned.forEach(r -> r.lease().complete(Usage.of(r.promptTokens(), 1)));
        });
  }

  /**
   * Two replicas with {@code share-quotas} admit one fleet quota between them: a burst from both
   * for a second takes the bucket's capacity and its refill, plus at most a few chunks of credit,
   * not twice the capacity as two per-replica buckets would.
   */
  @Test
  void twoReplicasShareOneTenantQuota() {
    long perMinute = 600_000; // 10,000 tokens/s; lease chunk 1,000 tokens (100 ms of refill)
    ApplicationContextRunner replica =
        shared()
            .withPropertyValues(
                "prefix-router.redis.share-quotas=true",
                "prefix-router.redis.expected-replicas=2",
                // a lease round trip on a loaded host may take over the default 100 ms, which
                // would admit from the local share: this test is about the shared bucket
                "prefix-router.redis.lease-wait=1500ms",
                "prefix-router.limiter.tokens-per-minute=" + perMinute);
    replica.run(
        a ->
            replica.run(
                b -> {
                  RedisTenantLimiter la = a.getBean(RedisTenantLimiter.class);
                  RedisTenantLimiter lb = b.getBean(RedisTenantLimiter.class);
                  await(() -> la.redisUp() && lb.redisUp());
                  RoutingEngine[] engines = {
                    a.getBean(RoutingEngine.class), b.getBean(RoutingEngine.class)
                  };
                  long admitted = 0;
                  long start = System.nanoTime();
                  long end = start + TimeUnit.MILLISECONDS.toNanos(1500);
                  // at least 1.5 s, and on a host too loaded to route 90 % of the quota in that
                  // time, on until it has (at most 20 s): the bound below counts the refill of
                  // the whole run
                  long latest = start + TimeUnit.SECONDS.toNanos(20);
                  for (int i = 0;
                      System.nanoTime() < end
                          || (admitted < perMinute * 9 / 10 && System.nanoTime() < latest);
                      i++) {
                    RouteDecision d =
                        engines[i & 1].route(
                            RouteRequest.builder("t", "m")
                                .prompt(Prompt.ofTokens(new int[99]))
                                .maxOutputTokens(1)
                                .build());
                    if (d instanceof Routed r) {
                      r.lease().complete(Usage.of(99, 1));
                      admitted += 100;
                    } else if ((i & 1023) == 0) {
                      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
                    }
                  }
                  double seconds = (System.nanoTime() - start) / 1e9;
                  long refill = (long) (perMinute / 60.0 * seconds);
                  assertThat(admitted)
                      .as(
                          "fleet admitted in %.2f s (leases a %d, b %d)",
                          seconds, la.leases(), lb.leases())
                      .isGreaterThanOrEqualTo(perMinute * 9 / 10)
                      .isLessThanOrEqualTo(perMinute + refill + 8 * 1_000);
                  assertThat(la.leases()).isPositive();
                  assertThat(lb.leases()).isPositive();
                  assertThat(la.fallbackAdmissions() + lb.fallbackAdmissions()).isZero();
                }));
  }

  /** A replica on the shared Redis with this test's key prefix. */
  private ApplicationContextRunner shared() {
    return runner.withPropertyValues(
        "prefix-router.redis.enabled=true",
        "prefix-router.redis.uri=redis://127.0.0.1:6379",
        "prefix-router.redis.key-prefix=" + prefix,
        "prefix-router.redis.retry-interval=20ms",
        "prefix-router.redis.command-timeout=2s"); // a loaded CI host may stall 250 ms
  }

  /** A 128-token turn of {@code session} (random tokens: no prefix shared with other turns). */
  private static RouteRequest turn(String session, Random rnd) {
    int[] tokens = new int[128];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = rnd.nextInt(50_000);
    }
    return RouteRequest.builder("t", "m")
        .prompt(Prompt.ofTokens(tokens))
        .maxOutputTokens(1)
        .session(session)
        .build();
  }

  private static Routed routed(RouteDecision d) {
    assertThat(d).isInstanceOf(Routed.class);
    return (Routed) d;
  }

  @Test
  void enabledWithoutUriFailsNamingTheProperty() {
    runner
        .withPropertyValues("prefix-router.redis.enabled=true")
        .run(
            ctx ->
                assertThat(ctx.getStartupFailure())
                    .hasRootCauseMessage("prefix-router.redis.uri: is required when enabled"));
  }

  @Test
  void twoReplicasShareDrainsAndPredictions() {
    ApplicationContextRunner replica = shared();
    replica.run(
        a ->
            replica.run(
                b -> {
                  RedisPredictionSharing sa = a.getBean(RedisPredictionSharing.class);
                  RedisPredictionSharing sb = b.getBean(RedisPredictionSharing.class);
                  RedisMembershipSync mb = b.getBean(RedisMembershipSync.class);
                  await(() -> sa.redisUp() && sb.redisUp() && mb.redisUp());

                  RoutingEngine ea = a.getBean(RoutingEngine.class);
                  RoutingEngine eb = b.getBean(RoutingEngine.class);
                  ea.backends().drain("b0");
                  await(() -> draining(eb, "b0"));

                  Object d =
                      ea.route(
                          RouteRequest.builder("t", "m")
                              .prompt(Prompt.ofTokens(new int[64]))
                              .maxOutputTokens(1)
                              .build());
                  long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
                  while (sb.stats().applied() != 1 && System.nanoTime() < deadline) {
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
                  }
                  assertThat(sb.stats().applied())
                      .as("%s; a %s; b %s", d, sa.stats(), sb.stats())
                      .isEqualTo(1);

                  HealthIndicator health =
                      b.getBean("prefixRouterRedisHealthIndicator", HealthIndicator.class);
                  assertThat(health.health().getDetails())
                      .containsEntry("predictions", "shared")
                      .containsEntry("membership", "shared");
                  MeterRegistry registry = new SimpleMeterRegistry();
                  b.getBean("prefixRouterRedisMeters", MeterBinder.class).bindTo(registry);
                  assertThat(
                          registry
                              .get("prefixrouter.redis.up")
                              .tag("part", "predictions")
                              .gauge()
                              .value())
                      .isEqualTo(1.0);
                  assertThat(
                          registry
                              .get("prefixrouter.redis.predictions.applied")
                              .functionCounter()
                              .count())
                      .isEqualTo(1.0);
                }));
  }

  /**
   * A backend added at runtime with a URL on one replica gets that URL on the others, and a change
   * of URL (removed, then added again with another) moves them too: each replica's URL map used to
   * keep what it had (none, or the old host), so the others never polled or subscribed to the new
   * one, or kept the old host's events on the backend's slot.
   */
  @Test
  void twoReplicasShareBackendUrls() {
    ApplicationContextRunner replica = shared();
    replica.run(
        a ->
            replica.run(
                b -> {
                  RedisMembershipSync ma = a.getBean(RedisMembershipSync.class);
                  RedisMembershipSync mb = b.getBean(RedisMembershipSync.class);
                  await(() -> ma.redisUp() && mb.redisUp());
                  RoutingEngine ea = a.getBean(RoutingEngine.class);
                  RoutingEngine eb = b.getBean(RoutingEngine.class);
                  BackendUrls ua = a.getBean(BackendUrls.class);
                  BackendUrls ub = b.getBean(BackendUrls.class);

                  ua.put("b2", "http://10.0.0.7:8000"); // as the actuator's add does: URL first
                  ea.backends().add(dev.prefixrouter.api.Backend.of("b2", "m"));
                  await(() -> eb.backends().get("b2").isPresent());
                  assertThat(ub.get("b2")).isEqualTo("http://10.0.0.7:8000");

                  ea.backends().remove("b2");
                  ua.remove("b2");
                  ua.put("b2", "http://10.0.0.8:8000");
                  ea.backends().add(dev.prefixrouter.api.Backend.of("b2", "m"));
                  await(() -> "http://10.0.0.8:8000".equals(ub.get("b2")));
                  assertThat(eb.backends().get("b2")).isPresent();

                  ea.backends().remove("b2");
                  await(() -> eb.backends().get("b2").isEmpty() && ub.get("b2") == null);
                }));
  }

  private static boolean draining(RoutingEngine e, String id) {
    return e.inspect().backends().stream()
        .filter(x -> x.backend().id().equals(id))
        .anyMatch(BackendSnapshot::draining);
  }

  /** Polls what another thread (Redis, the workers) makes true, at most 15 s. */
  private static void await(BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime() - deadline).as("condition not met within 15 s").isNegative();
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
    }
  }
}
