package dev.prefixrouter.spring;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.RoutingEngineBuilder;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.api.spi.HealthPolicy;
import dev.prefixrouter.api.spi.PrefixIndex;
import dev.prefixrouter.api.spi.RoutingListener;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.TenantLimiter;
import dev.prefixrouter.radix.BlockHashers;
import dev.prefixrouter.radix.RadixPrefixIndex;
import dev.prefixrouter.scoring.CircuitBreakers;
import dev.prefixrouter.scoring.EstimatedTtftScorer;
import dev.prefixrouter.scoring.Policies;
import dev.prefixrouter.scoring.Quota;
import dev.prefixrouter.scoring.TenantTokenBuckets;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Creates a {@link RoutingEngine} from {@code prefix-router.*} with the default parts — chained
 * block hashing, {@link RadixPrefixIndex}, {@link EstimatedTtftScorer}, {@link TenantTokenBuckets},
 * {@link CircuitBreakers} — each a {@code @ConditionalOnMissingBean} so an application can replace
 * any one, plus {@link RoutingEngineBuilderCustomizer}s and {@link RoutingListener} beans. A user's
 * own {@code RoutingEngine} bean replaces the whole engine. Invalid properties fail startup with
 * the property path in the message.
 */
@AutoConfiguration
@EnableConfigurationProperties(PrefixRouterProperties.class)
@ConditionalOnProperty(
    prefix = "prefix-router",
    name = "enabled",
    havingValue = "true",
    matchIfMissing = true)
public class PrefixRouterAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  public BlockHasher prefixRouterBlockHasher(PrefixRouterProperties p) {
    PrefixRouterProperties.Hashing h = p.getHashing();
    return switch (h.getKind()) {
      case "tokens" ->
          guard("prefix-router.hashing.block-size", () -> BlockHashers.tokens(h.getBlockSize()));
      case "chars" ->
          guard("prefix-router.hashing.block-chars", () -> BlockHashers.chars(h.getBlockChars()));
      default ->
          throw new IllegalStateException(
              "prefix-router.hashing.kind must be 'tokens' or 'chars', was '" + h.getKind() + "'");
    };
  }

  @Bean
  @ConditionalOnMissingBean
  public PrefixIndex prefixRouterIndex(PrefixRouterProperties p) {
    return guard(
        "prefix-router.index",
        () ->
            RadixPrefixIndex.builder()
                .maxBackends(p.getMaxBackends())
                .defaultCapacityBlocks(p.getIndex().getDefaultCapacityBlocks())
                .predictionTtl(p.getIndex().getPredictionTtl())
                .build());
  }

  @Bean
  @ConditionalOnMissingBean
  public Scorer prefixRouterScorer(PrefixRouterProperties p) {
    PrefixRouterProperties.Scorer s = p.getScorer();
    if (s.getPolicy().equals("est-ttft")) {
      return guard(
          "prefix-router.scorer",
          () ->
              EstimatedTtftScorer.builder()
                  .calibrate(s.isCalibrate())
                  .sessions(s.getSessionTtl(), s.getMaxSessions())
                  .prefixAffinity(s.getPrefixAffinityRatio(), s.getPrefixAffinityMaxWaiting())
                  .cachePressure(s.getCachePressure(), s.getCacheTurnoverRatio())
                  .build());
    }
    return guard("prefix-router.scorer.policy", () -> Policies.byName(s.getPolicy()));
  }

  @Bean
  @ConditionalOnMissingBean
  public TenantLimiter prefixRouterLimiter(PrefixRouterProperties p) {
    PrefixRouterProperties.Limiter l = p.getLimiter();
    if (l.getTokensPerMinute() == 0 && l.getTenants().isEmpty()) {
      return TenantLimiter.unlimited();
    }
    return guard(
        "prefix-router.limiter",
        () -> {
          TenantTokenBuckets.Builder b =
              TenantTokenBuckets.builder()
                  .maxTenants(l.getMaxTenants())
                  .defaultQuota(
                      Quota.perMinute(
                          l.getTokensPerMinute() == 0 ? Quota.MAX_TOKENS : l.getTokensPerMinute()));
          for (Map.Entry<String, Long> e : l.getTenants().entrySet()) {
            b.quota(e.getKey(), Quota.perMinute(e.getValue()));
          }
          return b.build();
        });
  }

  @Bean
  @ConditionalOnMissingBean
  public HealthPolicy prefixRouterHealth(PrefixRouterProperties p) {
    PrefixRouterProperties.Breaker b = p.getBreaker();
    return guard(
        "prefix-router.breaker",
        () ->
            CircuitBreakers.builder()
                .maxBackends(Math.max(1, p.getMaxBackends()))
                .consecutiveFailures(b.getConsecutiveFailures())
                .cooldown(b.getCooldown())
                .halfOpenProbes(b.getHalfOpenProbes())
                .build());
  }

  @Bean
  @ConditionalOnMissingBean
  public RoutingEngine routingEngine(
      PrefixRouterProperties p,
      BlockHasher hasher,
      PrefixIndex index,
      Scorer scorer,
      TenantLimiter limiter,
      HealthPolicy health,
      ObjectProvider<RoutingEngineBuilderCustomizer> customizers,
      ObjectProvider<RoutingListener> listeners) {
    RoutingEngineBuilder b =
        guard(
            "prefix-router",
            () ->
                RoutingEngine.builder()
                    .maxBackends(p.getMaxBackends())
                    .retryBudget(p.getRetryBudget())
                    .prefixIsolation(p.isPrefixIsolation()));
    b.hasher(hasher).prefixIndex(index).scorer(scorer).limiter(limiter).health(health);
    List<PrefixRouterProperties.BackendProperties> backends = p.getBackends();
    Set<String> ids = new HashSet<>();
    for (int i = 0; i < backends.size(); i++) {
      PrefixRouterProperties.BackendProperties bp = backends.get(i);
      String path = "prefix-router.backends[" + i + "]";
      if (bp.getId() == null) {
        throw new IllegalStateException(path + ".id is required");
      }
      if (!ids.add(bp.getId())) {
        throw new IllegalStateException(path + ".id '" + bp.getId() + "' is used twice");
      }
      Backend backend =
          guard(
              path,
              () ->
                  new Backend(
                      bp.getId(),
                      Set.copyOf(bp.getModels()),
                      Set.copyOf(bp.getCapabilities()),
                      Map.copyOf(bp.getLabels()),
                      bp.getCapacityBlocks(),
                      bp.getWeight()));
      b.backend(backend);
    }
    p.getModelAliases()
        .forEach(
            (alias, target) ->
                guard("prefix-router.model-aliases", () -> b.modelAlias(alias, target)));
    p.getModelSplits()
        .forEach((model, w) -> guard("prefix-router.model-splits", () -> b.modelSplit(model, w)));
    listeners.orderedStream().forEach(b::listener);
    customizers.orderedStream().forEach(c -> c.customize(b));
    return guard("prefix-router", b::build);
  }

  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnProperty(prefix = "prefix-router.poller", name = "enabled", havingValue = "true")
  public MetricsPoller prefixRouterMetricsPoller(PrefixRouterProperties p, RoutingEngine engine) {
    Map<String, String> urls = new java.util.HashMap<>();
    for (PrefixRouterProperties.BackendProperties b : p.getBackends()) {
      if (b.getId() != null && b.getUrl() != null) {
        urls.put(b.getId(), b.getUrl());
      }
    }
    return guard(
        "prefix-router.poller",
        () ->
            new MetricsPoller(
                engine, urls::get, p.getPoller().getInterval(), p.getPoller().getTimeout()));
  }

  /** The actuator endpoint and health indicator, when Spring Boot Actuator is present. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.actuate.endpoint.annotation.Endpoint")
  static class ActuatorConfiguration {
    @Bean
    @ConditionalOnMissingBean
    PrefixRouterEndpoint prefixRouterEndpoint(RoutingEngine engine) {
      return new PrefixRouterEndpoint(engine);
    }
  }

  /** Health indicator, when Spring Boot's health module is present. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
  static class HealthConfiguration {
    @Bean
    @ConditionalOnMissingBean(name = "prefixRouterHealthIndicator")
    PrefixRouterHealthIndicator prefixRouterHealthIndicator(
        RoutingEngine engine, PrefixRouterProperties p) {
      java.util.Set<String> models = new java.util.TreeSet<>();
      p.getBackends().forEach(b -> models.addAll(b.getModels()));
      return new PrefixRouterHealthIndicator(engine, models);
    }
  }

  /** Micrometer meters, when Micrometer is present. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.micrometer.core.instrument.MeterRegistry")
  static class MetricsConfiguration {
    @Bean
    @ConditionalOnMissingBean
    PrefixRouterMetrics prefixRouterMetrics(
        ObjectProvider<RoutingEngine> engine, org.springframework.core.env.Environment env) {
      return new PrefixRouterMetrics(
          engine, env.getProperty("prefix-router.metrics.tenant-tags", Boolean.class, false));
    }
  }

  /** Runs a builder step, turning a validation error into one naming the property. */
  private static <T> T guard(String property, java.util.function.Supplier<T> step) {
    try {
      return step.get();
    } catch (IllegalArgumentException e) {
      throw new IllegalStateException(property + ": " + e.getMessage(), e);
    }
  }
}
