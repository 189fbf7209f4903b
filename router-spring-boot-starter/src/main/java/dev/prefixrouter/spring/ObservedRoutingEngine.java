package dev.prefixrouter.spring;

import dev.prefixrouter.api.BackendRegistry;
import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.KvEvent;
import dev.prefixrouter.api.Lease;
import dev.prefixrouter.api.Rejected;
import dev.prefixrouter.api.RouteDecision;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RouterSnapshot;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
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
 * A {@link Routed} decision is handed out with its lease wrapped, so that each {@link
 * Lease#failover()} runs inside a second observation, {@value #FAILOVER_NAME} (a timer of the same
 * name through Boot's default handler), with low-cardinality key values {@code outcome} (as above),
 * {@code model} (the failed attempt's resolved model) and {@code failure} (the {@link Failure.Kind}
 * the lease was failed with, in lower case, {@code none} when failover was asked without a fail),
 * and high-cardinality {@code backend} (the new backend, when routed) and {@code failed.backend}.
 * The failover's own lease is wrapped alike, so a chain of failovers is observed step by step. The
 * wrapped lease delegates every other call as is, {@link Lease#indexMatchedTokensOr} included, so
 * the copy's {@link Routed#indexMatchedTokens()} is the engine's (the index's match, not the
 * scorer's discounted {@link Routed#matchedTokens()}); engine listeners still see the engine's own
 * {@link Routed} (same values, its unwrapped lease).
 *
 * <p>Every other method delegates as is. Thread-safe when the delegate is. Overhead: one
 * observation start and stop per {@code route} (and per failover) and, per routed decision, one
 * {@link Routed} copy and one lease wrapper; nothing is wrapped when the registry is a no-op.
 */
final class ObservedRoutingEngine implements RoutingEngine {
  /** Name of the decision's observation. */
  static final String NAME = "prefixrouter.route";

  /** Name of a failover's observation. */
  static final String FAILOVER_NAME = "prefixrouter.failover";

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
        return observed(r);
      } else if (d instanceof Rejected j) {
        obs.lowCardinalityKeyValue("outcome", outcome(j));
      }
      return d;
    } catch (RuntimeException | Error e) {
      obs.error(e);
      throw e;
    } finally {
      obs.stop();
    }
  }

  private static String outcome(Rejected j) {
    return j.reason().name().toLowerCase(Locale.ROOT);
  }

  /** {@code r} with its lease wrapped in an {@link ObservedLease}. */
  private Routed observed(Routed r) {
    return new Routed(
        r.request(),
        r.backend(),
        r.resolvedModel(),
        r.fallbacks(),
        r.promptTokens(),
        r.matchedTokens(),
        r.cost(),
        r.reason(),
        r.attempt(),
        new ObservedLease(r.lease(), r.resolvedModel(), r.backendId()));
  }

  /**
   * A lease whose {@link #failover()} is observed as {@value #FAILOVER_NAME}; every other call
   * delegates. Thread-safe: the failure kind is a volatile field written by {@link #fail}.
   */
  private final class ObservedLease implements Lease {
    private final Lease lease;
    private final String model;
    private final String backend;
    private volatile Failure.@Nullable Kind failure;

    ObservedLease(Lease lease, String model, String backend) {
      this.lease = lease;
      this.model = model;
      this.backend = backend;
    }

    @Override
    public void firstToken() {
      lease.firstToken();
    }

    @Override
    public void complete(Usage usage) {
      lease.complete(usage);
    }

    @Override
    public void fail(Failure f) {
      if (f != null && !lease.isEnded()) {
        failure = f.kind();
      }
      lease.fail(f);
    }

    @Override
    public void fail(Failure f, Usage used) {
      if (f != null && !lease.isEnded()) {
        failure = f.kind();
      }
      lease.fail(f, used);
    }

    @Override
    public RouteDecision failover() {
      Failure.Kind k = failure;
      Observation obs =
          Observation.createNotStarted(FAILOVER_NAME, registry)
              .contextualName("prefixrouter failover")
              .lowCardinalityKeyValue("outcome", "error")
              .lowCardinalityKeyValue("model", model)
              .lowCardinalityKeyValue(
                  "failure", k == null ? "none" : k.name().toLowerCase(Locale.ROOT))
              .highCardinalityKeyValue("failed.backend", backend)
              .start();
      try {
        RouteDecision d = lease.failover();
        if (d instanceof Routed r) {
          obs.lowCardinalityKeyValue("outcome", "routed");
          obs.highCardinalityKeyValue("backend", r.backendId());
          return observed(r);
        } else if (d instanceof Rejected j) {
          obs.lowCardinalityKeyValue("outcome", outcome(j));
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
    public boolean isEnded() {
      return lease.isEnded();
    }

    /** The wrapped lease's: the handed-out copy reports the index's match as the engine's does. */
    @Override
    public int indexMatchedTokensOr(int otherwise) {
      return lease.indexMatchedTokensOr(otherwise);
    }

    @Override
    public String toString() {
      return "observed " + lease;
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
