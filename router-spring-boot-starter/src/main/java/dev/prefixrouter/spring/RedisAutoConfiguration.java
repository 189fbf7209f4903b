package dev.prefixrouter.spring;

import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.redis.RedisMembershipSync;
import dev.prefixrouter.redis.RedisPredictionSharing;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Duration;
import java.util.function.Consumer;
import java.util.function.ToDoubleFunction;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Several replicas route as one, when router-redis is on the classpath and {@code
 * prefix-router.redis.enabled=true}: a {@link RedisPredictionSharing} is the engine's prediction
 * sink, a {@link RedisMembershipSync} one of its listeners, and both attach to the engine once the
 * context is up. A health indicator ({@code prefixRouterRedis}) and meters {@code
 * prefixrouter.redis.*} say whether Redis answers. A user's own bean of either type replaces it.
 */
@AutoConfiguration(before = PrefixRouterAutoConfiguration.class)
@ConditionalOnClass(RedisPredictionSharing.class)
@ConditionalOnProperty(prefix = "prefix-router.redis", name = "enabled", havingValue = "true")
@EnableConfigurationProperties(RedisProperties.class)
public class RedisAutoConfiguration {
  private static final String PREFIX = "prefix-router.redis";

  private static String uri(RedisProperties r) {
    String uri = r.getUri();
    if (uri == null || uri.isBlank()) {
      throw new PrefixRouterPropertyException(PREFIX + ".uri", "is required when enabled");
    }
    return uri;
  }

  /**
   * Applies the settings every Redis part shares (key prefix, replica id when set, command timeout,
   * retry interval), each failure reported under its property's name.
   */
  private static void common(
      RedisProperties r,
      Consumer<String> keyPrefix,
      Consumer<String> replicaId,
      Consumer<Duration> commandTimeout,
      Consumer<Duration> retryInterval) {
    PrefixRouterPropertyException.naming(
        PREFIX + ".key-prefix", () -> keyPrefix.accept(r.getKeyPrefix()));
    String id = r.getReplicaId();
    if (id != null) {
      PrefixRouterPropertyException.naming(PREFIX + ".replica-id", () -> replicaId.accept(id));
    }
    PrefixRouterPropertyException.naming(
        PREFIX + ".command-timeout", () -> commandTimeout.accept(r.getCommandTimeout()));
    PrefixRouterPropertyException.naming(
        PREFIX + ".retry-interval", () -> retryInterval.accept(r.getRetryInterval()));
  }

  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  @ConditionalOnProperty(
      prefix = PREFIX,
      name = "share-predictions",
      havingValue = "true",
      matchIfMissing = true)
  public RedisPredictionSharing prefixRouterRedisPredictionSharing(RedisProperties r) {
    RedisPredictionSharing.Builder b = RedisPredictionSharing.builder(uri(r));
    common(r, b::keyPrefix, b::replicaId, b::commandTimeout, b::retryInterval);
    b.shareOnlyNewBlocks(r.isShareOnlyNewBlocks());
    return b.build();
  }

  /** Makes the sharing the engine's prediction sink. */
  @Bean
  @ConditionalOnMissingBean(name = "prefixRouterRedisSinkCustomizer")
  public RoutingEngineBuilderCustomizer prefixRouterRedisSinkCustomizer(
      ObjectProvider<RedisPredictionSharing> sharing) {
    return b -> sharing.ifAvailable(b::predictionSink);
  }

  /** A listener of the engine (collected with the other listener beans). */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  @ConditionalOnProperty(
      prefix = PREFIX,
      name = "share-membership",
      havingValue = "true",
      matchIfMissing = true)
  public RedisMembershipSync prefixRouterRedisMembershipSync(RedisProperties r) {
    RedisMembershipSync.Builder b = RedisMembershipSync.builder(uri(r));
    common(r, b::keyPrefix, b::replicaId, b::commandTimeout, b::retryInterval);
    return b.build();
  }

  /** Attaches both to the engine once every singleton exists. */
  @Bean
  SmartInitializingSingleton prefixRouterRedisAttach(
      ObjectProvider<RoutingEngine> engine,
      ObjectProvider<RedisPredictionSharing> sharing,
      ObjectProvider<RedisMembershipSync> membership) {
    return () ->
        engine.ifAvailable(
            e -> {
              sharing.ifAvailable(s -> s.attach(e));
              membership.ifAvailable(m -> m.attach(e));
            });
  }

  /**
   * UP whether or not Redis answers (routing never depends on it), with {@code predictions} and
   * {@code membership} each {@code shared} or {@code local only}: alert on the meter {@code
   * prefixrouter.redis.up}, not on this status, which must not take a working replica out.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
  static class RedisHealthConfiguration {
    @Bean
    @ConditionalOnMissingBean(name = "prefixRouterRedisHealthIndicator")
    HealthIndicator prefixRouterRedisHealthIndicator(
        ObjectProvider<RedisPredictionSharing> sharing,
        ObjectProvider<RedisMembershipSync> membership) {
      return () -> {
        Health.Builder h = Health.up();
        RedisPredictionSharing s = sharing.getIfAvailable();
        if (s != null) {
          h.withDetail("predictions", s.redisUp() ? "shared" : "local only");
        }
        RedisMembershipSync m = membership.getIfAvailable();
        if (m != null) {
          h.withDetail("membership", m.redisUp() ? "shared" : "local only");
        }
        return h.build();
      };
    }
  }

  /** Meters, when Micrometer is present. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.micrometer.core.instrument.MeterRegistry")
  static class RedisMetricsConfiguration {
    @Bean
    MeterBinder prefixRouterRedisMeters(
        ObjectProvider<RedisPredictionSharing> sharing,
        ObjectProvider<RedisMembershipSync> membership) {
      return registry -> {
        sharing.ifAvailable(s -> bindSharing(registry, s));
        membership.ifAvailable(m -> bindMembership(registry, m));
      };
    }

    static void bindSharing(MeterRegistry r, RedisPredictionSharing s) {
      Gauge.builder("prefixrouter.redis.up", s, x -> x.redisUp() ? 1 : 0)
          .tag("part", "predictions")
          .description("1 while Redis answers, 0 while routing on local state")
          .register(r);
      counter(r, s, "prefixrouter.redis.transitions", "predictions", x -> x.stats().transitions());
      counter(r, s, "prefixrouter.redis.predictions.published", null, x -> x.stats().published());
      counter(r, s, "prefixrouter.redis.predictions.applied", null, x -> x.stats().applied());
      counter(
          r,
          s,
          "prefixrouter.redis.predictions.dropped",
          null,
          x -> {
            var st = x.stats();
            return st.droppedFull() + st.droppedDown() + st.droppedPublishFailed();
          });
    }

    static void bindMembership(MeterRegistry r, RedisMembershipSync m) {
      Gauge.builder("prefixrouter.redis.up", m, x -> x.redisUp() ? 1 : 0)
          .tag("part", "membership")
          .description("1 while Redis answers, 0 while membership changes stay local")
          .register(r);
      counter(r, m, "prefixrouter.redis.transitions", "membership", x -> x.stats().transitions());
      Gauge.builder("prefixrouter.redis.membership.pending", m, x -> x.stats().pending())
          .description("backend ids changed here, not yet written to Redis")
          .register(r);
    }

    private static <T> void counter(
        MeterRegistry r, T obj, String name, String part, ToDoubleFunction<T> f) {
      FunctionCounter.Builder<T> b = FunctionCounter.builder(name, obj, f);
      if (part != null) {
        b.tag("part", part);
      }
      b.register(r);
    }
  }
}
