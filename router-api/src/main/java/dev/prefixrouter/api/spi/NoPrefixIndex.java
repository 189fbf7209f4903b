package dev.prefixrouter.api.spi;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.IndexStats;
import dev.prefixrouter.api.KvEvent;
import java.util.Arrays;

enum NoPrefixIndex implements PrefixIndex {
  INSTANCE;

  @Override
  public void addBackend(int slot, Backend backend) {}

  @Override
  public void updateBackend(int slot, Backend before, Backend after) {}

  @Override
  public void match(long[] keys, int keyCount, int[] slots, int count, int[] matchedOut) {
    PrefixIndex.checkKeyCount(keys, keyCount);
    Arrays.fill(matchedOut, 0, count, 0);
  }

  @Override
  public void recordRouted(long[] keys, int keyCount, int slot, long nowNanos) {
    PrefixIndex.checkKeyCount(keys, keyCount);
  }

  @Override
  public void apply(int slot, KvEvent event, BlockHasher hasher, long nowNanos) {}

  @Override
  public void removeBackend(int slot) {}

  @Override
  public IndexStats stats(String[] slotNames) {
    return IndexStats.EMPTY;
  }

  @Override
  public String toString() {
    return "PrefixIndex.none()";
  }
}
