package dev.prefixrouter.bench.sim;

/**
 * How many router replicas front the simulated fleet and whether they share predictions. Each
 * arrival goes to a replica drawn at random (seeded); every replica runs its own {@code
 * RoutingEngine} (own index, scorer, breakers and limiter), sees every load report and KV event,
 * and, when {@code shared}, applies the other replicas' predictions {@code shareDelayNanos} after
 * they routed. The sharing is in-process, through the engine's own seam ({@code PredictionSink} →
 * {@code applyPredicted}), as {@code RedisPredictionSharing} does through Redis; with KV events on,
 * only routes that predict blocks beyond what the index held are shared, as {@code
 * shareOnlyNewBlocks} does.
 *
 * @param replicas router replicas, 1..64
 * @param shared whether replicas share predictions
 * @param shareDelayNanos publish-to-apply delay of a shared prediction (batching plus Redis)
 */
record ReplicaSetup(int replicas, boolean shared, long shareDelayNanos) {
  ReplicaSetup {
    if (replicas < 1 || replicas > 64) {
      throw new IllegalArgumentException("replicas must be in [1, 64], was " + replicas);
    }
    if (shareDelayNanos < 0) {
      throw new IllegalArgumentException("shareDelayNanos must be >= 0, was " + shareDelayNanos);
    }
  }

  /** One replica: the engine alone. */
  static ReplicaSetup single() {
    return new ReplicaSetup(1, false, 0);
  }
}
