package dev.prefixrouter.bench.sim;

import org.jspecify.annotations.Nullable;

/**
 * One request of a workload: when it arrives, who sends it, its prompt token ids, how many tokens
 * it generates and the media item it carries ({@code -1} for none). Identical across policies.
 */
record SimRequest(
    int id,
    long arrivalNanos,
    String tenant,
    @Nullable String session,
    int[] tokens,
    int outputTokens,
    int media) {

  SimRequest(
      int id, long arrivalNanos, String tenant, @Nullable String session, int[] tokens, int out) {
    this(id, arrivalNanos, tenant, session, tokens, out, -1);
  }
}
