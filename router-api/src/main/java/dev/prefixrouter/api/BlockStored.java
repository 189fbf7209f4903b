package dev.prefixrouter.api;

import java.util.Arrays;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Full blocks entered the engine's prefix cache.
 *
 * @param blockHashes engine hashes of the stored blocks, in sequence order (at least one)
 * @param parentBlockHash engine hash of the block before the first stored one, or {@code null} when
 *     the first stored block starts the sequence
 * @param tokenIds token ids of all stored blocks concatenated ({@code blockSize *
 *     blockHashes.length} ids); empty for events that carry no tokens (offload mediums)
 * @param blockSize tokens per engine block, {@code > 0}
 * @param medium where the blocks live ({@code "GPU"}, {@code "CPU"}, ...) or {@code null}
 * @param cacheSalt the request's {@code cache_salt} the engine hashed into the first stored block
 *     (vLLM puts it in that block's {@code extra_keys}, only for a block that starts the sequence),
 *     or {@code null}: the router keys these blocks from the same isolation seed as the salted
 *     requests (see {@link RouteRequest#cacheSalt()}); non-empty, and only without a parent
 * @param loraName the LoRA adapter whose blocks these are (vLLM's {@code lora_name}, hashed into
 *     every block), or {@code null} for the base model: the router keys them as it keys requests
 *     for that adapter ({@link RoutingEngineBuilder#loraAdapter}); non-empty
 */
public record BlockStored(
    long[] blockHashes,
    @Nullable Long parentBlockHash,
    int[] tokenIds,
    int blockSize,
    @Nullable String medium,
    @Nullable String cacheSalt,
    @Nullable String loraName)
    implements KvEvent {

  /** A base-model store (no LoRA adapter). */
  public BlockStored(
      long[] blockHashes,
      @Nullable Long parentBlockHash,
      int[] tokenIds,
      int blockSize,
      @Nullable String medium,
      @Nullable String cacheSalt) {
    this(blockHashes, parentBlockHash, tokenIds, blockSize, medium, cacheSalt, null);
  }

  /** An unsalted store (no {@code cache_salt}). */
  public BlockStored(
      long[] blockHashes,
      @Nullable Long parentBlockHash,
      int[] tokenIds,
      int blockSize,
      @Nullable String medium) {
    this(blockHashes, parentBlockHash, tokenIds, blockSize, medium, null, null);
  }

  public BlockStored {
    Objects.requireNonNull(blockHashes, "blockHashes");
    Objects.requireNonNull(tokenIds, "tokenIds");
    if (blockHashes.length == 0) {
      throw new IllegalArgumentException("blockHashes must not be empty");
    }
    if (blockSize <= 0) {
      throw new IllegalArgumentException("blockSize must be > 0, was " + blockSize);
    }
    if (tokenIds.length != 0 && (long) blockSize * blockHashes.length != tokenIds.length) {
      throw new IllegalArgumentException(
          "tokenIds length "
              + tokenIds.length
              + " != blockSize "
              + blockSize
              + " x "
              + blockHashes.length
              + " blocks");
    }
    if (cacheSalt != null && (cacheSalt.isEmpty() || parentBlockHash != null)) {
      throw new IllegalArgumentException(
          cacheSalt.isEmpty()
              ? "cacheSalt must not be empty"
              : "cacheSalt is only carried by a store that starts the sequence (no parent)");
    }
    if (loraName != null && loraName.isEmpty()) {
      throw new IllegalArgumentException("loraName must not be empty");
    }
    blockHashes = blockHashes.clone();
    tokenIds = tokenIds.clone();
  }

  @Override
  public long[] blockHashes() {
    return blockHashes.clone();
  }

  @Override
  public int[] tokenIds() {
    return tokenIds.clone();
  }

  /**
   * The token ids as a prompt (for the block hasher), without copying them: the prompt shares this
   * event's own array, which neither of them changes or hands out. Empty when the event carries no
   * tokens.
   */
  public Prompt tokens() {
    return Prompt.Tokens.sharing(tokenIds);
  }

  /** Number of stored blocks. */
  public int blockCount() {
    return blockHashes.length;
  }

  /** Engine hash of stored block {@code i}, without copying. */
  public long blockHash(int i) {
    return blockHashes[i];
  }

  /** Token id {@code i} of the concatenated blocks, without copying. */
  public int tokenId(int i) {
    return tokenIds[i];
  }

  /** Number of token ids carried. */
  public int tokenCount() {
    return tokenIds.length;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof BlockStored s
        && Arrays.equals(blockHashes, s.blockHashes)
        && Objects.equals(parentBlockHash, s.parentBlockHash)
        && Arrays.equals(tokenIds, s.tokenIds)
        && blockSize == s.blockSize
        && Objects.equals(medium, s.medium)
        && Objects.equals(cacheSalt, s.cacheSalt)
        && Objects.equals(loraName, s.loraName);
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        Arrays.hashCode(blockHashes),
        parentBlockHash,
        Arrays.hashCode(tokenIds),
        blockSize,
        medium,
        cacheSalt,
        loraName);
  }

  @Override
  public String toString() {
    return "BlockStored[blocks="
        + blockHashes.length
        + ", parent="
        + (parentBlockHash == null ? "none" : EngineHashes.toUnsignedString(parentBlockHash))
        + ", blockSize="
        + blockSize
        + ", medium="
        + medium
        + (cacheSalt == null ? "" : ", salted")
        + (loraName == null ? "" : ", lora=" + loraName)
        + "]";
  }
}
