package dev.prefixrouter.api.spi;

import dev.prefixrouter.api.Prompt;

/**
 * Turns a prompt into chained 64-bit block keys: {@code k[0] = H(seed, block 0)}, {@code k[i] =
 * H(k[i-1], block i)}, full blocks only. Equal keys at position {@code i} mean (with overwhelming
 * probability) equal prompts up to the end of block {@code i}.
 *
 * <p>Because the chain's only state is the previous key, hashing tokens with {@code seed = p}
 * continues a chain whose last key is {@code p}; prefix indexes use this to recompute keys from KV
 * events.
 *
 * <p><b>Call site:</b> once per {@code route()} on the caller's thread, and once per {@code
 * BlockStored} event. <b>Budget:</b> well under 1 µs per 1k tokens, no allocation per block.
 * Implementations are stateless and thread-safe.
 */
public interface BlockHasher {

  /**
   * Writes the keys of every full block of {@code prompt}, chained from {@code seed}, into a
   * caller's buffer and returns their number {@code n}: if {@code n <= out.length} they are in
   * {@code out[0..n)}; otherwise {@code out} holds nothing useful and the caller retries with an
   * array of at least {@code n}. Implementations return {@code n} without hashing when it does not
   * fit, and allocate nothing per block. {@code n} may be 0 (a prompt shorter than one block, or a
   * hasher that does not hash).
   */
  int keys(Prompt prompt, long seed, long[] out);

  /**
   * The keys of {@link #keys(Prompt, long, long[])} in a fresh array of exactly their number, for
   * callers off the routing hot path (KV events, tools, tests). Hashes once to count and once to
   * fill.
   *
   * @throws IllegalStateException if the hasher reports a negative or changing count
   */
  static long[] keysOf(BlockHasher hasher, Prompt prompt, long seed) {
    long[] none = new long[0];
    int n = hasher.keys(prompt, seed, none);
    if (n == 0) {
      return none;
    }
    if (n < 0) {
      throw new IllegalStateException("hasher " + hasher + " returned " + n + " keys");
    }
    long[] keys = new long[n];
    int again = hasher.keys(prompt, seed, keys);
    if (again != n) {
      throw new IllegalStateException(
          "hasher " + hasher + " returned " + n + " then " + again + " keys");
    }
    return keys;
  }

  /** Prompt tokens one block stands for (exact for token blocks, estimated for text blocks). */
  int tokensPerBlock();

  /**
   * A stable 64-bit seed for a namespace (a tenant id, a cache salt) used for prefix isolation. The
   * default is FNV-1a over the UTF-16 chars followed by a 64-bit finalizer; implementations may use
   * their own hash but must return the same value for the same string forever.
   */
  default long seed(String namespace) {
    long h = 0xcbf29ce484222325L;
    for (int i = 0; i < namespace.length(); i++) {
      h ^= namespace.charAt(i);
      h *= 0x100000001b3L;
    }
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    h *= 0xc4ceb9fe1a85ec53L;
    h ^= h >>> 33;
    return h;
  }

  /** A hasher that produces no keys: for engines without a prefix index. */
  static BlockHasher none() {
    return NoBlockHasher.INSTANCE;
  }
}
