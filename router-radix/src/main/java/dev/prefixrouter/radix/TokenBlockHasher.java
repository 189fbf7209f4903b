package dev.prefixrouter.radix;

import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import net.openhft.hashing.LongHashFunction;

/** Chained xxh3 over {@code [prev key as 2 ints, block ids...]}. */
final class TokenBlockHasher implements BlockHasher {
  private static final LongHashFunction XX3 = LongHashFunction.xx3();

  private final int blockSize;
  private final int maxBlocks;
  private final CharBlockHasher textFallback;

  TokenBlockHasher(int blockSize, int maxBlocks) {
    this.blockSize = blockSize;
    this.maxBlocks = maxBlocks;
    this.textFallback = new CharBlockHasher(blockSize * Prompt.CHARS_PER_TOKEN_ESTIMATE, maxBlocks);
  }

  @Override
  public long[] keys(Prompt prompt, long seed) {
    if (!(prompt instanceof Prompt.Tokens t)) {
      return textFallback.keys(prompt, seed);
    }
    int blocks = Math.min(maxBlocks, t.length() / blockSize);
    long[] keys = new long[blocks];
    int[] buf = new int[blockSize + 2];
    long prev = seed;
    for (int i = 0; i < blocks; i++) {
      buf[0] = (int) prev;
      buf[1] = (int) (prev >>> 32);
      t.copyTo(i * blockSize, buf, 2, blockSize);
      prev = XX3.hashInts(buf);
      keys[i] = prev;
    }
    return keys;
  }

  @Override
  public int tokensPerBlock() {
    return blockSize;
  }

  @Override
  public long seed(String namespace) {
    return XX3.hashChars(namespace);
  }

  @Override
  public String toString() {
    return "BlockHashers.tokens(" + blockSize + ", maxBlocks=" + maxBlocks + ")";
  }
}
