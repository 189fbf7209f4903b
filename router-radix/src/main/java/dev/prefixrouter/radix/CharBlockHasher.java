package dev.prefixrouter.radix;

import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import net.openhft.hashing.LongHashFunction;

/** Chained xxh3 over {@code [prev key as 4 chars, block chars...]}. */
final class CharBlockHasher implements BlockHasher {
  private static final LongHashFunction XX3 = LongHashFunction.xx3();

  private final int blockChars;
  private final int maxBlocks;

  CharBlockHasher(int blockChars, int maxBlocks) {
    this.blockChars = blockChars;
    this.maxBlocks = maxBlocks;
  }

  @Override
  public int keys(Prompt prompt, long seed, long[] out) {
    if (prompt instanceof Prompt.Tokens t) {
      int blocks = tokenBlocks(t);
      if (blocks <= out.length) {
        tokenKeys(t, seed, out, blocks);
      }
      return blocks;
    }
    String text = BlockHashers.textOf(prompt).toString();
    int blocks = textBlocks(text);
    if (blocks <= out.length) {
      textKeys(text, seed, out, blocks);
    }
    return blocks;
  }

  private int textBlocks(String text) {
    return Math.min(maxBlocks, text.length() / blockChars);
  }

  private int tokenBlocks(Prompt.Tokens t) {
    return Math.min(maxBlocks, t.length() / tokensPerBlock());
  }

  private void textKeys(String text, long seed, long[] keys, int blocks) {
    char[] buf = new char[blockChars + 4];
    long prev = seed;
    for (int i = 0; i < blocks; i++) {
      putLong(buf, prev);
      text.getChars(i * blockChars, (i + 1) * blockChars, buf, 4);
      prev = XX3.hashChars(buf);
      keys[i] = prev;
    }
  }

  /**
   * A token prompt under a text hasher: hashing the ids' decimal text would be arbitrary; the ids
   * themselves are hashed as pairs of chars, so equal token prompts still share keys.
   */
  private void tokenKeys(Prompt.Tokens t, long seed, long[] keys, int blocks) {
    int perBlock = tokensPerBlock();
    int[] buf = new int[perBlock + 2];
    long prev = seed;
    for (int i = 0; i < blocks; i++) {
      buf[0] = (int) prev;
      buf[1] = (int) (prev >>> 32);
      t.copyTo(i * perBlock, buf, 2, perBlock);
      prev = XX3.hashInts(buf);
      keys[i] = prev;
    }
  }

  private static void putLong(char[] buf, long v) {
    buf[0] = (char) v;
    buf[1] = (char) (v >>> 16);
    buf[2] = (char) (v >>> 32);
    buf[3] = (char) (v >>> 48);
  }

  @Override
  public int tokensPerBlock() {
    return Math.max(1, blockChars / Prompt.CHARS_PER_TOKEN_ESTIMATE);
  }

  @Override
  public long seed(String namespace) {
    return XX3.hashChars(namespace);
  }

  @Override
  public String toString() {
    return "BlockHashers.chars(" + blockChars + ", maxBlocks=" + maxBlocks + ")";
  }
}
