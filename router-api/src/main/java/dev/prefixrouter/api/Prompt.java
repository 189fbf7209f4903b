package dev.prefixrouter.api;

import java.nio.IntBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * The prompt of a request, in the richest form the host has: token ids (exact prefix matching), raw
 * text, or chat messages (hashed through one canonical rendering by the block hasher).
 *
 * <p>Instances are immutable and thread-safe. Token ids are copied once on construction.
 */
public sealed interface Prompt permits Prompt.Tokens, Prompt.Text, Prompt.Chat {

  /** Characters per token assumed when a prompt carries no token ids (a common English average). */
  int CHARS_PER_TOKEN_ESTIMATE = 4;

  /**
   * The number of prompt tokens: exact for {@link Tokens}, estimated as {@code ceil(chars / 4)} for
   * text and chat (plus 4 tokens of template overhead per chat message).
   */
  int estimatedTokens();

  static Prompt ofTokens(int... ids) {
    return new Tokens(ids);
  }

  static Prompt ofText(String text) {
    return new Text(text);
  }

  static Prompt ofChat(List<ChatMessage> messages) {
    return new Chat(messages);
  }

  static Prompt ofChat(ChatMessage... messages) {
    return new Chat(List.of(messages));
  }

  /** Token ids, exactly as the engine will see them (same tokenizer and chat template). */
  final class Tokens implements Prompt {
    private final int[] ids;

    Tokens(int[] ids) {
      this(Objects.requireNonNull(ids, "ids"), true);
    }

    private Tokens(int[] ids, boolean copy) {
      this.ids = copy ? ids.clone() : ids;
    }

    /**
     * Over {@code ids} without copying them: only for an array that its owner never changes nor
     * hands out (a {@link BlockStored}'s own copy); this prompt never exposes it either.
     */
    static Tokens sharing(int[] ids) {
      return new Tokens(Objects.requireNonNull(ids, "ids"), false);
    }

    public int length() {
      return ids.length;
    }

    public int token(int index) {
      return ids[index];
    }

    /** Copies {@code length} ids starting at {@code from} into {@code dst} at {@code dstPos}. */
    public void copyTo(int from, int[] dst, int dstPos, int length) {
      System.arraycopy(ids, from, dst, dstPos, length);
    }

    /**
     * Puts {@code length} ids starting at {@code from} into {@code dst} at its position, which
     * advances by {@code length} (one bulk copy: over a little-endian {@code ByteBuffer} this
     * writes the ids' bytes as a hasher reads them).
     *
     * @throws IndexOutOfBoundsException if the ids are not within this prompt
     * @throws java.nio.BufferOverflowException if {@code dst} has fewer than {@code length}
     *     remaining
     */
    public void copyTo(int from, IntBuffer dst, int length) {
      dst.put(ids, from, length);
    }

    /** A fresh copy of all ids. */
    public int[] toArray() {
      return ids.clone();
    }

    @Override
    public int estimatedTokens() {
      return ids.length;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Tokens t && Arrays.equals(ids, t.ids);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(ids);
    }

    @Override
    public String toString() {
      return "Tokens[length=" + ids.length + "]";
    }
  }

  /** Raw prompt text (for hosts without a tokenizer). */
  record Text(String text) implements Prompt {
    public Text {
      Objects.requireNonNull(text, "text");
    }

    @Override
    public int estimatedTokens() {
      return ceilDiv(text.length(), CHARS_PER_TOKEN_ESTIMATE);
    }

    @Override
    public String toString() {
      return "Text[length=" + text.length() + "]";
    }
  }

  /** Chat messages in order; copied on construction. */
  record Chat(List<ChatMessage> messages) implements Prompt {
    public Chat {
      messages = List.copyOf(messages);
    }

    @Override
    public int estimatedTokens() {
      long chars = 0;
      for (ChatMessage m : messages) {
        chars += m.role().length() + m.content().length();
      }
      long tokens = ceilDiv(chars, CHARS_PER_TOKEN_ESTIMATE) + 4L * messages.size();
      return (int) Math.min(Integer.MAX_VALUE, tokens);
    }

    @Override
    public String toString() {
      return "Chat[messages=" + messages.size() + "]";
    }
  }

  private static int ceilDiv(long a, int b) {
    return (int) Math.min(Integer.MAX_VALUE, (a + b - 1) / b);
  }
}
