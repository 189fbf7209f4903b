package dev.prefixrouter.radix;

import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.CharBuffer;
import java.nio.IntBuffer;

/**
 * Chained XXH3-64 (hash4j) over {@code [prev key as 4 chars, block chars...]}, each char as its two
 * little-endian bytes: the values zero-allocation-hashing's {@code xx3().hashChars} gave on a
 * little-endian machine, without its {@code Unsafe} reads ({@code BlockHasherCompatibilityTest}).
 */
final class CharBlockHasher implements BlockHasher {
  private static final VarHandle LONG_LE =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

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
    byte[] bytes = new byte[8 + 2 * blockChars];
    CharBuffer chars = afterKey(bytes).asCharBuffer();
    char[] block = new char[blockChars];
    long prev = seed;
    for (int i = 0; i < blocks; i++) {
      LONG_LE.set(bytes, 0, prev); // the key as 4 chars, low char first
      text.getChars(i * blockChars, (i + 1) * blockChars, block, 0);
      chars.clear();
      chars.put(block);
      prev = TokenBlockHasher.XXH3.hashBytesToLong(bytes);
      keys[i] = prev;
    }
  }

  /**
   * A token prompt under a text hasher: hashing the ids' decimal text would be arbitrary; the ids
   * themselves are hashed as pairs of chars, so equal token prompts still share keys.
   */
  private void tokenKeys(Prompt.Tokens t, long seed, long[] keys, int blocks) {
    int perBlock = tokensPerBlock();
    byte[] bytes = new byte[8 + 4 * perBlock];
    IntBuffer ids = afterKey(bytes).asIntBuffer();
    long prev = seed;
    for (int i = 0; i < blocks; i++) {
      LONG_LE.set(bytes, 0, prev); // the key as 2 ints, low int first
      ids.clear();
      t.copyTo(i * perBlock, ids, perBlock);
      prev = TokenBlockHasher.XXH3.hashBytesToLong(bytes);
      keys[i] = prev;
    }
  }

  /** A little-endian view of {@code bytes} after the 8 bytes of the previous key. */
  private static ByteBuffer afterKey(byte[] bytes) {
    return ByteBuffer.wrap(bytes, 8, bytes.length - 8).slice().order(ByteOrder.LITTLE_ENDIAN);
  }

  @Override
  public int tokensPerBlock() {
    return Math.max(1, blockChars / Prompt.CHARS_PER_TOKEN_ESTIMATE);
  }

  @Override
  public long seed(String namespace) {
    return TokenBlockHasher.XXH3.hashCharsToLong(namespace);
  }

  @Override
  public String toString() {
    return "BlockHashers.chars(" + blockChars + ", maxBlocks=" + maxBlocks + ")";
  }
}
