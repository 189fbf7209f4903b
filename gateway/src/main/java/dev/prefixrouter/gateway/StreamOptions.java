package dev.prefixrouter.gateway;

import dev.prefixrouter.vllm.OpenAiRequest;
import java.nio.charset.StandardCharsets;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Asks the engine for a final usage chunk ({@code "stream_options": {"include_usage": true}}) on a
 * streamed chat or completions request that did not ask for one; the Responses API always ends with
 * its usage. Stateless.
 *
 * <p>Cost: one streaming pass over the body's top-level members (nested values are skipped, no tree
 * is built) and, in the common case where the body has no {@code stream_options}, one copy of the
 * body with the member spliced in right after the opening brace (the client's bytes are otherwise
 * forwarded as they came). Only a body that has a {@code stream_options} object or null is parsed
 * into a tree and written again.
 */
final class StreamOptions {
  private static final JsonMapper JSON = JsonMapper.builder().build();
  private static final byte[] MEMBER =
      "\"stream_options\":{\"include_usage\":true}".getBytes(StandardCharsets.US_ASCII);

  private StreamOptions() {}

  /**
   * The body to forward: {@code body} itself (the same array) unless it is a streamed
   * chat/completions request without {@code include_usage: true}, where {@code stream_options}
   * (absent or null) is set or (an object) gets {@code include_usage: true}. A {@code
   * stream_options} of another type is left for the engine to refuse. A different array returned
   * means the gateway asked for the usage chunk that the client did not.
   */
  static byte[] withIncludeUsage(byte[] body, OpenAiRequest request) {
    if (!request.stream() || request.endpoint() == OpenAiRequest.Endpoint.RESPONSES) {
      return body;
    }
    long open = -1;
    boolean empty = true;
    JsonToken options = null;
    try (JsonParser p = JSON.createParser(body)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        return body;
      }
      open = p.currentTokenLocation().getByteOffset();
      JsonToken t;
      while ((t = p.nextToken()) == JsonToken.PROPERTY_NAME) {
        empty = false;
        String name = p.currentName();
        JsonToken value = p.nextToken();
        if ("stream_options".equals(name)) {
          options = value;
          break;
        }
        p.skipChildren();
      }
      if (options == null && t != JsonToken.END_OBJECT) {
        return body; // not a well-formed object after all: leave it to the engine
      }
    } catch (JacksonException e) {
      return body; // the reader accepted it; nothing to add if Jackson does not
    }
    if (options == null) {
      return splice(body, (int) open, empty);
    }
    if (options == JsonToken.START_OBJECT || options == JsonToken.VALUE_NULL) {
      return rewrite(body);
    }
    return body;
  }

  /** The body with the member inserted right after the opening brace at {@code open}. */
  private static byte[] splice(byte[] body, int open, boolean empty) {
    if (open < 0 || open >= body.length || body[open] != '{') {
      return rewrite(body); // an offset Jackson did not report as expected: take the slow path
    }
    int extra = MEMBER.length + (empty ? 0 : 1);
    byte[] out = new byte[body.length + extra];
    System.arraycopy(body, 0, out, 0, open + 1);
    System.arraycopy(MEMBER, 0, out, open + 1, MEMBER.length);
    if (!empty) {
      out[open + 1 + MEMBER.length] = ',';
    }
    System.arraycopy(body, open + 1, out, open + 1 + extra, body.length - open - 1);
    return out;
  }

  /** The slow path: the body as a tree, {@code stream_options} set or completed, written again. */
  private static byte[] rewrite(byte[] body) {
    JsonNode tree;
    try {
      tree = JSON.readTree(body);
    } catch (JacksonException e) {
      return body;
    }
    if (!(tree instanceof ObjectNode root)) {
      return body;
    }
    JsonNode options = root.get("stream_options");
    if (options == null || options.isNull()) {
      root.putObject("stream_options").put("include_usage", true);
    } else if (options instanceof ObjectNode o) {
      JsonNode include = o.get("include_usage");
      if (include != null && include.isBoolean() && include.booleanValue()) {
        return body;
      }
      o.put("include_usage", true);
    } else {
      return body;
    }
    return JSON.writeValueAsBytes(root);
  }
}
