package dev.prefixrouter.spring;

import dev.prefixrouter.api.BackendRegistry;
import dev.prefixrouter.api.KvEvent;
import dev.prefixrouter.api.Rejected;
import dev.prefixrouter.api.RouteDecision;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RouterSnapshot;
import dev.prefixrouter.api.RoutingEngine;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;

/**
 * A {@link RoutingEngine} whose {@link #route} runs inside a Micrometer {@link Observation} named
 * {@value #NAME}, so that a Spring Boot application with micrometer-tracing gets a span per
 * decision (a child of the request's span) and, through Boot's default handler, a timer {@code
 * prefixrouter.route} (seconds). Key values:
 *
 * <ul>
 *   <li>low cardinality (tags of the timer): {@code outcome} = {@code routed} or the rejection
 *       reason in lower case ({@code no_eligible_backend}, {@code quota_exceeded}, ...), and {@code
 *       model} = the model the engine resolved (one of the configured models; {@code none} when
 *       rejected: the client's string is never a tag);
 *   <li>high cardinality (spans only): {@code backend}, the chosen backend's id.
 * </ul>
 *
 * Every other method delegates as is; a failover decided through the lease is not observed here (it
 * is counted by {@code prefixrouter.failures}). Thread-safe when the delegate is. Overhead: one
 * observation start and stop per {@code route}; nothing is wrapped when the registry is a no-op.
 */
final class ObservedRoutingEngine implements RoutingEngine {
  /** Name of the observation. */
  static final String NAME = "prefixrouter.route";

  private final RoutingEngine delegate;
  private final ObservationRegistry registry;

  ObservedRoutingEngine(RoutingEngine delegate, ObservationRegistry registry) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    this.registry = Objects.requireNonNull(registry, "registry");
  }

  @Override
  public RouteDecision route(RouteRequest request) {
    Observation obs =
        Observation.createNotStarted(NAME, registry)
            .contextualName("prefixrouter route")
            .lowCardinalityKeyValue("outcome", "error")
            .lowCardinalityKeyValue("model", "none")
            .start();
    try {
      RouteDecision d = delegate.route(request);
      if (d instanceof Routed r) {
        obs.lowCardinalityKeyValue("outcome", "routed");
        obs.lowCardinalityKeyValue("model", r.resolvedModel());
        obs.highCardinalityKeyValue("backend", r.backendId());
      } else if (d instanceof Rejected j) {
        obs.lowCardinalityKeyValue("outcome", j.reason().name().toLowerCase(Locale.ROOT));
      }
      return d;
    } catch (RuntimeException | Error e) {
      obs.error(e);
      throw e;
    } finally {
      obs.stop();
    }
  }

  @Override
  public BackendRegistry backends() {
    return delegate.backends();
  }

  @Override
  public boolean applyKvEvents(String backendId, List<? extends KvEvent> batch) {
    return delegate.applyKvEvents(backendId, batch);
  }

  @Override
  public boolean applyPredicted(String backendId, long[] keys, int keyCount) {
    return delegate.applyPredicted(backendId, keys, keyCount);
  }

  @Override
  public RouterSnapshot inspect() {
    return delegate.inspect();
  }

  @Override
  public String toString() {
    return "observed " + delegate;
  }

  /** Wraps every {@link RoutingEngine} bean when a non-no-op {@link ObservationRegistry} exists. */
  static final class PostProcessor implements BeanPostProcessor {
    private final ObjectProvider<ObservationRegistry> registry;

    PostProcessor(ObjectProvider<ObservationRegistry> registry) {
      this.registry = registry;
    }

    @Override
    public Object postProcessAfterInitialization(Object bean, String beanName) {
      if (bean instanceof RoutingEngine e && !(bean instanceof ObservedRoutingEngine)) {
        ObservationRegistry r = registry.getIfAvailable();
        if (r != null && !r.isNoop()) {
          return new ObservedRoutingEngine(e, r);
        }
      }
      return bean;
    }
  }
}
