package dev.prefixrouter.bench.sim;

import org.jspecify.annotations.Nullable;

/**
 * One request of a workload: when it arrives, who sends it, its prompt token ids and how many
 * tokens it generates. Identical across policies.
 */
record SimRequest(
    int id,
    long arrivalNanos,
    String tenant,
    @Nullable String session,
    int[] tokens,
    int outputTokens) {}
