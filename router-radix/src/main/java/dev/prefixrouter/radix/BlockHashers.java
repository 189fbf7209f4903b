package dev.prefixrouter.radix;

import dev.prefixrouter.api.ChatMessage;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import java.util.List;

/**
 * Chained 64-bit block hashers: CityHash64 1.1 for token blocks, XXH3-64 ({@code
 * com.dynatrace.hash4j}) for text blocks and namespace seeds; nothing reads memory through {@code
 * sun.misc.Unsafe}. Keys are the values the hashers built on zero-allocation-hashing gave (pinned
 * by a test against that library), so replicas of older and newer versions share keys.
 *
 * <p>Key {@code i} depends on the whole prefix up to the end of block {@code i}, with {@code k[-1]
 * = seed}: for token blocks {@code k[i] = chain(k[i-1], city64(block i))} (each block hashed on its
 * own by CityHash64 and folded into the previous key by a multiply-xorshift that is a bijection of
 * the previous key), for text blocks {@code k[i] = xxh3(k[i-1] ‖ block i)}. Only full blocks are
 * hashed; a partial tail is ignored (engines never cache it). At most {@code maxBlocks} keys are
 * produced per prompt (default 8192); later blocks are not hashed. Nothing is allocated per block:
 * token blocks reuse a per-thread buffer, text blocks allocate one scratch buffer per call.
 *
 * <ul>
 *   <li>{@link #tokens(int)}: blocks of {@code blockSize} token ids (vLLM's default is 16). Text
 *       and chat prompts, which carry no token ids, are hashed as text blocks of {@code blockSize ×
 *       4} UTF-16 chars (the {@link Prompt#CHARS_PER_TOKEN_ESTIMATE} estimate), so a host without a
 *       tokenizer still gets prefix affinity.
 *   <li>{@link #chars(int)}: blocks of {@code blockChars} UTF-16 code units. The unit is the UTF-16
 *       code unit, not the code point: a surrogate pair split by a block boundary is hashed as its
 *       two halves, deterministically, so equal strings always give equal keys and non-ASCII text
 *       needs no special care.
 * </ul>
 *
 * <p><b>Chat rendering.</b> Chat prompts are hashed through one canonical rendering: for each
 * message, its role, the unit separator {@code U+001F}, its content and the record separator {@code
 * U+001E}. Equal conversations (same roles and contents in order) give equal keys, and a
 * conversation that extends another shares the earlier one's full blocks.
 *
 * <p>Hashers are immutable and thread-safe.
 */
public final class BlockHashers {
  /** Default cap on keys per prompt: 8192 blocks (128k tokens at 16 tokens per block). */
  public static final int DEFAULT_MAX_BLOCKS = 8192;

  private BlockHashers() {}

  /** Token blocks of {@code blockSize} ids, at most {@link #DEFAULT_MAX_BLOCKS} per prompt. */
  public static BlockHasher tokens(int blockSize) {
    return tokens(blockSize, DEFAULT_MAX_BLOCKS);
  }

  /**
   * Token blocks of {@code blockSize} ids, at most {@code maxBlocks} keys per prompt.
   *
   * @throws IllegalArgumentException if {@code blockSize} is not in {@code [1, 4096]} or {@code
   *     maxBlocks} not in {@code [1, 1 << 20]}
   */
  public static BlockHasher tokens(int blockSize, int maxBlocks) {
    check("blockSize", blockSize, 1, 4096);
    check("maxBlocks", maxBlocks, 1, 1 << 20);
    return new TokenBlockHasher(blockSize, maxBlocks);
  }

  /** Text blocks of {@code blockChars} UTF-16 code units, at most 8192 per prompt. */
  public static BlockHasher chars(int blockChars) {
    return chars(blockChars, DEFAULT_MAX_BLOCKS);
  }

  /**
   * Text blocks of {@code blockChars} UTF-16 code units, at most {@code maxBlocks} per prompt.
   *
   * @throws IllegalArgumentException if {@code blockChars} is not in {@code [1, 65536]} or {@code
   *     maxBlocks} not in {@code [1, 1 << 20]}
   */
  public static BlockHasher chars(int blockChars, int maxBlocks) {
    check("blockChars", blockChars, 1, 65_536);
    check("maxBlocks", maxBlocks, 1, 1 << 20);
    return new CharBlockHasher(blockChars, maxBlocks);
  }

  /**
   * The canonical rendering of a chat conversation that chat prompts are hashed through: per
   * message its role, {@code U+001F}, its content, {@code U+001E}; a separator ({@code U+001B},
   * {@code U+001D}, {@code U+001E}, {@code U+001F}) inside a role or content is preceded by {@code
   * U+001B}, so that no content spells another conversation (text without them renders as itself).
   * The OpenAI request reader of router-vllm renders plain conversations the same way.
   */
  public static String render(List<ChatMessage> messages) {
    int length = 0;
    for (ChatMessage m : messages) {
      length += m.role().length() + m.content().length() + 2;
    }
    StringBuilder sb = new StringBuilder(length);
    for (ChatMessage m : messages) {
      appendEscaped(sb, m.role());
      sb.append(UNIT);
      appendEscaped(sb, m.content());
      sb.append(RECORD);
    }
    return sb.toString();
  }

  private static final char ESCAPE = '\u001B';
  private static final char GROUP = '\u001D';
  private static final char RECORD = '\u001E';
  private static final char UNIT = '\u001F';

  /** Appends {@code s} with each separator it holds preceded by {@code U+001B}. */
  private static void appendEscaped(StringBuilder sb, String s) {
    int n = s.length();
    int i = 0;
    while (i < n && !separator(s.charAt(i))) {
      i++;
    }
    sb.append(s, 0, i);
    for (; i < n; i++) {
      char c = s.charAt(i);
      if (separator(c)) {
        sb.append(ESCAPE);
      }
      sb.append(c);
    }
  }

  private static boolean separator(char c) {
    return c == ESCAPE || c == GROUP || c == RECORD || c == UNIT;
  }

  /** The text a non-token prompt is hashed as. */
  static CharSequence textOf(Prompt prompt) {
    if (prompt instanceof Prompt.Text t) {
      return t.text();
    }
    if (prompt instanceof Prompt.Chat c) {
      return render(c.messages());
    }
    throw new IllegalArgumentException("not a text prompt: " + prompt);
  }

  private static void check(String field, int value, int min, int max) {
    if (value < min || value > max) {
      throw new IllegalArgumentException(
          field + " must be in [" + min + ", " + max + "], was " + value);
    }
  }
}
