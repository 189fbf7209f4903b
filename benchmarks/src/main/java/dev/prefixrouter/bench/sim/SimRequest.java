package dev.prefixrouter.bench.sim;

import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * One request of a workload: when it arrives, who sends it, its prompt token ids, how many tokens
 * it generates, the media item it carries ({@code -1} for none) and the retrieved chunks its prompt
 * holds (empty for none). Identical across policies.
 */
record SimRequest(
    int id,
    long arrivalNanos,
    String tenant,
    @Nullable String session,
    int[] tokens,
    int outputTokens,
    int media,
    List<Chunk> chunks) {

  /**
   * A retrieved chunk in the prompt: its corpus id and where its tokens are, in whole KV blocks
   * ({@code fromBlock} is the block index of its first token).
   */
  record Chunk(int id, int fromBlock, int blocks) {}

  SimRequest(
      int id, long arrivalNanos, String tenant, @Nullable String session, int[] tokens, int out) {
    this(id, arrivalNanos, tenant, session, tokens, out, -1, List.of());
  }
}
