package dev.prefixrouter.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.BackendSnapshot;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.redis.RedisMembershipSync;
import dev.prefixrouter.redis.RedisPredictionSharing;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
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
    ApplicationContextRunner replica =
        runner.withPropertyValues(
            "prefix-router.redis.enabled=true",
            "prefix-router.redis.uri=redis://127.0.0.1:6379",
            "prefix-router.redis.key-prefix=" + prefix,
            "prefix-router.redis.retry-interval=20ms",
            "prefix-router.redis.command-timeout=2s"); // a loaded CI host may stall 250 ms
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
