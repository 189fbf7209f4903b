package dev.prefixrouter.api;

import java.util.List;

/**
 * Decides, for each LLM request, which inference backend serves it: the one that already holds the
 * prompt's prefix in its KV cache, without piling everything onto one node, within each tenant's
 * quota. The host owns the transport and supplies backend metrics; the engine owns the decision and
 * all the state behind it.
 *
 * <pre>{@code
 * RoutingEngine engine = RoutingEngine.builder()
 *     .backend(Backend.of("b0", "qwen2.5-7b").withCapacityBlocks(20_000))
 *     .backend(Backend.of("b1", "qwen2.5-7b").withCapacityBlocks(20_000))
 *     .build();
 * RouteDecision d = engine.route(RouteRequest.builder("acme", "qwen2.5-7b")
 *     .prompt(Prompt.ofTokens(ids)).maxOutputTokens(256).build());
 * if (d instanceof Routed r) { forward(r.backend()); r.lease().complete(usage); }
 * }</pre>
 *
 * <p>The pipeline of one {@link #route} call: validate → admit (tenant limiter) → eligible set
 * (model, draining, health, capabilities, labels) → hash the prompt into block keys → match them in
 * the prefix index → score → optional SLO admission → record (in-flight, predicted blocks) → {@link
 * Routed} with ranked fallbacks and a {@link Lease}.
 *
 * <p>Thread-safe: {@code route}, lease callbacks, {@link #backends() membership changes}, load
 * reports, KV events and {@link #inspect()} may all run concurrently.
 */
public interface RoutingEngine {

  /** A builder with the built-in simple parts (no index, least-in-flight, unlimited). */
  static RoutingEngineBuilder builder() {
    return new RoutingEngineBuilder();
  }

  /**
   * Routes one request. Never throws for runtime conditions: those are {@link Rejected} values.
   *
   * @throws NullPointerException if {@code request} is null
   */
  RouteDecision route(RouteRequest request);

  /** Membership and load reports. */
  BackendRegistry backends();

  /**
   * Applies a batch of KV-cache events of one backend to the prefix index, in order.
   *
   * @return false if no backend has this id (events racing a removal are dropped, not an error)
   */
  boolean applyKvEvents(String backendId, List<? extends KvEvent> batch);

  /**
   * Records that another router replica routed the prompt {@code keys[0..keyCount)} to {@code
   * backendId}: the index takes the keys as predicted blocks of that backend, exactly as it does
   * for this engine's own routes, without counting a request, calling listeners or the {@link
   * dev.prefixrouter.api.spi.PredictionSink} (no echo). Both replicas must hash alike (same hasher,
   * block size and prefix-isolation setting). Cost: one {@code recordRouted} of the index. {@code
   * keys} is not kept.
   *
   * @return false if no backend has this id (a record racing a removal is dropped, not an error)
   * @throws IllegalArgumentException if {@code keyCount} is not in {@code [0, keys.length]}
   */
  boolean applyPredicted(String backendId, long[] keys, int keyCount);

  /** An immutable picture of the engine's state. */
  RouterSnapshot inspect();
}
