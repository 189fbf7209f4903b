package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.api.spi.HealthPolicy;
import dev.prefixrouter.api.spi.PredictionSink;
import dev.prefixrouter.api.spi.PrefixIndex;
import dev.prefixrouter.api.spi.RoutingListener;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.TenantLimiter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * Builds a {@link RoutingEngine}. Setters validate at once and name the field in their message;
 * {@link #build()} checks combinations. Not thread-safe; the engine it builds is.
 *
 * <p>Defaults: no prefix index and no hashing ({@link PrefixIndex#none()}, {@link
 * BlockHasher#none()}), {@link Scorer#leastInFlight()}, {@link TenantLimiter#unlimited()}, {@link
 * HealthPolicy#alwaysHealthy()}, no {@link PredictionSink}, {@code System::nanoTime}, at most 256
 * backends, 3 fallbacks, a retry budget of 2 failovers per request, prefix isolation off.
 */
public final class RoutingEngineBuilder {

  /** Largest accepted {@link #maxBackends(int)}. */
  public static final int MAX_BACKENDS_LIMIT = 65_536;

  final List<Backend> backends = new ArrayList<>();
  BlockHasher hasher = BlockHasher.none();
  PrefixIndex index = PrefixIndex.none();
  Scorer scorer = Scorer.leastInFlight();
  TenantLimiter limiter = TenantLimiter.unlimited();
  HealthPolicy health = HealthPolicy.alwaysHealthy();
  final List<PredictionSink> predictionSinks = new ArrayList<>();
  final List<RoutingListener> listeners = new ArrayList<>();
  LongSupplier ticker = System::nanoTime;
  int maxBackends = 256;
  int maxFallbacks = 3;
  int retryBudget = 2;
  int snapshotTenants = 100;
  boolean prefixIsolation;
  final Set<String> loraAdapters = new LinkedHashSet<>();
  @Nullable CapacityObjective capacityObjective;
  final Map<String, String> aliases = new LinkedHashMap<>();
  final Map<String, Map<String, Integer>> splits = new LinkedHashMap<>();

  RoutingEngineBuilder() {}

  /** Adds a backend present from the start. */
  public RoutingEngineBuilder backend(Backend backend) {
    backends.add(Objects.requireNonNull(backend, "backend"));
    return this;
  }

  public RoutingEngineBuilder hasher(BlockHasher hasher) {
    this.hasher = Objects.requireNonNull(hasher, "hasher");
    return this;
  }

  public RoutingEngineBuilder prefixIndex(PrefixIndex index) {
    this.index = Objects.requireNonNull(index, "prefixIndex");
    return this;
  }

  /**
   * The scorer that ranks the candidates.
   *
   * @throws IllegalArgumentException if its {@link Scorer#name()} is null or blank (the name is a
   *     decision's {@link Routed#reason()} when the scorer sets none)
   */
  public RoutingEngineBuilder scorer(Scorer scorer) {
    Objects.requireNonNull(scorer, "scorer");
    String name = scorer.name();
    if (name == null || name.isBlank()) {
      throw new IllegalArgumentException(
          "scorer: name() of "
              + scorer.getClass().getName()
              + " must be a non-blank name, was "
              + (name == null ? "null" : "'" + name + "'"));
    }
    this.scorer = scorer;
    return this;
  }

  public RoutingEngineBuilder limiter(TenantLimiter limiter) {
    this.limiter = Objects.requireNonNull(limiter, "limiter");
    return this;
  }

  public RoutingEngineBuilder health(HealthPolicy health) {
    this.health = Objects.requireNonNull(health, "health");
    return this;
  }

  /**
   * Adds a receiver of each route's predicted block keys, e.g. a publisher that shares them with
   * other router replicas or the KV-event hash-parity check (see {@link PredictionSink}). Several
   * sinks are all called, in the order added, each guarded on its own (one that throws does not
   * keep the keys from the others); {@link PredictionSink#none()} is ignored.
   */
  public RoutingEngineBuilder predictionSink(PredictionSink sink) {
    Objects.requireNonNull(sink, "predictionSink");
    if (sink != PredictionSink.none()) {
      predictionSinks.add(sink);
    }
    return this;
  }

  /** Adds a listener; listeners are called in the order added. */
  public RoutingEngineBuilder listener(RoutingListener listener) {
    listeners.add(Objects.requireNonNull(listener, "listener"));
    return this;
  }

  /** The clock, in nanoseconds (monotonic). Tests pass a fake to control time. */
  public RoutingEngineBuilder ticker(LongSupplier ticker) {
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    return this;
  }

  /** Upper bound on concurrently registered backends (the dense slot space); 1..65536. */
  public RoutingEngineBuilder maxBackends(int maxBackends) {
    if (maxBackends < 1 || maxBackends > MAX_BACKENDS_LIMIT) {
      throw new IllegalArgumentException(
          "maxBackends must be in [1, " + MAX_BACKENDS_LIMIT + "], was " + maxBackends);
    }
    this.maxBackends = maxBackends;
    return this;
  }

  /** How many ranked fallbacks a {@link Routed} lists; 0..64. */
  public RoutingEngineBuilder maxFallbacks(int maxFallbacks) {
    if (maxFallbacks < 0 || maxFallbacks > 64) {
      throw new IllegalArgumentException("maxFallbacks must be in [0, 64], was " + maxFallbacks);
    }
    this.maxFallbacks = maxFallbacks;
    return this;
  }

  /** How many failovers one request may take; 0..16. */
  public RoutingEngineBuilder retryBudget(int retryBudget) {
    if (retryBudget < 0 || retryBudget > 16) {
      throw new IllegalArgumentException("retryBudget must be in [0, 16], was " + retryBudget);
    }
    this.retryBudget = retryBudget;
    return this;
  }

  /** How many tenants {@link RoutingEngine#inspect()} lists at most; 0..10000. */
  public RoutingEngineBuilder snapshotTenants(int snapshotTenants) {
    if (snapshotTenants < 0 || snapshotTenants > 10_000) {
      throw new IllegalArgumentException(
          "snapshotTenants must be in [0, 10000], was " + snapshotTenants);
    }
    this.snapshotTenants = snapshotTenants;
    return this;
  }

  /**
   * When on, block keys are seeded per tenant so tenants never share cached prefixes (pass a salt
   * bound to the tenant as vLLM's {@code cache_salt} too, so engine-side caches are isolated as
   * well: the tenant itself, or {@code <length>:<tenant>[|<client salt>]} as the gateway forwards
   * it). With KV events, a salted store is keyed with the seed of the last routed request carrying
   * its salt (else the tenant the salt names, or the salt taken as the tenant), so it confirms the
   * tenant's own keys; an unsalted store names no tenant and confirms only unisolated keys, so an
   * isolated tenant that sends no salt keeps its predictions only until the prediction TTL.
   */
  public RoutingEngineBuilder prefixIsolation(boolean prefixIsolation) {
    this.prefixIsolation = prefixIsolation;
    return this;
  }

  /**
   * Declares that requests for model {@code name} (after alias resolution and A/B split) are for
   * the LoRA adapter of that name: vLLM serves an adapter under the name it was registered with
   * ({@code --lora-modules name=path}) and hashes that name ({@code lora_name}) into every block of
   * its requests, so the adapter's cache is disjoint from the base model's. The router then seeds
   * those requests' block keys by the adapter (with the tenant and salt, as {@link
   * #prefixIsolation} does), and applies KV events carrying {@code lora_name == name} under the
   * same seed: an adapter's engine blocks confirm that adapter's requests and are never a hit for
   * the base model or another adapter. Events of an adapter not declared here are keyed by their
   * name too, so they confirm nothing (a miss, never a false hit). Models not declared keep their
   * keys unchanged.
   *
   * @throws IllegalArgumentException if {@code name} is blank
   */
  public RoutingEngineBuilder loraAdapter(String name) {
    Objects.requireNonNull(name, "name");
    if (name.isBlank()) {
      throw new IllegalArgumentException("loraAdapter: name must not be blank");
    }
    loraAdapters.add(name);
    return this;
  }

  /**
   * Turns on capacity planning: {@link RoutingEngine#inspect()} then carries, per model, the number
   * of backends an M/M/c model says meets this TTFT objective ({@link CapacityPlan}). Off by
   * default; routing costs the same either way (the plan is computed at inspection from counters
   * the engine keeps anyway).
   */
  public RoutingEngineBuilder capacityObjective(CapacityObjective objective) {
    this.capacityObjective = Objects.requireNonNull(objective, "capacityObjective");
    return this;
  }

  /** Requests for {@code alias} are served by {@code target} (e.g. {@code gpt-4 → llama-3-70b}). */
  public RoutingEngineBuilder modelAlias(String alias, String target) {
    Objects.requireNonNull(alias, "alias");
    Objects.requireNonNull(target, "target");
    if (alias.isBlank() || target.isBlank()) {
      throw new IllegalArgumentException("modelAlias: alias and target must not be blank");
    }
    if (alias.equals(target)) {
      throw new IllegalArgumentException("modelAlias: '" + alias + "' aliases itself");
    }
    aliases.put(alias, target);
    return this;
  }

  /**
   * Splits requests for {@code model} across target models by integer weights (e.g. {@code 90/10}
   * for an A/B test). Sticky per session id when the request has one.
   */
  public RoutingEngineBuilder modelSplit(String model, Map<String, Integer> weights) {
    Objects.requireNonNull(model, "model");
    Objects.requireNonNull(weights, "weights");
    if (weights.isEmpty()) {
      throw new IllegalArgumentException("modelSplit '" + model + "': weights must not be empty");
    }
    long total = 0;
    for (Map.Entry<String, Integer> e : weights.entrySet()) {
      Objects.requireNonNull(e.getKey(), "modelSplit target");
      Integer w = Objects.requireNonNull(e.getValue(), "modelSplit weight");
      if (w < 0) {
        throw new IllegalArgumentException(
            "modelSplit '" + model + "': weight of '" + e.getKey() + "' must be >= 0, was " + w);
      }
      total += w;
    }
    if (total <= 0 || total > 1_000_000) {
      throw new IllegalArgumentException(
          "modelSplit '" + model + "': weights must sum to (0, 1000000], was " + total);
    }
    splits.put(model, new LinkedHashMap<>(weights));
    return this;
  }

  /**
   * Builds the engine.
   *
   * @throws IllegalArgumentException for duplicate backend ids, too many backends, alias chains or
   *     cycles, or a split whose target is itself split or aliased
   */
  public RoutingEngine build() {
    Set<String> ids = new LinkedHashSet<>();
    for (Backend b : backends) {
      if (!ids.add(b.id())) {
        throw new IllegalArgumentException("duplicate backend id '" + b.id() + "'");
      }
    }
    if (backends.size() > maxBackends) {
      throw new IllegalArgumentException(
          backends.size() + " backends exceed maxBackends " + maxBackends);
    }
    for (Map.Entry<String, String> e : aliases.entrySet()) {
      if (aliases.containsKey(e.getValue())) {
        throw new IllegalArgumentException(
            "modelAlias '"
                + e.getKey()
                + "' → '"
                + e.getValue()
                + "' targets another alias; alias the final model directly");
      }
    }
    for (Map.Entry<String, Map<String, Integer>> e : splits.entrySet()) {
      if (aliases.containsKey(e.getKey())) {
        throw new IllegalArgumentException(
            "modelSplit '" + e.getKey() + "' is also an alias; split the alias target instead");
      }
      for (String target : e.getValue().keySet()) {
        if (splits.containsKey(target) || aliases.containsKey(target)) {
          throw new IllegalArgumentException(
              "modelSplit '"
                  + e.getKey()
                  + "' targets '"
                  + target
                  + "', which is split or aliased");
        }
      }
    }
    return new DefaultRoutingEngine(this);
  }
}
