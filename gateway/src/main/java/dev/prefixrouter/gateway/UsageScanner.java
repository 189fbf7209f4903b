package dev.prefixrouter.gateway;

import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Finds the top-level {@code "usage"} member of a JSON object fed a byte at a time, however long
 * the body and wherever the member sits in it (engines write {@code usage} after {@code choices},
 * but members such as {@code prompt_logprobs} can follow it with megabytes). Tracks strings (with
 * their escapes) and nesting, so a {@code "usage"} inside a string or a nested object is not taken
 * for it; captures the member's value when it is an object and reads it when it closes. The last
 * such member wins, as in a parsed tree.
 *
 * <p>Bounds: O(1) work per byte; holds at most {@link #MAX_USAGE_BYTES} bytes (a usage object
 * longer than that is unreadable). Not thread-safe: one body, fed from one thread at a time.
 */
final class UsageScanner<U> {
  /** Longest usage object captured. */
  static final int MAX_USAGE_BYTES = 64 * 1024;

  private static final byte[] KEY = {'u', 's', 'a', 'g', 'e'};

  private final Function<byte[], @Nullable U> reader;
  private int depth;
  private boolean inString;
  private boolean escape;
  private int keyLen; // bytes of the current depth-1 string matched against KEY (-1: not it)
  private int expect; // 0: nothing; 1: the key "usage" was read (a colon next); 2: its value next
  private boolean capturing;
  private byte[] capture = new byte[256];
  private int captureLen;
  private boolean overflow;
  private @Nullable U found;
  private boolean seen;

  /**
   * @param reader reads a captured usage object's bytes (null: not valid counts)
   */
  UsageScanner(Function<byte[], @Nullable U> reader) {
    this.reader = reader;
  }

  /** Feeds the next byte of the body. */
  void feed(byte b) {
    if (capturing) {
      if (captureLen == capture.length && captureLen < MAX_USAGE_BYTES) {
        capture = java.util.Arrays.copyOf(capture, Math.min(MAX_USAGE_BYTES, 2 * captureLen));
      }
      if (captureLen < capture.length) {
        capture[captureLen++] = b;
      } else {
        overflow = true;
      }
    }
    if (inString) {
      if (escape) {
        escape = false;
        keyLen = -1;
      } else if (b == '\\') {
        escape = true;
      } else if (b == '"') {
        inString = false;
        if (depth == 1 && keyLen == KEY.length) {
          expect = 1;
        }
      } else if (keyLen >= 0) {
        keyLen = keyLen < KEY.length && KEY[keyLen] == b ? keyLen + 1 : -1;
      }
      return;
    }
    switch (b) {
      case '"' -> {
        inString = true;
        keyLen = depth == 1 && expect == 0 && !capturing ? 0 : -1;
        if (expect == 2 && depth == 1) {
          notAnObject();
        }
        expect = 0;
      }
      case '{' -> {
        if (expect == 2 && depth == 1) {
          capturing = true;
          overflow = false;
          capture[0] = '{';
          captureLen = 1;
        }
        depth++;
        expect = 0;
      }
      case '[' -> {
        if (expect == 2 && depth == 1) {
          notAnObject();
        }
        depth++;
        expect = 0;
      }
      case '}', ']' -> {
        depth--;
        if (capturing && depth == 1) {
          capturing = false;
          seen = true;
          found = overflow ? null : reader.apply(java.util.Arrays.copyOf(capture, captureLen));
        }
        expect = 0;
      }
      case ':' -> expect = expect == 1 ? 2 : 0;
      case ' ', '\n', '\r', '\t' -> {}
      default -> {
        if (expect == 2 && depth == 1) {
          notAnObject(); // null, a number, true or false
        }
        expect = 0;
      }
    }
  }

  /** Feeds {@code b[from, to)}. */
  void feed(byte[] b, int from, int to) {
    for (int i = from; i < to; i++) {
      feed(b[i]);
    }
  }

  private void notAnObject() {
    seen = true;
    found = null;
  }

  /**
   * The last top-level usage object's reading so far; null if there was none, the last one was not
   * an object, not valid counts, longer than {@link #MAX_USAGE_BYTES} or is not closed yet.
   */
  @Nullable U usage() {
    return capturing ? null : found;
  }

  /** Whether a top-level {@code usage} member was met (readable or not). */
  boolean seen() {
    return seen || capturing;
  }
}
