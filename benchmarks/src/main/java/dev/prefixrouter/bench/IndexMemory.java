package dev.prefixrouter.bench;

import dev.prefixrouter.api.BlockRemoved;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.IndexStats;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.radix.BlockHashers;
import dev.prefixrouter.radix.RadixPrefixIndex;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.time.Duration;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Bytes per (block, backend) entry of {@link RadixPrefixIndex} at 1M entries, measured as the
 * retained heap (used heap after full GCs, before and after filling) and as the index's own
 * estimate. Two layouts: every block held by one backend (no sharing), and every block held by two
 * backends (each node shared). Then the keys a hostile run of head-first removals leaves, and what
 * removing one run head first a block per event keeps and costs.
 *
 * <pre>java -Xmx4g -jar benchmarks/target/benchmarks.jar memory</pre>
 */
final class IndexMemory {
  private IndexMemory() {}

  static void run(PrintStream out) {
    out.println(
        "layout               maxBackends  entries    nodes    heap B/entry  estimate B/entry");
    for (int maxBackends : new int[] {64, 256}) {
      measure(out, "1 holder per block", maxBackends, 1);
      measure(out, "2 holders per block", maxBackends, 2);
    }
    headFirstRemovals(out, 8_000);
    perBlockHeadFirstRemovals(out, 8_000);
    evictedChainRemovals(out, 8_000);
  }

  /**
   * A chain of {@code depth} decode-time stores (one block each, below the previous one) evicted by
   * the mirror, then removed tail first a block per event as the engine frees it: the time for the
   * removals (each finds its block's path or its absence without re-making the chain).
   */
  private static void evictedChainRemovals(PrintStream out, int depth) {
    RadixPrefixIndex index = RadixPrefixIndex.builder().maxBackends(4).build();
    index.addBackend(0, depth + 10L);
    BlockHasher hasher = BlockHashers.tokens(1);
    index.apply(0, new BlockStored(new long[] {0}, null, new int[] {0}, 1, null), hasher, 0);
    for (int i = 1; i < depth; i++) {
      index.apply(
          0, new BlockStored(new long[] {i}, (long) (i - 1), new int[] {i}, 1, null), hasher, i);
    }
    long[] other = new long[depth + 10];
    for (int i = 0; i < other.length; i++) {
      other[i] = 0x9E3779B97F4A7C15L * (i + 7);
    }
    index.recordRouted(other, other.length, 0, depth); // evicts the chain
    long t0 = System.nanoTime();
    for (int i = depth - 1; i >= 0; i--) {
      index.apply(0, BlockRemoved.of(i), hasher, 2L * depth - i);
    }
    long t1 = System.nanoTime();
    out.printf(
        "tail-first removals of an evicted %d-store decode chain: %.1f ms (%.2f us per event)%n",
        depth, (t1 - t0) / 1e6, (t1 - t0) / 1e3 / depth);
  }

  /**
   * One run of {@code run} blocks stored, then removed head first one {@code BlockRemoved} per
   * block but the last: the retained heap (the split chain the event mappings keep reachable) and
   * the time for the removals.
   */
  private static void perBlockHeadFirstRemovals(PrintStream out, int run) {
    RadixPrefixIndex index = RadixPrefixIndex.builder().maxBackends(4).build();
    index.addBackend(0, 2L * run);
    BlockHasher hasher = BlockHashers.tokens(2);
    int[] tokens = new int[2 * run];
    long[] hashes = new long[run];
    for (int i = 0; i < run; i++) {
      tokens[2 * i] = tokens[2 * i + 1] = i + 1;
      hashes[i] = i + 1;
    }
    long before = usedAfterGc();
    index.apply(0, new BlockStored(hashes, null, tokens, 2, null), hasher, 0);
    long t0 = System.nanoTime();
    for (int i = 0; i < run - 1; i++) {
      index.apply(0, BlockRemoved.of(hashes[i]), hasher, 1 + i);
    }
    long t1 = System.nanoTime();
    long retained = usedAfterGc() - before;
    out.printf(
        "per-block head-first removals of a %d-block run: %.1f ms (%.1f us per event),"
            + " retained %.1f MB, %d held%n",
        run, (t1 - t0) / 1e6, (t1 - t0) / 1e3 / (run - 1), retained / 1e6, index.heldBlocks(0));
  }

  /**
   * A backend's KV events that remove sequences head first: {@code capacity / 2} rounds of "store
   * {@code capacity / 2} fresh blocks, remove all but the last, head first". Each round leaves keys
   * nobody holds above the one held block; the index prunes them once the tree's keys exceed twice
   * the capacities (before it did, about capacity²/4 keys stayed).
   */
  private static void headFirstRemovals(PrintStream out, int capacity) {
    RadixPrefixIndex index = RadixPrefixIndex.builder().maxBackends(4).build();
    index.addBackend(0, capacity);
    BlockHasher hasher = BlockHashers.tokens(2);
    int half = capacity / 2;
    long hash = 0;
    for (int round = 0; round < half; round++) {
      int[] tokens = new int[2 * half];
      long[] hashes = new long[half];
      for (int i = 0; i < half; i++) {
        tokens[2 * i] = tokens[2 * i + 1] = 1_000_000 * round + i + 1;
        hashes[i] = ++hash;
      }
      index.apply(0, new BlockStored(hashes, null, tokens, 2, null), hasher, round);
      index.apply(0, new BlockRemoved(Arrays.copyOf(hashes, half - 1), null), hasher, round);
    }
    IndexStats s = index.stats();
    out.printf(
        "head-first removals, capacity %d, %d rounds: %d keys in the tree, %d nodes, %d held,"
            + " %d prunes, estimate %.2f MB%n",
        capacity,
        half,
        s.counters().get("treeKeys"),
        s.nodes(),
        index.heldBlocks(0),
        s.counters().get("prunes"),
        s.approximateBytes() / 1e6);
  }

  private static void measure(PrintStream out, String name, int maxBackends, int holders) {
    int backends = 16;
    long entries = 1_000_000;
    long perBackend = entries / backends;
    long before = usedAfterGc();
    RadixPrefixIndex index =
        RadixPrefixIndex.builder().maxBackends(maxBackends).predictionTtl(Duration.ZERO).build();
    for (int b = 0; b < backends; b++) {
      index.addBackend(b, perBackend);
    }
    SplittableRandom rnd = new SplittableRandom(1);
    long[] path = new long[256];
    long now = 0;
    int groups = backends / holders;
    for (long p = 0; p < perBackend / path.length; p++) {
      for (int g = 0; g < groups; g++) {
        for (int i = 0; i < path.length; i++) {
          path[i] = rnd.nextLong();
        }
        for (int h = 0; h < holders; h++) {
          index.recordRouted(path, path.length, g * holders + h, now++);
        }
      }
    }
    long after = usedAfterGc();
    IndexStats s = index.stats();
    long held = s.predictedBlocks() + s.confirmedBlocks();
    out.printf(
        "%-20s %11d %8d %8d %13.1f %17.1f%n",
        name,
        maxBackends,
        held,
        s.nodes(),
        (double) (after - before) / held,
        (double) s.approximateBytes() / held);
    // keep the index reachable until measured
    if (index.heldBlocks(0) < 0) {
      throw new AssertionError();
    }
  }

  private static long usedAfterGc() {
    MemoryMXBean mx = ManagementFactory.getMemoryMXBean();
    for (int i = 0; i < 4; i++) {
      System.gc();
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    return mx.getHeapMemoryUsage().getUsed();
  }
}
