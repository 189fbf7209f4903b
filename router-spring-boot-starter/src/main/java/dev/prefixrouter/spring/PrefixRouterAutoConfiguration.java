package dev.prefixrouter.spring;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.CapacityObjective;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.RoutingEngineBuilder;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.api.spi.HealthPolicy;
import dev.prefixrouter.api.spi.PrefixIndex;
import dev.prefixrouter.api.spi.RoutingListener;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.SessionPins;
import dev.prefixrouter.api.spi.TenantLimiter;
import dev.prefixrouter.radix.BlockHashers;
import dev.prefixrouter.radix.RadixPrefixIndex;
import dev.prefixrouter.scoring.CircuitBreakers;
import dev.prefixrouter.scoring.EstimatedTtftScorer;
import dev.prefixrouter.scoring.Policies;
import dev.prefixrouter.scoring.Quota;
import dev.prefixrouter.scoring.TenantTokenBuckets;
import java.time.Duration;
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
 * any one (a {@link SessionPins} bean is the est-ttft scorer's pin store), plus {@link
 * RoutingEngineBuilderCustomizer}s and {@link RoutingListener} beans. A user's own {@code
 * RoutingEngine} bean replaces the whole engine. Invalid properties fail startup with a {@link
 * PrefixRouterPropertyException} naming the property path (reported by {@link
 * PrefixRouterFailureAnalyzer}); so does an alias or a split to a model no backend serves, once the
 * engine has backends at startup.
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
          throw new PrefixRouterPropertyException(
              "prefix-router.hashing.kind",
              "must be 'tokens' or 'chars', was '" + h.getKind() + "'");
    };
  }

  @Bean
  @ConditionalOnMissingBean
  public PrefixIndex prefixRouterIndex(PrefixRouterProperties p) {
    return guard(
        "prefix-router.index",
        () -> {
          RadixPrefixIndex.Builder b =
              RadixPrefixIndex.builder() // maxBackends: the engine hands its own down
                  .defaultCapacityBlocks(p.getIndex().getDefaultCapacityBlocks())
                  .predictionTtl(p.getIndex().getPredictionTtl())
                  .capacityFeedback(p.getIndex().isCapacityFeedback());
          Long lower = p.getIndex().getLowerTierBlocks();
          if (lower != null) {
            b.lowerTierBlocks(lower);
          }
          return b.build();
        });
  }

  @Bean
  @ConditionalOnMissingBean
  public Scorer prefixRouterScorer(
      PrefixRouterProperties p, ObjectProvider<SessionPins> sessionPins) {
    PrefixRouterProperties.Scorer s = p.getScorer();
    if (s.getPolicy().equals("est-ttft")) {
      EstimatedTtftScorer.Builder b =
          EstimatedTtftScorer.builder()
              .calibrate(s.isCalibrate())
              .calibrateIntercept(s.isCalibrateIntercept());
      guard("prefix-router.scorer", () -> b.fleetBand(s.getFleetBand()));
      guard("prefix-router.scorer", () -> b.fleetBandEvidence(s.getFleetBandEvidence()));
      guard("prefix-router.scorer", () -> b.sessions(s.getSessionTtl(), s.getMaxSessions()));
      SessionPins pins = sessionPins.getIfUnique(); // e.g. prefix-router.redis.share-session-pins
      if (pins != null && s.getMaxSessions() != 0) {
        b.sessionPins(pins);
      }
      renaming(
          "prefix-router.scorer.prefix-affinity-ratio, prefix-router.scorer.prefix-affinity-max-waiting",
          () -> b.prefixAffinity(s.getPrefixAffinityRatio(), s.getPrefixAffinityMaxWaiting()),
          "prefixAffinity ratio",
          "prefix-affinity-ratio",
          "maxWaiting",
          "prefix-affinity-max-waiting");
      renaming(
          "prefix-router.scorer.cache-pressure, prefix-router.scorer.cache-turnover-ratio",
          () -> b.cachePressure(s.getCachePressure(), s.getCacheTurnoverRatio()),
          "cachePressure: weight",
          "cache-pressure",
          "turnoverRatio",
          "cache-turnover-ratio");
      guard("prefix-router.scorer", () -> b.lowerTierCredit(s.getLowerTierCredit()));
      guard(
          "prefix-router.scorer.future-wait", () -> b.futureWait(s.getFutureWait(), Duration.ZERO));
      guard(
          "prefix-router.scorer.parallel-start",
          () ->
              b.parallelStart(s.getParallelStart())
                  .releaseParallelSiblings(s.getParallelStart() > 0));
      renaming(
          "prefix-router.scorer.replica-value, prefix-router.scorer.replica-min-load",
          () -> b.replicaValue(s.getReplicaValue(), s.getReplicaMinLoad()),
          "horizonSeconds",
          "replica-value",
          "minLoad",
          "replica-min-load");
      renaming(
          "prefix-router.scorer.extra-work, prefix-router.scorer.extra-work-group-horizon",
          () -> b.extraWork(s.getExtraWork(), s.getExtraWorkGroupHorizon()),
          "extraWork: weight",
          "extra-work",
          "groupHorizonSeconds",
          "extra-work-group-horizon");
      guard("prefix-router.scorer", () -> b.extraWorkIdleShare(s.getExtraWorkIdleShare()));
      guard("prefix-router.scorer", () -> b.extraWorkIdleWeight(s.getExtraWorkIdleWeight()));
      guard(
          "prefix-router.scorer",
          () -> b.extraWorkIdleMinUtilisation(s.getExtraWorkIdleMinUtilisation()));
      b.balanceMovesSessions(s.isBalanceMovesSessions());
      b.bandKeepsIdenticalCopies(s.isBandKeepsIdenticalCopies());
      guard("prefix-router.scorer", () -> b.pendingPrefix(s.getPendingPrefix()));
      return guard("prefix-router.scorer", b::build);
    }
    return guard("prefix-router.scorer.policy", () -> Policies.byName(s.getPolicy()));
  }

  @Bean
  @ConditionalOnMissingBean
  public TenantLimiter prefixRouterLimiter(
      PrefixRouterProperties p, org.springframework.core.env.Environment env) {
    MapKeys.check(env);
    PrefixRouterProperties.Limiter l = p.getLimiter();
    if (l.getTokensPerMinute() == 0 && l.getTenants().isEmpty()) {
      return TenantLimiter.unlimited();
    }
    TenantTokenBuckets.Builder b = TenantTokenBuckets.builder();
    guard("prefix-router.limiter", () -> b.maxTenants(l.getMaxTenants()));
    guard(
        "prefix-router.limiter.tokens-per-minute",
        () ->
            b.defaultQuota(
                Quota.perMinute(
                    l.getTokensPerMinute() == 0 ? Quota.MAX_TOKENS : l.getTokensPerMinute())));
    for (Map.Entry<String, Long> e : l.getTenants().entrySet()) {
      guard(
          "prefix-router.limiter.tenants." + e.getKey(),
          () -> b.quota(e.getKey(), Quota.perMinute(e.getValue())));
    }
    return b.build();
  }

  @Bean
  @ConditionalOnMissingBean
  public HealthPolicy prefixRouterHealth(PrefixRouterProperties p) {
    PrefixRouterProperties.Breaker b = p.getBreaker();
    return guard(
        "prefix-router.breaker",
        () ->
            CircuitBreakers.builder() // covers every slot; the engine checks its maxBackends
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
      ObjectProvider<RoutingListener> listeners,
      org.springframework.core.env.Environment env) {
    MapKeys.check(env); // labels, aliases, splits
    RoutingEngineBuilder b = RoutingEngine.builder().prefixIsolation(p.isPrefixIsolation());
    guard("prefix-router.max-backends", () -> b.maxBackends(p.getMaxBackends()));
    guard("prefix-router.retry-budget", () -> b.retryBudget(p.getRetryBudget()));
    for (String adapter : p.getLoraAdapters()) {
      renaming("prefix-router.lora-adapters", () -> b.loraAdapter(adapter));
    }
    b.hasher(hasher).prefixIndex(index).scorer(scorer).limiter(limiter).health(health);
    PrefixRouterProperties.Capacity cap = p.getCapacity();
    Duration ttft = cap.getTtft();
    if (ttft != null) {
      guard(
          "prefix-router.capacity",
          () ->
              b.capacityObjective(
                  CapacityObjective.ttft(ttft, cap.getPercentile()).withWindow(cap.getWindow())));
    }
    List<PrefixRouterProperties.BackendProperties> backends = p.getBackends();
    Set<String> ids = new HashSet<>();
    for (int i = 0; i < backends.size(); i++) {
      PrefixRouterProperties.BackendProperties bp = backends.get(i);
      String path = "prefix-router.backends[" + i + "]";
      if (bp.getId() == null) {
        throw new PrefixRouterPropertyException(path + ".id", "is required");
      }
      if (!ids.add(bp.getId())) {
        throw new PrefixRouterPropertyException(path + ".id", "'" + bp.getId() + "' is used twice");
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
                guard("prefix-router.model-aliases." + alias, () -> b.modelAlias(alias, target)));
    p.getModelSplits()
        .forEach(
            (model, w) ->
                guard("prefix-router.model-splits." + model, () -> b.modelSplit(model, w)));
    listeners.orderedStream().forEach(b::listener);
    customizers.orderedStream().forEach(c -> c.customize(b));
    RoutingEngine engine = guard("prefix-router", b::build);
    checkModelsAreServed(p, engine);
    return engine;
  }

  /**
   * Fails startup when an alias or a split points at a model no backend serves, once the engine has
   * backends (an application that adds every backend at runtime is not checked).
   */
  static void checkModelsAreServed(PrefixRouterProperties p, RoutingEngine engine) {
    Set<String> served = new java.util.TreeSet<>();
    engine.backends().all().forEach(be -> served.addAll(be.models()));
    if (served.isEmpty()) {
      return;
    }
    p.getModelSplits()
        .forEach(
            (model, weights) ->
                weights.forEach(
                    (target, w) -> {
                      if (w != null && w > 0 && !served.contains(target)) {
                        throw new PrefixRouterPropertyException(
                            "prefix-router.model-splits." + model + "." + target,
                            "model '"
                                + target
                                + "' is served by no backend (backends serve "
                                + served
                                + ")");
                      }
                    }));
    p.getModelAliases()
        .forEach(
            (alias, target) -> {
              if (!served.contains(target) && !p.getModelSplits().containsKey(target)) {
                throw new PrefixRouterPropertyException(
                    "prefix-router.model-aliases." + alias,
                    "target model '"
                        + target
                        + "' is served by no backend (backends serve "
                        + served
                        + ")");
              }
            });
  }

  /** The backends' base URLs from {@code prefix-router.backends[*].url}, kept for runtime adds. */
  @Bean
  @ConditionalOnMissingBean
  public BackendUrls prefixRouterBackendUrls(PrefixRouterProperties p) {
    BackendUrls urls = new BackendUrls();
    List<PrefixRouterProperties.BackendProperties> backends = p.getBackends();
    for (int i = 0; i < backends.size(); i++) {
      PrefixRouterProperties.BackendProperties b = backends.get(i);
      if (b.getId() != null && b.getUrl() != null) {
        String id = b.getId();
        guard(
            "prefix-router.backends[" + i + "].url",
            () -> {
              urls.put(id, b.getUrl());
              return urls;
            });
      }
    }
    return urls;
  }

  /** The actuator endpoint and health indicator, when Spring Boot Actuator is present. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.actuate.endpoint.annotation.Endpoint")
  static class ActuatorConfiguration {
    @Bean
    @ConditionalOnMissingBean
    PrefixRouterEndpoint prefixRouterEndpoint(RoutingEngine engine, BackendUrls urls) {
      return new PrefixRouterEndpoint(engine, urls);
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
          engine,
          env.getProperty("prefix-router.metrics.tenant-tags", Boolean.class, false),
          env.getProperty("prefix-router.scorer.policy", "est-ttft")
              .strip()
              .equalsIgnoreCase("est-ttft"));
    }
  }

  /**
   * The observation {@code prefixrouter.route} around each decision ({@link
   * ObservedRoutingEngine}), when Micrometer's observation API and a registry are present.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.micrometer.observation.ObservationRegistry")
  static class ObservationConfiguration {
    @Bean
    static org.springframework.beans.factory.config.BeanPostProcessor prefixRouterObservedEngine(
        ObjectProvider<io.micrometer.observation.ObservationRegistry> registry) {
      return new ObservedRoutingEngine.PostProcessor(registry);
    }
  }

  /**
   * Runs a builder step, turning a validation error into a {@link PrefixRouterPropertyException}
   * naming the property: when the message starts with a builder field's Java name that belongs to
   * {@code section}, the property is that field's (e.g. {@code retryBudget} → {@code
   * prefix-router.retry-budget}) and the name in the reason is written the same way.
   */
  private static <T> T guard(String section, java.util.function.Supplier<T> step) {
    try {
      return step.get();
    } catch (IllegalArgumentException | IllegalStateException e) {
      if (e instanceof PrefixRouterPropertyException pe) {
        throw pe;
      }
      String message = String.valueOf(e.getMessage());
      java.util.regex.Matcher m = LEADING_JAVA_NAME.matcher(message);
      if (m.lookingAt()) {
        String kebab = kebab(m.group(1));
        for (String property :
            new String[] {section, section + "." + kebab, "prefix-router." + kebab}) {
          if (property.endsWith("." + kebab) && KNOWN.contains(property)) {
            throw new PrefixRouterPropertyException(
                property, kebab + message.substring(m.end(1)), e);
          }
        }
      }
      throw new PrefixRouterPropertyException(section, message, e);
    }
  }

  /**
   * Runs a builder step that validates several properties at once; a validation error becomes a
   * {@link PrefixRouterPropertyException} naming them, with each {@code javaName, kebabName} pair
   * of {@code renames} rewritten in the reason.
   */
  private static <T> T renaming(
      String properties, java.util.function.Supplier<T> step, String... renames) {
    try {
      return step.get();
    } catch (IllegalArgumentException e) {
      String reason = String.valueOf(e.getMessage());
      for (int i = 0; i + 1 < renames.length; i += 2) {
        reason = reason.replace(renames[i], renames[i + 1]);
      }
      throw new PrefixRouterPropertyException(properties, reason, e);
    }
  }

  private static final java.util.regex.Pattern LEADING_JAVA_NAME =
      java.util.regex.Pattern.compile("([a-z]+(?:[A-Z][a-z0-9]*)*)\\b");

  /** Properties a builder's field name may map to (see {@link #guard}). */
  private static final Set<String> KNOWN =
      Set.of(
          "prefix-router.max-backends",
          "prefix-router.retry-budget",
          "prefix-router.capacity.ttft",
          "prefix-router.capacity.percentile",
          "prefix-router.capacity.window",
          "prefix-router.hashing.block-size",
          "prefix-router.hashing.block-chars",
          "prefix-router.index.default-capacity-blocks",
          "prefix-router.index.prediction-ttl",
          "prefix-router.index.lower-tier-blocks",
          "prefix-router.scorer.lower-tier-credit",
          "prefix-router.scorer.fleet-band",
          "prefix-router.scorer.fleet-band-evidence",
          "prefix-router.scorer.extra-work-idle-share",
          "prefix-router.scorer.extra-work-idle-weight",
          "prefix-router.scorer.extra-work-idle-min-utilisation",
          "prefix-router.scorer.session-ttl",
          "prefix-router.scorer.max-sessions",
          "prefix-router.limiter.max-tenants",
          "prefix-router.breaker.consecutive-failures",
          "prefix-router.breaker.cooldown",
          "prefix-router.breaker.half-open-probes");

  private static String kebab(String javaName) {
    return javaName.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(java.util.Locale.ROOT);
  }
}
