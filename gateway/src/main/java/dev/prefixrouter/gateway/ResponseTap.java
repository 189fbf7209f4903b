package dev.prefixrouter.gateway;

import dev.prefixrouter.api.Usage;
import java.io.ByteArrayOutputStream;
import org.jspecify.annotations.Nullable;
import org.springframework.core.io.buffer.DataBuffer;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Watches one backend response as it passes through, without holding it back: for a stream ({@code
 * text/event-stream}) it splits {@code data:} lines across chunks, reports the first line that
 * carries content (a chat {@code delta} with content, reasoning or tool calls, a completions {@code
 * text}, a Responses {@code *.delta} event) and keeps the last usage seen (chat/completions {@code
 * usage}, Responses {@code response.completed}'s {@code response.usage}); for a JSON body it keeps
 * a copy and reads its {@code usage} at the end.
 *
 * <p>Bounds: a stream line longer than {@value #MAX_LINE_BYTES} bytes and a JSON body longer than
 * the configured cap are passed through unread (no usage from them). Lines are parsed as JSON only
 * until the first content is seen, and afterwards only when they mention {@code usage}; cost is
 * linear in the bytes seen. One instance per attempt, called from one thread at a time (Reactor
 * serializes {@code onNext}).
 */
final class ResponseTap {
  /** Longest SSE line read for usage or content (longer ones pass through unread). */
  static final int MAX_LINE_BYTES = 1 << 20;

  private static final JsonMapper JSON = JsonMapper.builder().build();
  private static final byte[] USAGE = "\"usage\"".getBytes(java.nio.charset.StandardCharsets.UTF_8);

  private final boolean stream;
  private final int maxJsonBytes;
  private final Runnable onFirstContent;
  private byte[] line = new byte[512];
  private int lineLen;
  private boolean lineTooLong;
  private boolean sawContent;
  private int dataEvents;
  private boolean bytesSeen;
  private @Nullable Usage usage;
  private final @Nullable ByteArrayOutputStream json;
  private boolean jsonTooLong;

  /**
   * @param stream whether the body is an event stream (else JSON)
   * @param maxJsonBytes largest JSON body read for its usage
   * @param onFirstContent called once, when the first content line has been seen
   */
  ResponseTap(boolean stream, int maxJsonBytes, Runnable onFirstContent) {
    this.stream = stream;
    this.maxJsonBytes = maxJsonBytes;
    this.onFirstContent = onFirstContent;
    this.json = stream ? null : new ByteArrayOutputStream(1024);
  }

  /** Reads a chunk without consuming it. */
  void onChunk(DataBuffer buffer) {
    int n = buffer.readableByteCount();
    if (n > 0) {
      bytesSeen = true;
    }
    int start = buffer.readPosition();
    if (!stream) {
      if (jsonTooLong || json == null) {
        return;
      }
      if (json.size() + n > maxJsonBytes) {
        jsonTooLong = true;
        json.reset();
        return;
      }
      byte[] copy = new byte[n];
      buffer.toByteBuffer(start, java.nio.ByteBuffer.wrap(copy), 0, n);
      json.write(copy, 0, n);
      return;
    }
    for (int i = 0; i < n; i++) {
      byte b = buffer.getByte(start + i);
      if (b == '\n') {
        endLine();
      } else if (!lineTooLong) {
        append(b);
      }
    }
  }

  private void append(byte b) {
    if (lineLen == line.length) {
      if (lineLen >= MAX_LINE_BYTES) {
        lineTooLong = true;
        lineLen = 0;
        return;
      }
      line = java.util.Arrays.copyOf(line, Math.min(MAX_LINE_BYTES, lineLen * 2));
    }
    line[lineLen++] = b;
  }

  /** Call once the body has ended: a last line without a newline, or the JSON body, is read. */
  void onEnd() {
    if (stream) {
      endLine();
    } else if (json != null && !jsonTooLong && json.size() > 0) {
      JsonNode node = parse(json.toByteArray(), 0, json.size());
      if (node != null) {
        Usage u = usageOf(node);
        if (u != null) {
          usage = u;
        }
      }
    }
  }

  /** Whether any byte of the body has been seen. */
  boolean bytesSeen() {
    return bytesSeen;
  }

  /** Whether a content line was seen. */
  boolean sawContent() {
    return sawContent;
  }

  /** The engine's usage, if it sent one. */
  @Nullable Usage usage() {
    return usage;
  }

  /** {@code data:} events seen (a stand-in for output tokens when the engine sends no usage). */
  int dataEvents() {
    return dataEvents;
  }

  private void endLine() {
    boolean tooLong = lineTooLong;
    lineTooLong = false;
    byte[] b = line;
    int len = lineLen;
    lineLen = 0;
    if (tooLong) {
      return;
    }
    if (len > 0 && b[len - 1] == '\r') {
      len--;
    }
    if (len < 5 || b[0] != 'd' || b[1] != 'a' || b[2] != 't' || b[3] != 'a' || b[4] != ':') {
      return;
    }
    int from = 5;
    while (from < len && b[from] == ' ') {
      from++;
    }
    if (len - from == 6
        && new String(b, from, 6, java.nio.charset.StandardCharsets.US_ASCII).equals("[DONE]")) {
      return;
    }
    dataEvents++;
    boolean mentionsUsage = contains(b, from, len, USAGE);
    if (sawContent && !mentionsUsage) {
      return;
    }
    JsonNode node = parse(b, from, len - from);
    if (node == null) {
      return;
    }
    if (!sawContent && hasContent(node)) {
      sawContent = true;
      onFirstContent.run();
    }
    if (mentionsUsage) {
      Usage u = usageOf(node);
      if (u != null) {
        usage = u;
      }
    }
  }

  private static @Nullable JsonNode parse(byte[] b, int off, int len) {
    try {
      return JSON.readTree(b, off, len);
    } catch (JacksonException e) {
      return null;
    }
  }

  /** Whether one event carries output: text, reasoning, tool calls, or a Responses delta. */
  static boolean hasContent(JsonNode node) {
    JsonNode type = node.get("type");
    if (type != null && type.isString() && type.asString().endsWith(".delta")) {
      return true;
    }
    JsonNode choices = node.get("choices");
    if (choices == null || !choices.isArray()) {
      return false;
    }
    for (JsonNode c : choices) {
      if (nonEmptyText(c.get("text"))) {
        return true;
      }
      JsonNode delta = c.get("delta");
      if (delta != null
          && (nonEmptyText(delta.get("content"))
              || nonEmptyText(delta.get("reasoning_content"))
              || nonEmptyText(delta.get("reasoning"))
              || (delta.get("tool_calls") != null && !delta.get("tool_calls").isEmpty()))) {
        return true;
      }
    }
    return false;
  }

  /**
   * The usage of a chat/completions chunk or body ({@code usage.prompt_tokens}, {@code
   * completion_tokens}, {@code prompt_tokens_details.cached_tokens}) or of a Responses body or
   * {@code response.completed} event ({@code input_tokens}, {@code output_tokens}, {@code
   * input_tokens_details.cached_tokens}); null if absent or not valid counts.
   */
  static @Nullable Usage usageOf(JsonNode node) {
    JsonNode u = node.get("usage");
    if ((u == null || !u.isObject()) && node.get("response") != null) {
      u = node.get("response").get("usage");
    }
    if (u == null || !u.isObject()) {
      return null;
    }
    long prompt = count(u, "prompt_tokens", "input_tokens");
    long completion = count(u, "completion_tokens", "output_tokens");
    if (prompt < 0
        || completion < 0
        || prompt > Integer.MAX_VALUE
        || completion > Integer.MAX_VALUE) {
      return null;
    }
    JsonNode details = u.get("prompt_tokens_details");
    if (details == null || !details.isObject()) {
      details = u.get("input_tokens_details");
    }
    long cached = details != null && details.isObject() ? count(details, "cached_tokens", "") : 0;
    cached = Math.max(0, Math.min(cached, prompt));
    return new Usage((int) prompt, (int) completion, (int) cached);
  }

  private static long count(JsonNode obj, String name, String otherName) {
    JsonNode v = obj.get(name);
    if (v == null && !otherName.isEmpty()) {
      v = obj.get(otherName);
    }
    if (v == null || v.isNull()) {
      return 0;
    }
    return v.isIntegralNumber() && v.canConvertToLong() ? v.asLong() : -1;
  }

  private static boolean nonEmptyText(@Nullable JsonNode n) {
    return n != null && n.isString() && !n.asString().isEmpty();
  }

  private static boolean contains(byte[] b, int from, int to, byte[] needle) {
    outer:
    for (int i = from; i <= to - needle.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (b[i + j] != needle[j]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }
}
