package dev.prefixrouter.spring;

import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.vllm.MetricsPoller;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.function.ToDoubleFunction;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The backend metrics poller ({@link MetricsPoller} of router-vllm) from {@code
 * prefix-router.poller.*}, polling every backend with a URL in {@link BackendUrls} (so backends the
 * actuator adds with a {@code url} too): started with the context, closed with it; meters {@code
 * prefixrouter.poller.*} when Micrometer is present. With {@code prefix-router.poller.enabled=true}
 * and router-vllm missing from the classpath, startup fails naming the property.
 */
@AutoConfiguration(after = PrefixRouterAutoConfiguration.class)
@ConditionalOnBean(RoutingEngine.class)
@ConditionalOnProperty(prefix = "prefix-router.poller", name = "enabled", havingValue = "true")
@EnableConfigurationProperties(PrefixRouterProperties.class)
public class MetricsPollerAutoConfiguration {

  /** The poller, when router-vllm is present. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "dev.prefixrouter.vllm.MetricsPoller")
  static class PollerConfiguration {
    @Bean(initMethod = "start", destroyMethod = "close")
    @ConditionalOnMissingBean
    MetricsPoller prefixRouterMetricsPoller(
        PrefixRouterProperties p,
        RoutingEngine engine,
        BackendUrls urls,
        ObjectProvider<BlockHasher> hasher) {
      PrefixRouterProperties.Poller q = p.getPoller();
      MetricsPoller.Builder b = MetricsPoller.builder(engine, urls::get);
      // engines publish their capacity in their own blocks or pages: converted to the index's
      BlockHasher h = hasher.getIfAvailable();
      if (h != null) {
        b.tokensPerBlock(h.tokensPerBlock());
      }
      PrefixRouterPropertyException.naming(
          "prefix-router.poller.interval", () -> b.interval(q.getInterval()));
      PrefixRouterPropertyException.naming(
          "prefix-router.poller.timeout", () -> b.timeout(q.getTimeout()));
      PrefixRouterPropertyException.naming(
          "prefix-router.poller.unreachable-after",
          () -> b.unreachableAfter(q.getUnreachableAfter()));
      return b.build();
    }
  }

  /** Meters of the poller, when Micrometer is present. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(
      name = {"dev.prefixrouter.vllm.MetricsPoller", "io.micrometer.core.instrument.MeterRegistry"})
  static class PollerMetricsConfiguration {
    @Bean
    MeterBinder prefixRouterMetricsPollerMeters(MetricsPoller poller) {
      return registry -> bind(registry, poller);
    }

    static void bind(MeterRegistry r, MetricsPoller p) {
      counter(r, p, "prefixrouter.poller.scrapes", "scrapes started", t -> t.totals().scrapes());
      counter(
          r,
          p,
          "prefixrouter.poller.failures",
          "scrapes that gave no load report",
          t -> t.totals().failures());
      counter(
          r, p, "prefixrouter.poller.timeouts", "scrapes timed out", t -> t.totals().timeouts());
      counter(
          r,
          p,
          "prefixrouter.poller.overruns",
          "rounds skipped: the backend's previous scrape was still running",
          t -> t.totals().overruns());
      counter(
          r,
          p,
          "prefixrouter.poller.unreachable.reports",
          "failures reported to the health policy for unreachable backends",
          t -> t.totals().unreachableReports());
      Gauge.builder("prefixrouter.poller.unreachable", p, t -> t.totals().unreachableBackends())
          .description("backends answering neither /metrics nor /health")
          .register(r);
      Gauge.builder(
              "prefixrouter.poller.staleness", p, t -> t.totals().maxStalenessMillis() / 1000.0)
          .description("longest time since a backend's last successful scrape")
          .baseUnit("seconds")
          .register(r);
    }

    private static void counter(
        MeterRegistry r,
        MetricsPoller p,
        String name,
        String description,
        ToDoubleFunction<MetricsPoller> f) {
      FunctionCounter.builder(name, p, f).description(description).register(r);
    }
  }

  /** Fails startup: the poller is asked for but router-vllm is not on the classpath. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnMissingClass("dev.prefixrouter.vllm.MetricsPoller")
  static class PollerMissingConfiguration {
    @Bean
    Object prefixRouterMetricsPollerMissing() {
      throw new PrefixRouterPropertyException(
          "prefix-router.poller.enabled",
          "needs router-vllm (dev.prefixrouter:prefix-router-vllm) on the classpath");
    }
  }
}
