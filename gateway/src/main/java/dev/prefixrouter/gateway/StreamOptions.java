package dev.prefixrouter.gateway;

import dev.prefixrouter.vllm.OpenAiRequest;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Asks the engine for a final usage chunk ({@code "stream_options": {"include_usage": true}}) on a
 * streamed chat or completions request that did not ask for one; the Responses API always ends with
 * its usage. Stateless; one parse and one write of the body when it changes it.
 */
final class StreamOptions {
  private static final JsonMapper JSON = JsonMapper.builder().build();

  private StreamOptions() {}

  /**
   * The body to forward: {@code body} itself unless it is a streamed chat/completions request
   * without {@code include_usage: true}, where {@code stream_options} (absent or null) is set or
   * (an object) gets {@code include_usage: true}. A {@code stream_options} of another type is left
   * for the engine to refuse.
   */
  static byte[] withIncludeUsage(byte[] body, OpenAiRequest request) {
    if (!request.stream() || request.endpoint() == OpenAiRequest.Endpoint.RESPONSES) {
      return body;
    }
    JsonNode tree;
    try {
      tree = JSON.readTree(body);
    } catch (JacksonException e) {
      return body; // the reader accepted it; nothing to add if Jackson's tree model does not
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
