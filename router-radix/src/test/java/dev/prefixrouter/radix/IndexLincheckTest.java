package dev.prefixrouter.radix;

import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import java.time.Duration;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Lincheck linearizability check of {@code match} / {@code recordRouted} / {@code removeBackend}
 * (followed by re-adding the slot) on a small index: two backends of capacity 2 and 3 (evictions on
 * most writes) and paths that share prefixes and diverge inside runs, so writes split nodes and
 * evict runs while matches walk them, and a held path's recency refresh (the mirror lock alone)
 * races with writes of the other backend that split the nodes it touches. Recency is observable
 * through what later writes evict; {@code consistent} checks a mirror's lists in between.
 */
@Param(name = "path", gen = IntGen.class, conf = "0:5")
@Param(name = "slot", gen = IntGen.class, conf = "0:1")
@Tag("stress")
public class IndexLincheckTest {
  private static final BlockHasher H = BlockHashers.tokens(1);
  private static final long[][] PATHS = {
    keys(1, 2, 3), keys(1, 2, 4), keys(1, 5), keys(6), keys(1, 2, 3, 7), keys(6, 8)
  };
  private static final int[] SLOTS = {0, 1};

  private final RadixPrefixIndex index =
      RadixPrefixIndex.builder().maxBackends(2).predictionTtl(Duration.ZERO).build();

  public IndexLincheckTest() {
    index.addBackend(0, 2);
    index.addBackend(1, 3);
  }

  private static long[] keys(int... tokens) {
    return BlockHasher.keysOf(H, Prompt.ofTokens(tokens), 0);
  }

  /** Matched blocks of both slots, encoded as {@code 10 * slot0 + slot1}. */
  @Operation
  public int match(@Param(name = "path") int path) {
    int[] out = new int[2];
    index.match(PATHS[path], PATHS[path].length, SLOTS, 2, out);
    return 10 * out[0] + out[1];
  }

  @Operation
  public void recordRouted(@Param(name = "path") int path, @Param(name = "slot") int slot) {
    index.recordRouted(PATHS[path], PATHS[path].length, slot, 0);
  }

  /** Whether a backend's mirror is well formed (always, in any sequential history). */
  @Operation
  public boolean consistent(@Param(name = "slot") int slot) {
    return index.listsConsistent(slot);
  }

  private final Object[] membership = {new Object(), new Object()};

  /**
   * Removes a backend and re-adds its slot. Membership calls for one slot are serialized, as the
   * engine's registry guarantees ({@code PrefixIndex} contract), so the harness does the same.
   */
  @Operation
  public void reset(@Param(name = "slot") int slot) {
    synchronized (membership[slot]) {
      index.removeBackend(slot);
      index.addBackend(slot, 2 + slot);
    }
  }

  @Test
  void stressLinearizable() {
    new StressOptions()
        .iterations(20)
        .invocationsPerIteration(1_000)
        .threads(2)
        .actorsPerThread(3)
        .check(IndexLincheckTest.class);
  }

  @Test
  void modelCheckingLinearizable() {
    new ModelCheckingOptions()
        .iterations(10)
        .invocationsPerIteration(300)
        .threads(2)
        .actorsPerThread(2)
        .check(IndexLincheckTest.class);
  }
}
