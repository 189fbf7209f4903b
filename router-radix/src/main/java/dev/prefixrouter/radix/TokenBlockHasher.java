package dev.prefixrouter.radix;

import com.dynatrace.hash4j.hashing.Hasher64;
import com.dynatrace.hash4j.hashing.Hashing;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.IntBuffer;

/**
 * {@code k[i] = chain(k[i-1], city64(block i's ids))}: each block is hashed on its own by
 * CityHash64 1.1 ({@link CityHash64}: zero-allocation-hashing's {@code city_1_1} values, without
 * {@code Unsafe}; 64 bytes for 16-token blocks) and folded into the previous key by {@link #chain},
 * a multiply-xorshift finalizer. The block hashes are independent of each other, so the CPU
 * overlaps them; only the cheap fold is sequential. CityHash rather than xxh3: on 64-byte inputs it
 * hashes a 4k-token prompt in 2.2 instead of 3.0 µs here (see {@code benchmarks/README.md}). Ids
 * are copied from the prompt in chunks of 16 blocks, so one 1 KB per-thread buffer serves the whole
 * prompt.
 */
final class TokenBlockHasher implements BlockHasher {
  /**
   * Namespace seeds: XXH3-64 of the namespace's UTF-16LE code units (hash4j; the values
   * zero-allocation-hashing's {@code xx3().hashChars} gave before), unchanged since a seed must
   * stay the same forever.
   */
  static final Hasher64 XXH3 = Hashing.xxh3_64();

  private final int blockSize;
  private final int maxBlocks;
  private final CharBlockHasher textFallback;

  TokenBlockHasher(int blockSize, int maxBlocks) {
    this.blockSize = blockSize;
    this.maxBlocks = maxBlocks;
    this.textFallback = new CharBlockHasher(blockSize * Prompt.CHARS_PER_TOKEN_ESTIMATE, maxBlocks);
  }

  @Override
  public int keys(Prompt prompt, long seed, long[] out) {
    if (!(prompt instanceof Prompt.Tokens t)) {
      return textFallback.keys(prompt, seed, out);
    }
    int blocks = blocks(t);
    if (blocks <= out.length) {
      hash(t, seed, out, blocks);
    }
    return blocks;
  }

  private int blocks(Prompt.Tokens t) {
    return Math.min(maxBlocks, t.length() / blockSize);
  }

  /**
   * Ids are copied, little-endian, into a per-thread byte buffer of whole blocks (one block if a
   * block is large), which the block hash reads in 8-byte words.
   */
  private void hash(Prompt.Tokens t, long seed, long[] keys, int blocks) {
    int perChunk = Math.max(1, CHUNK_IDS / blockSize);
    Scratch s = SCRATCH.get();
    if (s.ints.capacity() < perChunk * blockSize) {
      s = new Scratch(perChunk * blockSize);
      SCRATCH.set(s);
    }
    byte[] bytes = s.bytes;
    IntBuffer ints = s.ints;
    int blockBytes = 4 * blockSize;
    long prev = seed;
    for (int first = 0; first < blocks; first += perChunk) {
      int n = Math.min(perChunk, blocks - first);
      ints.clear();
      t.copyTo(first * blockSize, ints, n * blockSize);
      for (int j = 0; j < n; j++) {
        prev = chain(prev, CityHash64.hash(bytes, j * blockBytes, blockBytes));
        keys[first + j] = prev;
      }
    }
  }

  /**
   * Ids copied per chunk (whole blocks; at least one block). 64 (four blocks a copy) cost 0.25 µs
   * more per 4k-token prompt than 256 in copies and loop overhead; larger chunks gain nothing.
   */
  private static final int CHUNK_IDS = 256;

  /** A byte array and a little-endian view of it as ids. */
  private static final class Scratch {
    final byte[] bytes;
    final IntBuffer ints;

    Scratch(int ids) {
      bytes = new byte[4 * ids];
      ints = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asIntBuffer();
    }
  }

  /** Per-thread id buffer: one chunk, or one block if blocks are larger than a chunk. */
  private static final ThreadLocal<Scratch> SCRATCH =
      ThreadLocal.withInitial(() -> new Scratch(CHUNK_IDS));

  /**
   * Folds a block's hash into the chain: not symmetric in its arguments, and a bijection of {@code
   * prev} for a fixed block hash, so distinct prefixes stay distinct keys as long as the block hash
   * does not collide on the block.
   */
  static long chain(long prev, long block) {
    long z = (prev ^ block) * 0x9E3779B97F4A7C15L + block;
    z = (z ^ (z >>> 32)) * 0xD6E8FEB86659FD93L;
    return z ^ (z >>> 32);
  }

  @Override
  public int tokensPerBlock() {
    return blockSize;
  }

  @Override
  public long seed(String namespace) {
    return XXH3.hashCharsToLong(namespace);
  }

  @Override
  public String toString() {
    return "BlockHashers.tokens(" + blockSize + ", maxBlocks=" + maxBlocks + ")";
  }
}
