package dev.prefixrouter.spring;

import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.vllm.HashParityCheck;
import dev.prefixrouter.vllm.KvEventSubscriber;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.function.ToDoubleFunction;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Precise mode: a {@link KvEventSubscriber} fed by every configured backend's engine, applying its
 * KV events to the engine's prefix index, when router-vllm is on the classpath and {@code
 * prefix-router.kv-events.enabled=true}. Backends added later (the actuator's {@code add} with a
 * {@code url}) are subscribed and removed ones unsubscribed by {@link KvEventMembership}. Meters
 * {@code prefixrouter.kv.*} when Micrometer is present. A {@link HashParityCheck} (the starter's
 * engine's prediction sink; a customizer of your own that sets another sink replaces it) reports
 * when the engines' blocks do not hash to the keys routing computes.
 */
@AutoConfiguration(after = PrefixRouterAutoConfiguration.class)
@ConditionalOnClass(KvEventSubscriber.class)
@ConditionalOnBean(RoutingEngine.class)
@ConditionalOnProperty(prefix = "prefix-router.kv-events", name = "enabled", havingValue = "true")
@EnableConfigurationProperties({KvEventsProperties.class, PrefixRouterProperties.class})
public class KvEventsAutoConfiguration {

  /** Follows the engine's membership once the subscriber is attached. */
  @Bean
  @ConditionalOnMissingBean
  public KvEventMembership prefixRouterKvEventMembership(KvEventsProperties k, BackendUrls urls) {
    String prefix = "prefix-router.kv-events";
    int ranks = k.getDataParallelSize();
    if (ranks < 1 || ranks > 1024) {
      throw new PrefixRouterPropertyException(
          prefix + ".data-parallel-size", "must be in [1, 1024], was " + ranks);
    }
    checkPort(prefix + ".port", k.getPort(), ranks);
    if (k.getReplayPort() != null) {
      checkPort(prefix + ".replay-port", k.getReplayPort(), ranks);
    }
    return new KvEventMembership(urls, k.getPort(), k.getReplayPort(), ranks);
  }

  /**
   * The hash-parity self-test: fed the keys routing computes (as the engine's prediction sink) and
   * the engines' events (in the subscriber's sink).
   */
  @Bean
  @ConditionalOnMissingBean
  public HashParityCheck prefixRouterHashParityCheck(BlockHasher hasher) {
    return HashParityCheck.builder(hasher).build();
  }

  /** Registers the parity check as the starter-built engine's prediction sink. */
  @Bean
  public RoutingEngineBuilderCustomizer prefixRouterHashParitySink(HashParityCheck parity) {
    return b -> b.predictionSink(parity);
  }

  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean
  public KvEventSubscriber prefixRouterKvEventSubscriber(
      KvEventsProperties k,
      PrefixRouterProperties p,
      RoutingEngine engine,
      KvEventMembership membership,
      HashParityCheck parity) {
    String prefix = "prefix-router.kv-events";
    KvEventSubscriber.Builder b = KvEventSubscriber.builder(parity.sink(engine::applyKvEvents));
    PrefixRouterPropertyException.naming(prefix + ".topic", () -> b.topic(k.getTopic()));
    PrefixRouterPropertyException.naming(
        prefix + ".replay-timeout", () -> b.replayTimeout(k.getReplayTimeout()));
    PrefixRouterPropertyException.naming(
        prefix + ".idle-reconnect", () -> b.idleReconnect(k.getIdleReconnect()));
    PrefixRouterPropertyException.naming(
        prefix + ".handshake-timeout", () -> b.handshakeTimeout(k.getHandshakeTimeout()));
    PrefixRouterPropertyException.naming(
        prefix + ".queue-capacity", () -> b.queueCapacity(k.getQueueCapacity()));
    b.applyOnIoThread(k.isApplyOnIoThread());
    for (int i = 0; i < p.getBackends().size(); i++) {
      if (p.getBackends().get(i).getUrl() == null) {
        throw new PrefixRouterPropertyException(
            "prefix-router.backends[" + i + "].url", "is required for kv-events");
      }
    }
    KvEventSubscriber subscriber = b.build();
    membership.attach(subscriber, engine);
    return subscriber;
  }

  /** The port of rank 0; the last rank's, {@code port + ranks - 1}, must be a port too. */
  private static void checkPort(String property, int port, int ranks) {
    if (port < 1 || port > 65_535) {
      throw new PrefixRouterPropertyException(property, "must be in [1, 65535], was " + port);
    }
    if (port + ranks - 1 > 65_535) {
      throw new PrefixRouterPropertyException(
          property,
          "plus data-parallel-size - 1 must be at most 65535, was " + port + " + " + (ranks - 1));
    }
  }

  /** Meters for the subscriber, when Micrometer is present. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.micrometer.core.instrument.MeterRegistry")
  static class KvEventMetricsConfiguration {
    @Bean
    MeterBinder prefixRouterKvEventMeters(KvEventSubscriber s) {
      return registry -> bind(registry, s);
    }

    @Bean
    MeterBinder prefixRouterHashParityMeters(HashParityCheck parity) {
      return registry -> bindParity(registry, parity);
    }

    static void bindParity(MeterRegistry r, HashParityCheck p) {
      counter(
          r,
          p,
          "prefixrouter.kv.parity.checked",
          "sequence-starting engine blocks checked against routed keys",
          x -> x.stats().checked());
      counter(
          r,
          p,
          "prefixrouter.kv.parity.matched",
          "checked blocks whose key routing had computed",
          x -> x.stats().matched());
      counter(
          r,
          p,
          "prefixrouter.kv.parity.mismatches",
          "windows of checked blocks none of which routing had computed",
          x -> x.stats().mismatches());
      counter(
          r,
          p,
          "prefixrouter.kv.parity.block.size.mismatches",
          "engine blocks of another size than the router's",
          x -> x.stats().blockSizeMismatches());
      Gauge.builder("prefixrouter.kv.parity.mismatch", p, x -> x.stats().mismatch() ? 1 : 0)
          .description("1 while the engines' blocks do not hash to the keys routing computes")
          .register(r);
    }

    static void bind(MeterRegistry r, KvEventSubscriber s) {
      counter(r, s, "prefixrouter.kv.events", "KV events applied", x -> x.stats().appliedEvents());
      counter(r, s, "prefixrouter.kv.gaps", "sequence gaps seen", x -> x.stats().gaps());
      counter(r, s, "prefixrouter.kv.replays", "replay requests", x -> x.stats().replays());
      counter(
          r,
          s,
          "prefixrouter.kv.handshake.reconnects",
          "SUB sockets replaced for no ZMTP greeting in time (stalled, or engine unreachable)",
          x -> x.stats().handshakeReconnects());
      counter(
          r,
          s,
          "prefixrouter.kv.io.failures",
          "sockets that could not be created (the endpoint is retried) and other failed I/O steps",
          x -> x.stats().ioFailures());
      counter(
          r,
          s,
          "prefixrouter.kv.replay.failures",
          "gaps not filled",
          x -> x.stats().replayFailures());
      counter(
          r,
          s,
          "prefixrouter.kv.decode.errors",
          "undecodable batches",
          x -> x.stats().decodeErrors());
      counter(
          r,
          s,
          "prefixrouter.kv.garbage",
          "messages of the wrong shape",
          x -> x.stats().garbageMessages());
      counter(
          r,
          s,
          "prefixrouter.kv.marked.unknown",
          "backends' blocks dropped",
          x -> x.stats().markedUnknown());
      counter(
          r,
          s,
          "prefixrouter.kv.skipped",
          "events skipped (unknown type, malformed, other group, LoRA or extra keys)",
          x -> {
            var st = x.stats();
            return st.unknownEventTypes()
                + st.malformedEvents()
                + st.skippedGroups()
                + st.skippedVariants();
          });
      Gauge.builder("prefixrouter.kv.lag", s, x -> lagSeconds(x.stats().lastLagMillis()))
          .description("engine timestamp to apply, last batch (includes clock skew)")
          .baseUnit("seconds")
          .register(r);
      Gauge.builder("prefixrouter.kv.queued", s, x -> x.stats().queued())
          .description("batches waiting for the apply thread")
          .register(r);
    }

    private static double lagSeconds(long millis) {
      return millis < 0 ? Double.NaN : millis / 1000.0;
    }

    private static <T> void counter(
        MeterRegistry r, T s, String name, String description, ToDoubleFunction<T> f) {
      FunctionCounter.builder(name, s, f).description(description).register(r);
    }
  }
}
