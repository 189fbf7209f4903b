package dev.prefixrouter.radix;

import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import net.openhft.hashing.LongHashFunction;

/**
 * {@code k[i] = chain(k[i-1], city64(block i's ids))}: each block is hashed on its own by
 * CityHash64 1.1 (zero-allocation-hashing's {@code city_1_1}; 64 bytes for 16-token blocks) and
 * folded into the previous key by {@link #chain}, a multiply-xorshift finalizer. The block hashes
 * are independent of each other, so the CPU overlaps them; only the cheap fold is sequential.
 * CityHash rather than xxh3: on 64-byte inputs it hashes a 4k-token prompt in 2.2 instead of 3.0 µs
 * here (see {@code benchmarks/README.md}). Ids are copied from the prompt in chunks of 16 blocks,
 * so one 1 KB per-thread buffer serves the whole prompt.
 */
final class TokenBlockHasher implements BlockHasher {
  private static final LongHashFunction CITY = LongHashFunction.city_1_1();

  /** Namespace seeds: xxh3, unchanged, since a seed must stay the same forever. */
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

  /** Ids are copied into a per-thread buffer of whole blocks (one block if a block is large). */
  private void hash(Prompt.Tokens t, long seed, long[] keys, int blocks) {
    int perChunk = Math.max(1, CHUNK_IDS / blockSize);
    int[] buf = IDS.get();
    if (buf.length < perChunk * blockSize) {
      buf = new int[perChunk * blockSize];
      IDS.set(buf);
    }
    long prev = seed;
    for (int first = 0; first < blocks; first += perChunk) {
      int n = Math.min(perChunk, blocks - first);
      t.copyTo(first * blockSize, buf, 0, n * blockSize);
      for (int j = 0; j < n; j++) {
        prev = chain(prev, CITY.hashInts(buf, j * blockSize, blockSize));
        keys[first + j] = prev;
      }
    }
  }

  /**
   * Ids copied per chunk (whole blocks; at least one block). 64 (four blocks a copy) cost 0.25 µs
   * more per 4k-token prompt than 256 in copies and loop overhead; larger chunks gain nothing.
   */
  private static final int CHUNK_IDS = 256;

  /** Per-thread id buffer: one chunk, or one block if blocks are larger than a chunk. */
  private static final ThreadLocal<int[]> IDS = ThreadLocal.withInitial(() -> new int[CHUNK_IDS]);

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
    return XX3.hashChars(namespace);
  }

  @Override
  public String toString() {
    return "BlockHashers.tokens(" + blockSize + ", maxBlocks=" + maxBlocks + ")";
  }
}
