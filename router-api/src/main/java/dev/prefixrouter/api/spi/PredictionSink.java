package dev.prefixrouter.api.spi;

import dev.prefixrouter.api.Backend;

/**
 * Receives the block keys each route records as <em>predicted</em> in the prefix index, so that
 * they can be shared with other router replicas (which apply them through {@link
 * dev.prefixrouter.api.RoutingEngine#applyPredicted}). One sink per engine, set on the builder.
 *
 * <p><b>Call site:</b> synchronously on the routing thread, once per placement (first attempt or
 * failover) with at least one full block, after the index recorded the keys and with no engine lock
 * held. <b>Budget:</b> well under a microsecond for a 4k-token prompt: copy the keys and return;
 * never block, never do I/O here (hand the copy to a worker). A {@link RuntimeException} thrown
 * here is logged (rate-limited) and ignored, so the route goes on; an {@link Error} ends the new
 * lease and propagates, as a listener's does. Thread-safe: called concurrently by every routing
 * thread.
 *
 * <p>{@code keys} is a buffer the engine reuses: only its first {@code keyCount} entries are the
 * prompt's chained keys, and it must not be kept after the call returns.
 *
 * <pre>{@code
 * RoutingEngine.builder().predictionSink((backend, keys, n, held) -> publisher.offer(backend, keys, n))
 * }</pre>
 */
@FunctionalInterface
public interface PredictionSink {

  /**
   * The prompt {@code keys[0..keyCount)} was just routed to {@code backend}.
   *
   * @param heldBlocks how many leading blocks of the prompt the index believed {@code backend} held
   *     before this route (predicted or confirmed), in {@code [0, keyCount]}: the blocks from there
   *     on are new predictions
   */
  void onPredicted(Backend backend, long[] keys, int keyCount, int heldBlocks);

  /** A sink that does nothing (the default). */
  static PredictionSink none() {
    return NoPredictionSink.INSTANCE;
  }
}
