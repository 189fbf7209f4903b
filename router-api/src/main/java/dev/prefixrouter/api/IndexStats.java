package dev.prefixrouter.api;

import java.util.Map;

/**
 * Counters of a prefix index, for {@link RoutingEngine#inspect()}.
 *
 * @param nodes tree nodes currently allocated
 * @param predictedBlocks (block, backend) entries believed from routing decisions
 * @param confirmedBlocks (block, backend) entries confirmed by KV events
 * @param approximateBytes estimated heap used by the index
 * @param blocksPerBackend entries held per backend id
 * @param counters named event and anomaly counters (e.g. {@code kv.unknownParent}, {@code
 *     evictions})
 */
public record IndexStats(
    long nodes,
    long predictedBlocks,
    long confirmedBlocks,
    long approximateBytes,
    Map<String, Long> blocksPerBackend,
    Map<String, Long> counters) {

  public static final IndexStats EMPTY = new IndexStats(0, 0, 0, 0, Map.of(), Map.of());

  public IndexStats {
    blocksPerBackend = Map.copyOf(blocksPerBackend);
    counters = Map.copyOf(counters);
  }
}
