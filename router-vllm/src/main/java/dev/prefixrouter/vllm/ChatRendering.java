package dev.prefixrouter.vllm;

import java.io.Writer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import org.jspecify.annotations.Nullable;

/**
 * The canonical text a conversation is hashed as, built once per request while the body is read.
 *
 * <p>Each message is its role, {@code U+001F}, its content, then one {@code U+001D name U+001F
 * value} group per extra rendered field ({@code tool_calls}, {@code name}, {@code tool_call_id};
 * for {@code /v1/responses} items that are not messages, every field but {@code type}, {@code id}
 * and {@code status}), then {@code U+001E}. Roles, content, field names, media types and
 * instructions are {@linkplain #escape escaped}: a separator inside them is preceded by {@code
 * U+001B}. A plain conversation (roles and text only) renders exactly like {@code
 * BlockHashers.render} of router-radix, so a host that builds {@code Prompt.ofChat} itself gets the
 * same keys. Tools come first, as one message of role {@code tools} whose content is their compact
 * JSON, because chat templates render them ahead of the messages. Non-text content parts (images,
 * audio, video, files) are rendered as {@code U+001D type:digest U+001D}, where the digest is the
 * first 64 bits (as wide as a block key) of the SHA-256 over the part's fields in compact JSON (so
 * over its URL or inline data): different media give different keys, equal media equal keys.
 *
 * <p>The rendering is at most two chars per body byte (a minimal media part, 12 bytes of JSON,
 * renders as about 20 chars; everything else renders shorter than its JSON).
 *
 * <p>Not thread-safe: one instance per read.
 */
final class ChatRendering {
  static final char UNIT = '\u001F';
  static final char RECORD = '\u001E';
  static final char GROUP = '\u001D';

  private final StringBuilder text = new StringBuilder();
  private int messages;

  static final char ESCAPE = '\u001B';

  /**
   * Appends one message; {@code role} is raw (escaped here), {@code content} already {@linkplain
   * #escape escaped} (its media placeholders are not), {@code extras} already rendered as {@code
   * U+001D name U+001F value}.
   */
  void message(String role, CharSequence content, CharSequence extras) {
    text.append(escape(role)).append(UNIT).append(content).append(extras).append(RECORD);
    messages++;
  }

  /**
   * A raw string as rendered: each separator it contains ({@code U+001B}, {@code U+001D}, {@code
   * U+001E}, {@code U+001F}) preceded by {@code U+001B}, so that no content can spell another
   * conversation's structure (a message whose content holds {@code U+001E user U+001F ...} would
   * otherwise render, and be keyed, as two messages). Text without them is returned as is, so plain
   * conversations keep their keys. The same rule as {@code BlockHashers.render} of router-radix.
   */
  static CharSequence escape(CharSequence s) {
    int n = s.length();
    int i = 0;
    while (i < n && !separator(s.charAt(i))) {
      i++;
    }
    if (i == n) {
      return s;
    }
    StringBuilder out = new StringBuilder(n + 8).append(s, 0, i);
    for (; i < n; i++) {
      char c = s.charAt(i);
      if (separator(c)) {
        out.append(ESCAPE);
      }
      out.append(c);
    }
    return out;
  }

  private static boolean separator(char c) {
    return c == ESCAPE || c == GROUP || c == RECORD || c == UNIT;
  }

  int messages() {
    return messages;
  }

  /**
   * The rendering: {@code tools} (compact JSON, or null) as a message of role {@code tools}, then
   * {@code instructions} (or null) as a {@code system} message, then the messages.
   */
  String finish(@Nullable String tools, @Nullable String instructions) {
    if (tools == null && instructions == null) {
      return text.toString();
    }
    StringBuilder all =
        new StringBuilder(
            text.length()
                + (tools == null ? 0 : tools.length() + 7)
                + (instructions == null ? 0 : instructions.length() + 8));
    if (tools != null) {
      all.append("tools").append(UNIT).append(tools).append(RECORD);
    }
    if (instructions != null) {
      all.append("system").append(UNIT).append(escape(instructions)).append(RECORD);
    }
    return all.append(text).toString();
  }

  /** Renders an extra field into {@code out}: its name escaped, its value compact JSON. */
  static void extra(StringBuilder out, String name, CharSequence value) {
    out.append(GROUP).append(escape(name)).append(UNIT).append(value);
  }

  /** The placeholder of a non-text part (its type escaped). */
  static String mediaPlaceholder(String type, byte[] digest) {
    return GROUP + escape(type).toString() + ':' + HexFormat.of().formatHex(digest, 0, 8) + GROUP;
  }

  /** A writer that feeds SHA-256 with the UTF-16 code units written (big-endian); keeps nothing. */
  static final class DigestWriter extends Writer {
    private final MessageDigest sha;
    private final byte[] buf = new byte[8192];
    private int n;

    DigestWriter() {
      try {
        sha = MessageDigest.getInstance("SHA-256");
      } catch (NoSuchAlgorithmException e) {
        throw new IllegalStateException("SHA-256 is required of every Java platform", e);
      }
    }

    /** Starts a new digest (one writer serves every part of a body). */
    void reset() {
      sha.reset();
      n = 0;
    }

    @Override
    public void write(char[] cbuf, int off, int len) {
      for (int i = off; i < off + len; i++) {
        put(cbuf[i]);
      }
    }

    @Override
    public void write(String s, int off, int len) {
      for (int i = off; i < off + len; i++) {
        put(s.charAt(i));
      }
    }

    void put(CharSequence s) {
      for (int i = 0, n = s.length(); i < n; i++) {
        put(s.charAt(i));
      }
    }

    void put(char c) {
      if (n == buf.length) {
        sha.update(buf, 0, n);
        n = 0;
      }
      buf[n++] = (byte) (c >>> 8);
      buf[n++] = (byte) c;
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}

    byte[] digest() {
      sha.update(buf, 0, n);
      n = 0;
      return sha.digest();
    }
  }
}
