package dev.prefixrouter.api;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.ToLongFunction;

/**
 * A canonical order for the retrieved chunks of a RAG prompt, for the host to apply before it
 * renders the prompt: two requests that retrieved the same set of chunks, in whatever order, then
 * carry the same chunk sequence, so the engine's prefix cache (and the router's prefix index) reuse
 * one request's KV for the other. Retrieval order is lost, which models are mostly insensitive to
 * for grounding chunks; keep it where it matters (e.g. put the order in the text).
 *
 * <p>The order is by a 64-bit key per chunk, ascending. Which key: {@link #canonicalById} hashes
 * the chunk's id ({@link #stableKey}), which makes equal sets equal and nothing more; a key that
 * puts frequently retrieved chunks first (e.g. the chunk's popularity rank in the corpus, with the
 * id as tie-break) also gives <em>overlapping</em> sets a shared leading run, which the prefix
 * cache reuses as well. The simulator's {@code rag} workload measures both.
 *
 * <p>Pure, thread-safe; O(k log k) for k chunks, at most {@link #MAX_CHUNKS}.
 */
public final class ChunkOrder {
  /** Most chunks one call orders. */
  public static final int MAX_CHUNKS = 4096;

  private ChunkOrder() {}

  /**
   * The chunks sorted by {@code key} ascending.
   *
   * @throws IllegalArgumentException when two chunks have the same key (their order would depend on
   *     the input order, breaking the guarantee) or there are more than {@link #MAX_CHUNKS}
   * @throws NullPointerException for a null chunk
   */
  public static <T> List<T> canonical(
      Collection<? extends T> chunks, ToLongFunction<? super T> key) {
    Objects.requireNonNull(chunks, "chunks");
    Objects.requireNonNull(key, "key");
    int n = chunks.size();
    if (n > MAX_CHUNKS) {
      throw new IllegalArgumentException(
          "at most " + MAX_CHUNKS + " chunks can be ordered, got " + n);
    }
    long[] keys = new long[n];
    List<T> in = new ArrayList<>(n);
    int i = 0;
    for (T c : chunks) {
      in.add(Objects.requireNonNull(c, "chunk"));
      keys[i] = key.applyAsLong(c);
      i++;
    }
    Integer[] idx = new Integer[n];
    for (int j = 0; j < n; j++) {
      idx[j] = j;
    }
    Arrays.sort(idx, (a, b) -> Long.compare(keys[a], keys[b]));
    List<T> out = new ArrayList<>(n);
    for (int j = 0; j < n; j++) {
      if (j > 0 && keys[idx[j]] == keys[idx[j - 1]]) {
        throw new IllegalArgumentException(
            "two chunks have the same key "
                + keys[idx[j]]
                + " (chunks at positions "
                + idx[j - 1]
                + " and "
                + idx[j]
                + ")");
      }
      out.add(in.get(idx[j]));
    }
    return Collections.unmodifiableList(out);
  }

  /**
   * The chunks sorted by {@link #stableKey} of their ids.
   *
   * @throws IllegalArgumentException for two equal ids (or, with probability about k²/2⁶⁵, two ids
   *     whose keys collide) or more than {@link #MAX_CHUNKS} chunks
   */
  public static <T> List<T> canonicalById(
      Collection<? extends T> chunks, Function<? super T, String> id) {
    Objects.requireNonNull(id, "id");
    return canonical(chunks, c -> stableKey(Objects.requireNonNull(id.apply(c), "chunk id")));
  }

  /**
   * A 64-bit key of a chunk id that is the same in every process and version: FNV-1a over the id's
   * UTF-8 bytes, then a 64-bit finaliser (murmur3's fmix64) so that keys of similar ids are spread.
   * Not a cryptographic hash.
   */
  public static long stableKey(String id) {
    long h = 0xcbf29ce484222325L;
    for (byte b : id.getBytes(StandardCharsets.UTF_8)) {
      h ^= b & 0xff;
      h *= 0x100000001b3L;
    }
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    h *= 0xc4ceb9fe1a85ec53L;
    h ^= h >>> 33;
    return h;
  }
}
