package dev.prefixrouter.gateway;

import dev.prefixrouter.api.Usage;
import java.io.ByteArrayOutputStream;
import org.jspecify.annotations.Nullable;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferFactory;
import org.springframework.core.io.buffer.DataBufferUtils;
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
 * <p>A JSON body longer than the configured cap is not copied whole: from the cap on, the tap scans
 * it byte by byte for its top-level {@code usage} member ({@link UsageScanner}: strings and nesting
 * tracked, the member captured wherever it sits, at most {@value UsageScanner#MAX_USAGE_BYTES}
 * bytes of it). If the body has no readable usage object there, the usage is lost ({@link
 * #usageLost()}) and the caller charges the reservation.
 *
 * <p>With {@code stripUsage} (the gateway asked for the usage chunk, the client did not), the
 * stream is also rewritten so that the client sees what it would have seen without the gateway: the
 * final usage chunk (a {@code data:} event with empty {@code choices} and a {@code usage} object)
 * and its blank line are dropped, and a {@code "usage":null} member of the other chunks is removed.
 * Only complete lines are forwarded then; a partial line waits for its end (never longer than an
 * event's line: engines flush whole events), and a line longer than {@value #MAX_LINE_BYTES} bytes
 * passes through unread as it comes.
 *
 * <p>Bounds: a stream line longer than {@value #MAX_LINE_BYTES} bytes is passed through unread (no
 * usage from it); a JSON body holds at most the configured cap in memory, and once longer, {@value
 * UsageScanner#MAX_USAGE_BYTES} bytes. Lines are parsed as JSON only until the first content is
 * seen, and afterwards only when they mention {@code usage}; cost is linear in the bytes seen. One
 * instance per attempt, called from one thread at a time (Reactor serializes {@code onNext}).
 */
final class ResponseTap {
  /** Longest SSE line read for usage or content (longer ones pass through unread). */
  static final int MAX_LINE_BYTES = 1 << 20;

  private static final JsonMapper JSON = JsonMapper.builder().build();
  private static final byte[] USAGE = "\"usage\"".getBytes(java.nio.charset.StandardCharsets.UTF_8);

  private final boolean stream;
  private final boolean stripUsage;
  private byte[] out = new byte[0];
  private int outLen;
  private boolean dropBlank;
  private byte lastForwarded = '\n';
  private byte beforeLastForwarded = '\n';
  private final int maxJsonBytes;
  private final Runnable onFirstContent;
  private byte[] line = new byte[512];
  private int lineLen;
  private boolean lineTooLong;
  private boolean sawContent;
  private int dataEvents;
  private boolean bytesSeen;
  private @Nullable Usage usage;
  private @Nullable Bytes json;
  private boolean jsonTooLong;

  /** A JSON body's usage scan once it is too long to keep. */
  private @Nullable UsageScanner<Usage> scanner;

  /**
   * @param stream whether the body is an event stream (else JSON)
   * @param maxJsonBytes largest JSON body read for its usage
   * @param stripUsage whether to remove the usage chunk from a stream (see above)
   * @param onFirstContent called once, when the first content line has been seen
   */
  ResponseTap(boolean stream, int maxJsonBytes, boolean stripUsage, Runnable onFirstContent) {
    this.stream = stream;
    this.stripUsage = stream && stripUsage;
    this.maxJsonBytes = maxJsonBytes;
    this.onFirstContent = onFirstContent;
    this.json = stream ? null : new Bytes();
  }

  /**
   * Reads a chunk: returns the chunk itself (not consumed) unless the usage chunk is stripped,
   * where the chunk is released and the complete lines to forward are returned (null when there are
   * none yet).
   */
  @Nullable DataBuffer onChunk(DataBuffer buffer, DataBufferFactory factory) {
    if (!stripUsage) {
      read(buffer);
      return buffer;
    }
    int n = buffer.readableByteCount();
    if (n > 0) {
      bytesSeen = true;
    }
    int start = buffer.readPosition();
    for (int i = 0; i < n; i++) {
      byte b = buffer.getByte(start + i);
      if (b == '\n') {
        if (lineTooLong) {
          lineTooLong = false;
          lineLen = 0;
          emit(b);
        } else {
          int keep = endLine();
          if (keep >= 0) {
            emit(line, keep);
            emit(b);
          }
        }
      } else if (lineTooLong) {
        emit(b);
      } else if (lineLen == MAX_LINE_BYTES) {
        // too long to hold: what was held goes out, and the rest of the line as it comes
        emit(line, lineLen);
        emit(b);
        lineLen = 0;
        lineTooLong = true;
      } else {
        append(b);
      }
    }
    DataBufferUtils.release(buffer);
    return drain(factory);
  }

  private @Nullable DataBuffer drain(DataBufferFactory factory) {
    if (outLen == 0) {
      return null;
    }
    byte[] b = java.util.Arrays.copyOf(out, outLen);
    outLen = 0;
    return factory.wrap(b);
  }

  private void emit(byte b) {
    if (outLen == out.length) {
      out = java.util.Arrays.copyOf(out, Math.max(256, out.length * 2));
    }
    out[outLen++] = b;
    beforeLastForwarded = lastForwarded;
    lastForwarded = b;
  }

  private void emit(byte[] b, int len) {
    if (len == 0) {
      return;
    }
    if (outLen + len > out.length) {
      out = java.util.Arrays.copyOf(out, Math.max(outLen + len, out.length * 2));
    }
    System.arraycopy(b, 0, out, outLen, len);
    outLen += len;
    beforeLastForwarded = len > 1 ? b[len - 2] : lastForwarded;
    lastForwarded = b[len - 1];
  }

  /**
   * An OpenAI-style error event that ends the stream for the client ({@code data: {"error":{...}}}
   * then {@code data: [DONE]}, as vLLM ends a stream that failed), preceded by the line ends that
   * close a line or event the client was given only in part.
   */
  byte[] errorEvent(String code, String message) {
    java.util.Map<String, Object> error = new java.util.LinkedHashMap<>();
    error.put("message", message);
    error.put("type", "server_error");
    error.put("param", null);
    error.put("code", code);
    String json = JSON.writeValueAsString(java.util.Map.of("error", error));
    String lead = lastForwarded != '\n' ? "\n\n" : beforeLastForwarded != '\n' ? "\n" : "";
    return (lead + "data: " + json + "\n\ndata: [DONE]\n\n")
        .getBytes(java.nio.charset.StandardCharsets.UTF_8);
  }

  private void read(DataBuffer buffer) {
    int n = buffer.readableByteCount();
    if (n > 0) {
      bytesSeen = true;
      beforeLastForwarded = n > 1 ? buffer.getByte(buffer.readPosition() + n - 2) : lastForwarded;
      lastForwarded = buffer.getByte(buffer.readPosition() + n - 1);
    }
    int start = buffer.readPosition();
    if (!stream) {
      Bytes j = json;
      if (!jsonTooLong && j != null && j.size() + n > maxJsonBytes) {
        // too long to keep whole: from now on scanned for its usage member as it passes
        jsonTooLong = true;
        scanner = new UsageScanner<>(ResponseTap::usageObject);
        scanner.feed(j.bytes(), 0, j.size());
        json = null;
      }
      UsageScanner<Usage> sc = scanner;
      if (sc != null) {
        for (int i = 0; i < n; i++) {
          sc.feed(buffer.getByte(start + i));
        }
        return;
      }
      if (j != null) {
        byte[] copy = new byte[n];
        buffer.toByteBuffer(start, java.nio.ByteBuffer.wrap(copy), 0, n);
        j.write(copy, 0, n);
      }
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

  /** The usage of a usage object's bytes; null if they are not JSON or not valid counts. */
  private static @Nullable Usage usageObject(byte[] b) {
    JsonNode u = parse(b, 0, b.length);
    return u == null || !u.isObject() ? null : countsOf(u);
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

  /**
   * Call once the body has ended: a last line without a newline, or the JSON body, is read. Returns
   * the bytes still to forward (the last line, when the usage chunk is stripped), else null.
   */
  byte @Nullable [] onEnd() {
    if (stream) {
      boolean passing = lineTooLong;
      int keep = endLine();
      if (stripUsage && !passing && keep > 0) {
        emit(line, keep);
        byte[] rest = java.util.Arrays.copyOf(out, outLen);
        outLen = 0;
        return rest;
      }
    } else if (scanner != null) {
      usage = scanner.usage();
      scanner = null;
    } else if (json != null && json.size() > 0) {
      JsonNode node = parse(json.bytes(), 0, json.size());
      if (node != null) {
        Usage u = usageOf(node);
        if (u != null) {
          usage = u;
        }
      }
    }
    return null;
  }

  /**
   * Whether the engine's usage cannot be known: a JSON body longer than the tap keeps that had no
   * readable top-level {@code usage} object (or whose end has not been read yet). The caller then
   * charges the reservation, not zero output.
   */
  boolean usageLost() {
    return !stream && jsonTooLong && usage == null;
  }

  /** Whether the body is an event stream. */
  boolean isStream() {
    return stream;
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

  /**
   * Reads the line held (and forgets it): returns how many of its bytes to forward, or -1 to drop
   * it (the stripped usage chunk and its blank line).
   */
  private int endLine() {
    boolean tooLong = lineTooLong;
    lineTooLong = false;
    byte[] b = line;
    int full = lineLen;
    lineLen = 0;
    if (tooLong) {
      return full;
    }
    if (full == 0 || (full == 1 && b[0] == '\r')) {
      boolean drop = dropBlank;
      dropBlank = false;
      return drop ? -1 : full;
    }
    dropBlank = false;
    int len = full;
    if (b[len - 1] == '\r') {
      len--;
    }
    if (len < 5 || b[0] != 'd' || b[1] != 'a' || b[2] != 't' || b[3] != 'a' || b[4] != ':') {
      return full;
    }
    int from = 5;
    while (from < len && b[from] == ' ') {
      from++;
    }
    if (len - from == 6
        && new String(b, from, 6, java.nio.charset.StandardCharsets.US_ASCII).equals("[DONE]")) {
      return full;
    }
    dataEvents++;
    if (stripUsage) {
      int removed = removeUsageNull(b, from, len, full);
      len -= removed;
      full -= removed;
    }
    boolean mentionsUsage = contains(b, from, len, USAGE);
    if (sawContent && !mentionsUsage) {
      return full;
    }
    JsonNode node = parse(b, from, len - from);
    if (node == null) {
      return full;
    }
    if (!sawContent && hasContent(node)) {
      sawContent = true;
      onFirstContent.run();
    }
    if (mentionsUsage) {
      Usage u = usageOf(node);
      if (u != null) {
        usage = u;
        if (stripUsage && isUsageChunk(node)) {
          dataEvents--;
          dropBlank = true;
          return -1;
        }
      }
    }
    return full;
  }

  /** The usage chunk that {@code include_usage} adds: empty {@code choices} and a usage object. */
  private static boolean isUsageChunk(JsonNode node) {
    JsonNode choices = node.get("choices");
    return choices != null && choices.isArray() && choices.isEmpty();
  }

  /**
   * Removes a {@code "usage":null} (or {@code "usage": null}) member from the JSON in {@code
   * b[from..len)}, with its separating comma, shifting the rest of the line ({@code ..full}) left;
   * returns how many bytes were removed. A {@code "usage"} preceded by a backslash is inside a
   * string and left alone.
   */
  static int removeUsageNull(byte[] b, int from, int len, int full) {
    for (int i = indexOf(b, from, len, USAGE); i >= 0; i = indexOf(b, i + 1, len, USAGE)) {
      if (i > from && b[i - 1] == '\\') {
        continue;
      }
      int j = i + USAGE.length;
      while (j < len && b[j] == ' ') {
        j++;
      }
      if (j >= len || b[j] != ':') {
        continue;
      }
      j++;
      while (j < len && b[j] == ' ') {
        j++;
      }
      if (j + 4 > len || b[j] != 'n' || b[j + 1] != 'u' || b[j + 2] != 'l' || b[j + 3] != 'l') {
        continue;
      }
      int a = i;
      int z = j + 4;
      int p = a - 1;
      while (p >= from && b[p] == ' ') {
        p--;
      }
      if (p >= from && b[p] == ',') {
        a = p;
      } else {
        int q = z;
        while (q < len && b[q] == ' ') {
          q++;
        }
        if (q < len && b[q] == ',') {
          z = q + 1;
        }
      }
      System.arraycopy(b, z, b, a, full - z);
      return z - a;
    }
    return 0;
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
    return countsOf(u);
  }

  /** {@link #usageOf} of the usage object itself. */
  private static @Nullable Usage countsOf(JsonNode u) {
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
    JsonNode cachedNode =
        details != null && details.isObject() ? details.get("cached_tokens") : null;
    if (cachedNode == null || cachedNode.isNull()) { // not reported (vLLM without the details flag)
      return Usage.of((int) prompt, (int) completion);
    }
    long cached = count(details, "cached_tokens", "");
    if (cached < 0) { // not a count: unknown, not "none cached"
      return Usage.of((int) prompt, (int) completion);
    }
    return new Usage((int) prompt, (int) completion, (int) Math.min(cached, prompt));
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

  /** A growing byte array whose bytes are read in place (no copy of a body up to the cap). */
  private static final class Bytes extends ByteArrayOutputStream {
    Bytes() {
      super(1024);
    }

    byte[] bytes() {
      return buf;
    }
  }

  private static boolean nonEmptyText(@Nullable JsonNode n) {
    return n != null && n.isString() && !n.asString().isEmpty();
  }

  private static boolean contains(byte[] b, int from, int to, byte[] needle) {
    return indexOf(b, from, to, needle) >= 0;
  }

  private static int indexOf(byte[] b, int from, int to, byte[] needle) {
    outer:
    for (int i = from; i <= to - needle.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (b[i + j] != needle[j]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }
}
