package dev.prefixrouter.api;

import java.util.Arrays;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Cached blocks were evicted (re-allocated) by the engine.
 *
 * @param blockHashes engine hashes of the removed blocks (at least one)
 * @param medium where the blocks lived, or {@code null}
 */
public record BlockRemoved(long[] blockHashes, @Nullable String medium) implements KvEvent {

  public BlockRemoved {
    Objects.requireNonNull(blockHashes, "blockHashes");
    if (blockHashes.length == 0) {
      throw new IllegalArgumentException("blockHashes must not be empty");
    }
    blockHashes = blockHashes.clone();
  }

  public static BlockRemoved of(long... blockHashes) {
    return new BlockRemoved(blockHashes, null);
  }

  @Override
  public long[] blockHashes() {
    return blockHashes.clone();
  }

  public int blockCount() {
    return blockHashes.length;
  }

  public long blockHash(int i) {
    return blockHashes[i];
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof BlockRemoved r
        && Arrays.equals(blockHashes, r.blockHashes)
        && Objects.equals(medium, r.medium);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(blockHashes) + Objects.hashCode(medium);
  }

  @Override
  public String toString() {
    return "BlockRemoved[blocks=" + blockHashes.length + ", medium=" + medium + "]";
  }
}
