package dev.prefixrouter.spring;

import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.spi.SessionPins;
import dev.prefixrouter.api.spi.TenantLimiter;
import dev.prefixrouter.redis.FleetQuota;
import dev.prefixrouter.redis.RedisMembershipSync;
import dev.prefixrouter.redis.RedisPartBuilder;
import dev.prefixrouter.redis.RedisPredictionSharing;
import dev.prefixrouter.redis.RedisSessionPins;
import dev.prefixrouter.redis.RedisTenantLimiter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
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
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Several replicas route as one, when router-redis is on the classpath and {@code
 * prefix-router.redis.enabled=true}: a {@link RedisPredictionSharing} is the engine's prediction
 * sink, a {@link RedisMembershipSync} one of its listeners, and both attach to the engine once the
 * context is up; a {@link RedisSessionPins} is the est-ttft scorer's pin store ({@code
 * share-session-pins}, on by default); with {@code share-quotas=true} a {@link RedisTenantLimiter}
 * built from {@code prefix-router.limiter.*} is the engine's tenant limiter, so the quotas hold for
 * the fleet. A health indicator ({@code prefixRouterRedis}) and meters {@code prefixrouter.redis.*}
 * say whether Redis answers. A user's own bean of any of these types (for the limiter: any {@link
 * TenantLimiter}) replaces it.
 */
@AutoConfiguration(before = PrefixRouterAutoConfiguration.class)
@ConditionalOnClass(RedisPredictionSharing.class)
@ConditionalOnProperty(prefix = "prefix-router.redis", name = "enabled", havingValue = "true")
@EnableConfigurationProperties({RedisProperties.class, PrefixRouterProperties.class})
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
  private static void common(RedisProperties r, RedisPartBuilder<?> b) {
    PrefixRouterPropertyException.naming(
        PREFIX + ".key-prefix", () -> b.keyPrefix(r.getKeyPrefix()));
    String id = r.getReplicaId();
    if (id != null) {
      PrefixRouterPropertyException.naming(PREFIX + ".replica-id", () -> b.replicaId(id));
    }
    PrefixRouterPropertyException.naming(
        PREFIX + ".command-timeout", () -> b.commandTimeout(r.getCommandTimeout()));
    PrefixRouterPropertyException.naming(
        PREFIX + ".retry-interval", () -> b.retryInterval(r.getRetryInterval()));
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
    common(r, b);
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
  public RedisMembershipSync prefixRouterRedisMembershipSync(
      RedisProperties r, ObjectProvider<BackendUrls> backendUrls) {
    RedisMembershipSync.Builder b = RedisMembershipSync.builder(uri(r));
    common(r, b);
    BackendUrls urls = backendUrls.getIfAvailable(); // none with an application's own engine
    if (urls != null) {
      b.urls(
          urls::get,
          (id, url) -> {
            if (url == null) {
              urls.remove(id);
            } else {
              urls.put(id, url);
            }
          });
    }
    return b.build();
  }

  /**
   * The session pins of the est-ttft scorer, shared by the fleet: the scorer's {@code session-ttl}
   * and {@code max-sessions} (local cache) apply. Not created when session affinity is off ({@code
   * max-sessions=0}) or the policy is not est-ttft. An application's own {@code Scorer} gets it by
   * injection ({@code EstimatedTtftScorer.builder().sessionPins(pins)}).
   */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean(SessionPins.class) // an application's own pins win (any SessionPins)
  @ConditionalOnProperty(
      prefix = PREFIX,
      name = "share-session-pins",
      havingValue = "true",
      matchIfMissing = true)
  @Conditional(SessionAffinityOn.class)
  public RedisSessionPins prefixRouterRedisSessionPins(
      RedisProperties r, PrefixRouterProperties p) {
    RedisSessionPins.Builder b = RedisSessionPins.builder(uri(r));
    common(r, b);
    PrefixRouterPropertyException.naming(
        "prefix-router.scorer.session-ttl", () -> b.ttl(p.getScorer().getSessionTtl()));
    PrefixRouterPropertyException.naming(
        "prefix-router.scorer.max-sessions",
        () -> b.maxLocalSessions(p.getScorer().getMaxSessions()));
    return b.build();
  }

  /** True when the starter's scorer is est-ttft with session affinity on. */
  static final class SessionAffinityOn implements Condition {
    @Override
    public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
      var env = context.getEnvironment();
      return "est-ttft".equals(env.getProperty("prefix-router.scorer.policy", "est-ttft"))
          && env.getProperty("prefix-router.scorer.max-sessions", Long.class, 100_000L) != 0;
    }
  }

  /**
   * Tenant quotas for the fleet: {@code prefix-router.limiter.tokens-per-minute} and {@code
   * tenants} become fleet buckets in Redis, leased in chunks ({@link RedisTenantLimiter}); {@code
   * expected-replicas} sizes each replica's share while Redis is unreachable. The engine's limiter
   * (the starter's default limiter backs off).
   */
  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean(TenantLimiter.class)
  @ConditionalOnProperty(prefix = PREFIX, name = "share-quotas", havingValue = "true")
  public RedisTenantLimiter prefixRouterRedisTenantLimiter(
      RedisProperties r, PrefixRouterProperties p, org.springframework.core.env.Environment env) {
    MapKeys.check(env);
    PrefixRouterProperties.Limiter l = p.getLimiter();
    if (l.getTokensPerMinute() == 0 && l.getTenants().isEmpty()) {
      throw new PrefixRouterPropertyException(
          PREFIX + ".share-quotas",
          "needs a quota: set prefix-router.limiter.tokens-per-minute or"
              + " prefix-router.limiter.tenants");
    }
    RedisTenantLimiter.Builder b = RedisTenantLimiter.builder(uri(r));
    common(r, b);
    PrefixRouterPropertyException.naming(
        PREFIX + ".expected-replicas", () -> b.expectedReplicas(r.getExpectedReplicas()));
    PrefixRouterPropertyException.naming(
        PREFIX + ".lease-wait", () -> b.leaseWait(r.getLeaseWait()));
    PrefixRouterPropertyException.naming(
        "prefix-router.limiter.max-tenants", () -> b.maxTenants(l.getMaxTenants()));
    PrefixRouterPropertyException.naming(
        "prefix-router.limiter.tokens-per-minute",
        () ->
            b.defaultQuota(
                FleetQuota.perMinute(
                    l.getTokensPerMinute() == 0 ? FleetQuota.MAX_TOKENS : l.getTokensPerMinute())));
    l.getTenants()
        .forEach(
            (tenant, tpm) ->
                PrefixRouterPropertyException.naming(
                    "prefix-router.limiter.tenants." + tenant,
                    () -> b.quota(tenant, FleetQuota.perMinute(tpm))));
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
   * UP whether or not Redis answers (routing never depends on it), with {@code predictions}, {@code
   * membership} and {@code sessionPins} each {@code shared} or {@code local only}, and {@code
   * quotas} {@code shared} or {@code local share} (each replica its 1/expected-replicas): alert on
   * the meter {@code prefixrouter.redis.up}, not on this status, which must not take a working
   * replica out.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
  static class RedisHealthConfiguration {
    @Bean
    @ConditionalOnMissingBean(name = "prefixRouterRedisHealthIndicator")
    HealthIndicator prefixRouterRedisHealthIndicator(
        ObjectProvider<RedisPredictionSharing> sharing,
        ObjectProvider<RedisMembershipSync> membership,
        ObjectProvider<RedisSessionPins> pins,
        ObjectProvider<RedisTenantLimiter> quotas) {
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
        RedisSessionPins sp = pins.getIfAvailable();
        if (sp != null) {
          h.withDetail("sessionPins", sp.redisUp() ? "shared" : "local only");
        }
        RedisTenantLimiter q = quotas.getIfAvailable();
        if (q != null) {
          h.withDetail("quotas", q.redisUp() ? "shared" : "local share");
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
        ObjectProvider<RedisMembershipSync> membership,
        ObjectProvider<RedisSessionPins> pins,
        ObjectProvider<RedisTenantLimiter> quotas) {
      return registry -> {
        sharing.ifAvailable(s -> bindSharing(registry, s));
        membership.ifAvailable(m -> bindMembership(registry, m));
        pins.ifAvailable(p -> bindPins(registry, p));
        quotas.ifAvailable(q -> bindQuotas(registry, q));
      };
    }

    static void bindPins(MeterRegistry r, RedisSessionPins p) {
      Gauge.builder("prefixrouter.redis.up", p, x -> x.redisUp() ? 1 : 0)
          .tag("part", "session-pins")
          .description("1 while Redis answers, 0 while session pins stay local")
          .register(r);
      counter(r, p, "prefixrouter.redis.transitions", "session-pins", x -> x.stats().transitions());
      counter(r, p, "prefixrouter.redis.pins.written", null, x -> x.stats().written());
      counter(r, p, "prefixrouter.redis.pins.received", null, x -> x.stats().received());
      counter(r, p, "prefixrouter.redis.pins.dropped", null, x -> x.stats().droppedPending());
    }

    static void bindQuotas(MeterRegistry r, RedisTenantLimiter q) {
      Gauge.builder("prefixrouter.redis.up", q, x -> x.redisUp() ? 1 : 0)
          .tag("part", "quotas")
          .description("1 while Redis answers, 0 while each replica admits its local share")
          .register(r);
      counter(r, q, "prefixrouter.redis.transitions", "quotas", RedisTenantLimiter::transitions);
      counter(r, q, "prefixrouter.redis.quota.leases", null, RedisTenantLimiter::leases);
      counter(
          r,
          q,
          "prefixrouter.redis.quota.fallback.admissions",
          null,
          RedisTenantLimiter::fallbackAdmissions);
      counter(
          r,
          q,
          "prefixrouter.redis.quota.dropped.lease.requests",
          null,
          RedisTenantLimiter::droppedLeaseRequests);
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
