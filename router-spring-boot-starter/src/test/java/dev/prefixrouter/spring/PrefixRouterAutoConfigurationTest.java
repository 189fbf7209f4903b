package dev.prefixrouter.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.TenantLimiter;
import dev.prefixrouter.radix.RadixPrefixIndex;
import dev.prefixrouter.scoring.EstimatedTtftScorer;
import dev.prefixrouter.scoring.PendingPrefixScope;
import dev.prefixrouter.scoring.TenantTokenBuckets;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

class PrefixRouterAutoConfigurationTest {
  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(PrefixRouterAutoConfiguration.class));

  @Test
  void defaultsGiveAnEngineWithTheDefaultParts() {
    runner.run(
        ctx -> {
          assertThat(ctx).hasSingleBean(RoutingEngine.class);
          assertThat(ctx.getBean(Scorer.class)).isInstanceOf(EstimatedTtftScorer.class);
          assertThat(ctx.getBean(dev.prefixrouter.api.spi.PrefixIndex.class))
              .isInstanceOf(RadixPrefixIndex.class);
          assertThat(ctx.getBean(TenantLimiter.class)).isSameAs(TenantLimiter.unlimited());
          assertThat(ctx.getBean(RoutingEngine.class).backends().all()).isEmpty();
        });
  }

  @Test
  void propertiesBindBackendsAliasesSplitsAndQuotas() {
    runner
        .withPropertyValues(
            "prefix-router.backends[0].id=b0",
            "prefix-router.backends[0].models=llama",
            "prefix-router.backends[0].capacity-blocks=20000",
            "prefix-router.backends[1].id=b1",
            "prefix-router.backends[1].models=llama,llama-v2",
            "prefix-router.backends[1].capabilities=vision",
            "prefix-router.backends[1].labels.zone=eu",
            "prefix-router.model-aliases.gpt-4=llama",
            "prefix-router.model-splits.chat.llama=90",
            "prefix-router.model-splits.chat.llama-v2=10",
            "prefix-router.limiter.tokens-per-minute=100000",
            "prefix-router.limiter.tenants.batch=1000000")
        .run(
            ctx -> {
              RoutingEngine engine = ctx.getBean(RoutingEngine.class);
              assertThat(engine.backends().all())
                  .extracting(Backend::id)
                  .containsExactly("b0", "b1");
              Backend b1 = engine.backends().get("b1").orElseThrow();
              assertThat(b1.capabilities()).containsExactly("vision");
              assertThat(b1.labels()).containsEntry("zone", "eu");
              assertThat(engine.backends().get("b0").orElseThrow().capacityBlocks())
                  .isEqualTo(20_000);
              Routed r =
                  (Routed)
                      engine.route(
                          RouteRequest.builder("acme", "gpt-4")
                              .prompt(Prompt.ofTokens(new int[64]))
                              .build());
              assertThat(r.resolvedModel()).isEqualTo("llama");
              TenantTokenBuckets limiter = (TenantTokenBuckets) ctx.getBean(TenantLimiter.class);
              assertThat(limiter.quotaOf("batch").capacityTokens()).isEqualTo(1_000_000);
              assertThat(limiter.quotaOf("acme").capacityTokens()).isEqualTo(100_000);
            });
  }

  /**
   * A tenant id Spring Boot would rewrite as a map key ({@code team_a} binds as {@code teama})
   * fails startup naming the bracketed spelling, which binds as written.
   */
  @Test
  void tenantQuotaKeysBindAsWrittenOrFailStartup() {
    runner
        .withPropertyValues(
            "prefix-router.backends[0].id=b0",
            "prefix-router.backends[0].models=m",
            "prefix-router.limiter.tenants.team_a=1000")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .hasStackTraceContaining("prefix-router.limiter.tenants.team_a")
                    .hasStackTraceContaining("prefix-router.limiter.tenants.[team_a]"));
    runner
        .withPropertyValues(
            "prefix-router.backends[0].id=b0",
            "prefix-router.backends[0].models=m",
            "prefix-router.limiter.tenants.[team_a]=1000",
            "prefix-router.limiter.tenants.[User@X.com]=2000",
            "prefix-router.limiter.tenants.batch.eu=3000")
        .run(
            ctx -> {
              TenantTokenBuckets limiter = (TenantTokenBuckets) ctx.getBean(TenantLimiter.class);
              assertThat(limiter.quotaOf("team_a").capacityTokens()).isEqualTo(1_000);
              assertThat(limiter.quotaOf("User@X.com").capacityTokens()).isEqualTo(2_000);
              assertThat(limiter.quotaOf("batch.eu").capacityTokens()).isEqualTo(3_000);
            });
  }

  /**
   * Labels, aliases and split keys Spring Boot would rewrite (a label {@code gpu_type} bound as
   * {@code gputype}, so a request requiring {@code gpu_type} found no backend) fail startup naming
   * the bracketed spelling; bracketed, they bind as written.
   */
  @Test
  void labelAliasAndSplitKeysBindAsWrittenOrFailStartup() {
    for (String[] bad :
        new String[][] {
          {"prefix-router.backends[0].labels.gpu_type=a100", "labels.[gpu_type]"},
          {"prefix-router.model-aliases.Qwen/Qwen2.5-7B=m", "model-aliases.[Qwen/Qwen2.5-7B]"},
          {"prefix-router.model-splits.chat.Qwen_B=10", "model-splits.[MODEL].[TARGET]"},
          {"prefix-router.model-splits.[chat].Qwen_B=10", "model-splits.[chat].[Qwen_B]"}
        }) {
      runner
          .withPropertyValues(
              "prefix-router.backends[0].id=b0", "prefix-router.backends[0].models=m", bad[0])
          .run(ctx -> assertThat(ctx).getFailure().hasStackTraceContaining(bad[1]));
    }
    runner
        .withPropertyValues(
            "prefix-router.backends[0].id=b0",
            "prefix-router.backends[0].models=m,qwen2.5-7b",
            "prefix-router.backends[0].labels.[gpu_type]=a100",
            "prefix-router.backends[0].labels.zone=eu",
            "prefix-router.model-aliases.[Qwen/Qwen2.5-7B]=m",
            "prefix-router.model-splits.chat.m=90",
            "prefix-router.model-splits.chat.qwen2.5-7b=10",
            "prefix-router.model-splits.[Llama-3.1].m=1")
        .run(
            ctx -> {
              assertThat(ctx).hasNotFailed();
              PrefixRouterProperties p = ctx.getBean(PrefixRouterProperties.class);
              assertThat(p.getBackends().get(0).getLabels())
                  .containsEntry("gpu_type", "a100")
                  .containsEntry("zone", "eu");
              assertThat(p.getModelAliases()).containsEntry("Qwen/Qwen2.5-7B", "m");
              assertThat(p.getModelSplits().get("chat")).containsEntry("qwen2.5-7b", 10);
              assertThat(p.getModelSplits()).containsKey("Llama-3.1");
            });
  }

  @Test
  void anchorPolicyByName() {
    runner
        .withPropertyValues("prefix-router.scorer.policy=round-robin")
        .run(ctx -> assertThat(ctx.getBean(Scorer.class).name()).isEqualTo("round-robin"));
  }

  @Test
  void invalidPropertiesFailStartupNamingTheProperty() {
    runner
        .withPropertyValues("prefix-router.backends[0].id=b0")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .rootCause()
                    .hasMessageContaining("must serve at least one model"));
    runner
        .withPropertyValues(
            "prefix-router.backends[0].id=b0",
            "prefix-router.backends[0].models=m",
            "prefix-router.backends[1].id=b0",
            "prefix-router.backends[1].models=m")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .hasStackTraceContaining("prefix-router.backends[1].id: 'b0' is used twice"));
    runner
        .withPropertyValues("prefix-router.hashing.kind=bytes")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .hasStackTraceContaining(
                        "prefix-router.hashing.kind: must be 'tokens' or 'chars'"));
    runner
        .withPropertyValues("prefix-router.scorer.policy=magic")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .hasStackTraceContaining(
                        "prefix-router.scorer.policy: unknown policy 'magic'"));
    runner
        .withPropertyValues("prefix-router.scorer.prefix-affinity-ratio=0.5")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .hasStackTraceContaining("prefix-router.scorer.prefix-affinity-ratio")
                    .hasStackTraceContaining(
                        "prefix-affinity-ratio must be 0 (off) or in [1, 100]"));
    runner
        .withPropertyValues("prefix-router.scorer.cache-turnover-ratio=0.5")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .hasStackTraceContaining("prefix-router.scorer.cache-turnover-ratio")
                    .hasStackTraceContaining("cache-turnover-ratio in [1, 1000]"));
    runner
        .withPropertyValues("prefix-router.scorer.fleet-band=0.5")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .hasStackTraceContaining("prefix-router.scorer.fleet-band")
                    .hasStackTraceContaining("fleet-band must be >= 1, was 0.5"));
    runner
        .withPropertyValues("prefix-router.scorer.fleet-band=Infinity")
        .run(ctx -> assertThat(ctx).hasNotFailed());
    runner
        .withPropertyValues("prefix-router.scorer.fleet-band-evidence=-1")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .hasStackTraceContaining("prefix-router.scorer.fleet-band-evidence")
                    .hasStackTraceContaining("fleet-band-evidence must be in [0, 10000], was -1"));
    runner
        .withPropertyValues("prefix-router.scorer.replica-min-load=2")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .hasStackTraceContaining("prefix-router.scorer.replica-min-load")
                    .hasStackTraceContaining("replica-min-load in [0, 1]; was 2.0"));
    runner
        .withPropertyValues("prefix-router.scorer.extra-work=-1")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .hasStackTraceContaining("prefix-router.scorer.extra-work")
                    .hasStackTraceContaining("extra-work in [0, 1000]; was -1.0"));
    runner
        .withPropertyValues("prefix-router.scorer.extra-work-group-horizon=4000")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .hasStackTraceContaining("prefix-router.scorer.extra-work-group-horizon")
                    .hasStackTraceContaining("extra-work-group-horizon in [0, 3600]; was 4000.0"));
    runner
        .withPropertyValues("prefix-router.scorer.extra-work-idle-share=1.5")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .hasStackTraceContaining("prefix-router.scorer.extra-work-idle-share")
                    .hasStackTraceContaining(
                        "extra-work-idle-share must be in [0, 1] or Infinity, was 1.5"));
    runner
        .withPropertyValues("prefix-router.scorer.extra-work-idle-weight=-0.5")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .hasStackTraceContaining("prefix-router.scorer.extra-work-idle-weight")
                    .hasStackTraceContaining("extra-work-idle-weight must be in [0, 1], was -0.5"));
    runner
        .withPropertyValues("prefix-router.scorer.extra-work-idle-min-utilisation=2")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .hasStackTraceContaining("prefix-router.scorer.extra-work-idle-min-utilisation")
                    .hasStackTraceContaining(
                        "extra-work-idle-min-utilisation must be in [0, 1], was 2.0"));
    runner
        .withPropertyValues(
            "prefix-router.scorer.extra-work-idle-share=Infinity",
            "prefix-router.scorer.extra-work-idle-weight=0")
        .run(ctx -> assertThat(ctx).hasNotFailed());
    runner.run(
        ctx ->
            assertThat(((EstimatedTtftScorer) ctx.getBean(Scorer.class)).bandKeepsIdenticalCopies())
                .isTrue());
    runner
        .withPropertyValues("prefix-router.scorer.band-keeps-identical-copies=false")
        .run(
            ctx ->
                assertThat(
                        ((EstimatedTtftScorer) ctx.getBean(Scorer.class))
                            .bandKeepsIdenticalCopies())
                    .isFalse());
    assertPendingPrefix("", PendingPrefixScope.OFF);
    assertPendingPrefix("all", PendingPrefixScope.ALL);
    assertPendingPrefix("off", PendingPrefixScope.OFF);
    assertPendingPrefix("session", PendingPrefixScope.SESSION);
    assertPendingPrefix("false", PendingPrefixScope.OFF); // the Boolean this property was
    for (String bad : new String[] {"true", "sometimes"}) {
      runner
          .withPropertyValues("prefix-router.scorer.pending-prefix=" + bad)
          .run(
              ctx ->
                  assertThat(ctx)
                      .getFailure()
                      .hasStackTraceContaining("prefix-router.scorer.pending-prefix"));
    }
    runner
        .withPropertyValues("prefix-router.scorer.extra-work=0")
        .run(
            ctx ->
                assertThat(((EstimatedTtftScorer) ctx.getBean(Scorer.class)).termNames())
                    .doesNotContain("extra-work"));
    runner
        .withPropertyValues("prefix-router.hashing.block-size=0")
        .run(
            ctx ->
                assertThat(ctx)
                    .getFailure()
                    .hasStackTraceContaining(
                        "prefix-router.hashing.block-size: block-size must be"));
  }

  /** The scorer's pending-prefix scope with the property at {@code value} ("": unset). */
  private void assertPendingPrefix(String value, PendingPrefixScope expected) {
    (value.isEmpty()
            ? runner
            : runner.withPropertyValues("prefix-router.scorer.pending-prefix=" + value))
        .run(
            ctx ->
                assertThat(((EstimatedTtftScorer) ctx.getBean(Scorer.class)).pendingPrefixScope())
                    .isEqualTo(expected));
  }

  @Test
  void backsOffToAUserEngineAndUserParts() {
    runner
        .withUserConfiguration(UserEngine.class)
        .run(
            ctx -> {
              assertThat(ctx).hasSingleBean(RoutingEngine.class);
              assertThat(ctx.getBean(RoutingEngine.class).backends().all())
                  .extracting(Backend::id)
                  .containsExactly("mine");
            });
    runner
        .withUserConfiguration(UserScorer.class)
        .run(ctx -> assertThat(ctx.getBean(Scorer.class)).isSameAs(UserScorer.SCORER));
  }

  @Test
  void customizersApplyAfterProperties() {
    runner
        .withPropertyValues("prefix-router.backends[0].id=b0", "prefix-router.backends[0].models=m")
        .withUserConfiguration(AddBackend.class)
        .run(
            ctx ->
                assertThat(ctx.getBean(RoutingEngine.class).backends().all())
                    .extracting(Backend::id)
                    .containsExactly("b0", "from-customizer"));
  }

  @Test
  void canBeDisabled() {
    runner
        .withPropertyValues("prefix-router.enabled=false")
        .run(ctx -> assertThat(ctx).doesNotHaveBean(RoutingEngine.class));
  }

  @Configuration(proxyBeanMethods = false)
  static class UserEngine {
    @Bean
    RoutingEngine myEngine() {
      return RoutingEngine.builder().backend(Backend.of("mine", "m")).build();
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class UserScorer {
    static final Scorer SCORER = Scorer.leastInFlight();

    @Bean
    Scorer myScorer() {
      return SCORER;
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class AddBackend {
    @Bean
    RoutingEngineBuilderCustomizer addBackend() {
      return b -> b.backend(Backend.of("from-customizer", "m"));
    }
  }
}
