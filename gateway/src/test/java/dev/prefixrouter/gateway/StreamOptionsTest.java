package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.vllm.OpenAiRequestReader;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** The usage request spliced into a streamed body, or the body left as the client sent it. */
class StreamOptionsTest {
  private static final OpenAiRequestReader READER = OpenAiRequestReader.defaults();
  private static final JsonMapper JSON = JsonMapper.builder().build();

  private static byte[] forward(String body) {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    return StreamOptions.withIncludeUsage(b, READER.read(b, "t"));
  }

  private static JsonNode tree(byte[] b) {
    return JSON.readTree(b);
  }

  @Test
  void absentOptionsAreSplicedInAndTheRestIsKeptByteForByte() {
    String body =
        "{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"a \\\"q\\\""
            + " {\\\"stream_options\\\":1}\"}]}";
    byte[] out = forward(body);
    JsonNode t = tree(out);
    assertThat(t.get("stream_options").get("include_usage").asBoolean()).isTrue();
    assertThat(t.get("messages").get(0).get("content").asString())
        .isEqualTo("a \"q\" {\"stream_options\":1}");
    assertThat(new String(out, StandardCharsets.UTF_8))
        .isEqualTo("{\"stream_options\":{\"include_usage\":true}," + body.substring(1));
  }

  @Test
  void leadingWhitespaceIsKept() {
    byte[] out =
        forward(" \n {\"model\":\"m\",\"stream\":true,\"prompt\":\"hello\",\"max_tokens\":3}");
    assertThat(new String(out, StandardCharsets.UTF_8)).startsWith(" \n {\"stream_options\":");
    assertThat(tree(out).get("stream_options").get("include_usage").asBoolean()).isTrue();
  }

  @Test
  void nullOrFalseOptionsAreCompleted() {
    JsonNode a =
        tree(forward("{\"model\":\"m\",\"stream\":true,\"prompt\":\"x\",\"stream_options\":null}"));
    assertThat(a.get("stream_options").get("include_usage").asBoolean()).isTrue();
    JsonNode b =
        tree(
            forward(
                "{\"model\":\"m\",\"stream\":true,\"prompt\":\"x\","
                    + "\"stream_options\":{\"include_usage\":false,\"other\":1}}"));
    assertThat(b.get("stream_options").get("include_usage").asBoolean()).isTrue();
    assertThat(b.get("stream_options").get("other").asInt()).isEqualTo(1);
  }

  @Test
  void aBodyThatAlreadyAsksOrIsNotStreamedIsTheSameArray() {
    for (String body :
        new String[] {
          "{\"model\":\"m\",\"stream\":true,\"prompt\":\"x\",\"stream_options\":{\"include_usage\":true}}",
          // an escaped member name is the same member
          "{\"model\":\"m\",\"stream\":true,\"prompt\":\"x\",\"stream\\u005foptions\":{\"include_usage\":true}}",
          "{\"model\":\"m\",\"stream\":false,\"prompt\":\"x\"}",
          "{\"model\":\"m\",\"prompt\":\"x\"}",
          // another type is left for the engine to refuse
          "{\"model\":\"m\",\"stream\":true,\"prompt\":\"x\",\"stream_options\":\"yes\"}"
        }) {
      byte[] b = body.getBytes(StandardCharsets.UTF_8);
      assertThat(StreamOptions.withIncludeUsage(b, READER.read(b, "t"))).as(body).isSameAs(b);
    }
  }
}
