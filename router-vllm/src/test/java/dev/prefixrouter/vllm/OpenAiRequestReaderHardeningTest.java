package dev.prefixrouter.vllm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.vllm.OpenAiRequestException.Problem;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The bounds of issue #17 (hostile sizes, encodings and names) and the reader items of #16. */
class OpenAiRequestReaderHardeningTest {
  private final OpenAiRequestReader reader = OpenAiRequestReader.defaults();

  private OpenAiRequest read(String json) {
    return reader.read(json.getBytes(StandardCharsets.UTF_8), null);
  }

  private OpenAiRequestException refusal(String json) {
    return catchThrowableOfType(OpenAiRequestException.class, () -> read(json));
  }

  private static String chat(String extraFields, String messages) {
    return "{\"model\":\"m\"" + extraFields + ",\"messages\":" + messages + "}";
  }

  // ---- #17 item 3: sizes and names

  @Test
  void aUserLongerThanTheBoundIsRefusedNamingTheBoundAndLength() {
    String user = "u".repeat(OpenAiRequestReader.MAX_NAME_LENGTH + 1);
    OpenAiRequestException e =
        refusal("{\"model\":\"m\",\"prompt\":\"x\",\"user\":\"" + user + "\"}");
    assertThat(e).isNotNull();
    assertThat(e.problem()).isEqualTo(Problem.INVALID_VALUE);
    assertThat(e.field()).isEqualTo("user");
    assertThat(e.getMessage()).contains("256").contains("257").doesNotContain("uuuu");
    String atBound = "u".repeat(OpenAiRequestReader.MAX_NAME_LENGTH);
    assertThat(
            read("{\"model\":\"m\",\"prompt\":\"x\",\"user\":\"" + atBound + "\"}")
                .routeRequest()
                .tenant())
        .isEqualTo(atBound);
  }

  @Test
  void anEightMebibyteUserNeverBecomesATenant() {
    String user = "u".repeat((8 << 20) - 64);
    OpenAiRequestException e =
        refusal("{\"model\":\"m\",\"prompt\":\"x\",\"user\":\"" + user + "\"}");
    assertThat(e).isNotNull();
    assertThat(e.field()).isEqualTo("user");
    assertThat(e.getMessage()).hasSizeLessThan(120);
  }

  @Test
  void aHugeModelNameIsRefusedAndNotEchoed() {
    String model = "m".repeat(1 << 20);
    OpenAiRequestException e = refusal("{\"model\":\"" + model + "\",\"prompt\":\"x\"}");
    assertThat(e).isNotNull();
    assertThat(e.problem()).isEqualTo(Problem.INVALID_VALUE);
    assertThat(e.field()).isEqualTo("model");
    assertThat(e.getMessage()).hasSizeLessThan(120).contains("256");
  }

  @ParameterizedTest
  @ValueSource(strings = {"A\u0000salt:y", "evil\u001B[31m", "x\u0085y", "line\u2028break"})
  void controlCharactersInUserAndModelAreRefused(String name) {
    String json = name.replace("\u0000", "\\u0000").replace("\u001B", "\\u001b");
    OpenAiRequestException user =
        refusal("{\"model\":\"m\",\"prompt\":\"x\",\"user\":\"" + json + "\"}");
    assertThat(user).isNotNull();
    assertThat(user.field()).isEqualTo("user");
    assertThat(user.getMessage()).contains("control characters").contains("U+");
    OpenAiRequestException model = refusal("{\"model\":\"" + json + "\",\"prompt\":\"x\"}");
    assertThat(model).isNotNull();
    assertThat(model.field()).isEqualTo("model");
  }

  @ParameterizedTest
  @ValueSource(strings = {"", " ", "\t"})
  void aBlankHostTenantIsAnOpenAiRequestException(String tenant) {
    byte[] body = "{\"model\":\"m\",\"prompt\":\"x\"}".getBytes(StandardCharsets.UTF_8);
    assertThatThrownBy(() -> reader.read(body, tenant))
        .isInstanceOf(OpenAiRequestException.class)
        .extracting(e -> ((OpenAiRequestException) e).field())
        .isEqualTo("tenant");
  }

  /**
   * A zero limit in a field the engine ignores for this endpoint (vLLM's chat reads
   * max_completion_tokens or max_tokens, not max_output_tokens) reserved nothing while the engine
   * generated 30,000 tokens: admission charged the prompt only.
   */
  @Test
  void aZeroLimitInAnotherFieldDoesNotShrinkTheReservation() {
    assertThat(
            read("""
                    {"model":"m","messages":[{"role":"user","content":"x"}],
                     "max_output_tokens":0,"max_tokens":30000}""")
                .routeRequest()
                .maxOutputTokens())
        .isEqualTo(30_000);
    assertThat(
            read("""
                    {"model":"m","prompt":"x","max_completion_tokens":0,"max_tokens":7}""")
                .routeRequest()
                .maxOutputTokens())
        .isEqualTo(7);
  }

  @Test
  void aHostTenantLongerThanTheBoundIsRefused() {
    byte[] body = "{\"model\":\"m\",\"prompt\":\"x\"}".getBytes(StandardCharsets.UTF_8);
    assertThatThrownBy(() -> reader.read(body, "t".repeat(300)))
        .isInstanceOf(OpenAiRequestException.class)
        .hasMessageContaining("at most 256");
  }

  // ---- #17 item 9: encodings and messages

  @Test
  void overlongUtf8IsMalformed() {
    // C0 AF is an overlong '/': lenient decoders turn it into a slash
    byte[] body = {
      '{',
      '"',
      'm',
      'o',
      'd',
      'e',
      'l',
      '"',
      ':',
      '"',
      'a',
      (byte) 0xC0,
      (byte) 0xAF,
      'b',
      '"',
      ',',
      '"',
      'p',
      'r',
      'o',
      'm',
      'p',
      't',
      '"',
      ':',
      '"',
      'x',
      '"',
      '}'
    };
    OpenAiRequestException e =
        catchThrowableOfType(OpenAiRequestException.class, () -> reader.read(body, null));
    assertThat(e).isNotNull();
    assertThat(e.problem()).isEqualTo(Problem.MALFORMED_JSON);
    assertThat(e.getMessage()).contains("UTF-8").contains("offset 11");
  }

  @Test
  void aUtf16BodyIsRejectedNotParsedAsCharacters() {
    // ASCII-range UTF-16 is valid UTF-8 byte by byte (NUL bytes), and the JSON parser would detect
    // UTF-16 and parse it: the gateway's byte offsets for the salt splice would then be wrong
    String json = "{\"model\":\"m\",\"prompt\":\"x\"}";
    for (java.nio.charset.Charset cs :
        new java.nio.charset.Charset[] {
          StandardCharsets.UTF_16BE,
          StandardCharsets.UTF_16LE,
          java.nio.charset.Charset.forName("UTF-32LE")
        }) {
      OpenAiRequestException e =
          catchThrowableOfType(
              OpenAiRequestException.class, () -> reader.read(json.getBytes(cs), null));
      assertThat(e).as(cs.name()).isNotNull();
      assertThat(e.problem()).isEqualTo(Problem.MALFORMED_JSON);
      assertThat(e.getMessage()).contains("NUL byte");
    }
  }

  @Test
  void strictUtf8RejectsSurrogatesOutOfRangeAndTruncatedSequences() {
    assertThat(Utf8.firstInvalid(new byte[] {'a', (byte) 0xED, (byte) 0xA0, (byte) 0x80}))
        .isEqualTo(1);
    assertThat(Utf8.firstInvalid(new byte[] {(byte) 0xF4, (byte) 0x90, (byte) 0x80, (byte) 0x80}))
        .isZero();
    assertThat(Utf8.firstInvalid(new byte[] {(byte) 0xE0, (byte) 0x80, (byte) 0x80})).isZero();
    assertThat(Utf8.firstInvalid(new byte[] {'x', (byte) 0xE2, (byte) 0x82})).isEqualTo(1);
    assertThat(Utf8.firstInvalid(new byte[] {(byte) 0xF8})).isZero();
    assertThat(Utf8.firstInvalid("é€𝄞 plain".getBytes(StandardCharsets.UTF_8))).isEqualTo(-1);
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "{\"model\":\"m\",\"prompt\":\"x\",\"e\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
            + "[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
        "{\"model\":\"m\",\"prompt\":\"x\",\"e\":123456789012345678901234567890123456789}",
        "{\"model\":\"m\",\"prompt\":\"x\"",
        "{\"model\":\"m\",\"model\":\"n\",\"prompt\":\"x\"}",
        "{\"model\":\"m\",\"prompt\":\"x\",}",
        "{\"model\":\"m\",\"prompt\":\"x\"]",
        "{\"model\":\"m\",\"prompt\":tru}",
        "{\"model\":\"m\",\"prompt\":\"x\"} []",
        "{\"model\":\"m\",\"prompt\":\"\u0001\"}",
      })
  void messagesNameNoParserInternalsAndQuoteNothing(String json) {
    OpenAiRequestException e = refusal(json);
    assertThat(e).isNotNull();
    assertThat(e.getMessage())
        .doesNotContainIgnoringCase("jackson")
        .doesNotContain("StreamReadConstraints")
        .doesNotContain("JsonToken")
        .doesNotContain("`")
        .doesNotContain("code ")
        .doesNotContain("START_")
        .hasSizeLessThan(120);
  }

  @Test
  void aLongFieldNameIsTooLargeInTheReadersTerms() {
    String name = "n".repeat(2000);
    OpenAiRequestException e = refusal("{\"model\":\"m\",\"prompt\":\"x\",\"" + name + "\":1}");
    assertThat(e.problem()).isEqualTo(Problem.TOO_LARGE);
    assertThat(e.getMessage()).contains("field name longer than 1024").doesNotContain("nnnn");
  }

  @Test
  void deepNestingNamesTheDepthBound() {
    String deep =
        "{\"model\":\"m\",\"prompt\":\"x\",\"e\":" + "[".repeat(100) + "]".repeat(100) + "}";
    assertThat(refusal(deep).getMessage()).contains("nesting deeper than 64");
  }

  // ---- #17 item 6 / #16 item 3: a conversation is rendered once, into one string

  @Test
  void aConversationIsRenderedOnceIntoOneTextPrompt() {
    StringBuilder sb = new StringBuilder("{\"model\":\"m\",\"messages\":[");
    int messages = 200_000;
    for (int i = 0; i < messages; i++) {
      sb.append(i == 0 ? "" : ",").append("{\"role\":\"u\"}");
    }
    byte[] body = sb.append("]}").toString().getBytes(StandardCharsets.UTF_8);
    Prompt prompt = reader.read(body, null).routeRequest().prompt();
    // a Text prompt is hashed as is by every route() and failover; a Chat prompt is rendered anew
    // by the hasher each time, and keeps one object per message alive for the lease
    assertThat(prompt).isInstanceOf(Prompt.Text.class);
    String text = ((Prompt.Text) prompt).text();
    assertThat(text).hasSize(3 * messages).startsWith("u\u001F\u001Eu\u001F\u001E");
    assertThat(text.length()).isLessThanOrEqualTo(body.length);
  }

  // ---- #16 item 3: what the chat template renders is what gets hashed

  @Test
  void differentToolsGiveDifferentPrompts() {
    String messages = "[{\"role\":\"user\",\"content\":\"hi\"}]";
    Prompt none = read(chat("", messages)).routeRequest().prompt();
    Prompt f =
        read(chat(",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]", messages))
            .routeRequest()
            .prompt();
    Prompt g =
        read(chat(",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"g\"}}]", messages))
            .routeRequest()
            .prompt();
    Prompt fAgain =
        read(chat(",\"tools\":[ {\"type\":\"function\", \"function\":{\"name\":\"f\"}}]", messages))
            .routeRequest()
            .prompt();
    assertThat(List.of(none, f, g)).doesNotHaveDuplicates();
    assertThat(fAgain).as("whitespace does not matter").isEqualTo(f);
    assertThat(((Prompt.Text) f).text())
        .as("tools are rendered ahead of the messages")
        .startsWith("tools");
  }

  @Test
  void assistantToolCallsAndToolResultsArePartOfThePrompt() {
    String call =
        "[{\"role\":\"user\",\"content\":\"weather?\"},"
            + "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
            + "\"function\":{\"name\":\"weather\",\"arguments\":\"{\\\"city\\\":\\\"%s\\\"}\"}}]},"
            + "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"sunny\"}]";
    Prompt paris = read(chat("", call.formatted("Paris"))).routeRequest().prompt();
    Prompt rome = read(chat("", call.formatted("Rome"))).routeRequest().prompt();
    assertThat(paris).isNotEqualTo(rome);
    assertThat(((Prompt.Text) paris).text())
        .contains("tool_calls\u001F[{\"id\":\"c1\"")
        .contains("tool\u001Fsunny\u001Dtool_call_id\u001F\"c1\"\u001E");
  }

  @Test
  void differentImagesGiveDifferentPromptsAndEqualImagesEqualOnes() {
    String body =
        "[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"%s\"}},"
            + "{\"type\":\"text\",\"text\":\"what is this?\"}]}]";
    OpenAiRequest cat = read(chat("", body.formatted("https://x/cat.png")));
    OpenAiRequest dog = read(chat("", body.formatted("https://x/dog.png")));
    OpenAiRequest catAgain = read(chat("", body.formatted("https://x/cat.png")));
    OpenAiRequest inline = read(chat("", body.formatted("data:image/png;base64,iVBORw0KGgo=")));
    assertThat(cat.routeRequest().prompt()).isNotEqualTo(dog.routeRequest().prompt());
    assertThat(cat.routeRequest().prompt()).isEqualTo(catAgain.routeRequest().prompt());
    assertThat(inline.routeRequest().prompt()).isNotEqualTo(cat.routeRequest().prompt());
    assertThat(cat.routeRequest().requiredCapabilities())
        .containsExactly(OpenAiRequestReader.VISION_CAPABILITY);
    assertThat(((Prompt.Text) cat.routeRequest().prompt()).text())
        .matches("user\u001F\u001Dimage_url:[0-9a-f]{16}\u001D\nwhat is this\\?\u001E");
  }

  @Test
  void audioAndVideoPartsAreHashedByContent() {
    String audio =
        "[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\","
            + "\"input_audio\":{\"data\":\"%s\",\"format\":\"wav\"}}]}]";
    String video =
        "[{\"role\":\"user\",\"content\":[{\"type\":\"video_url\",\"video_url\":{\"url\":\"%s\"}}]}]";
    assertThat(read(chat("", audio.formatted("AAAA"))).routeRequest().prompt())
        .isNotEqualTo(read(chat("", audio.formatted("AAAB"))).routeRequest().prompt());
    assertThat(read(chat("", video.formatted("v1"))).routeRequest().prompt())
        .isNotEqualTo(read(chat("", video.formatted("v2"))).routeRequest().prompt());
    assertThat(read(chat("", audio.formatted("AAAA"))).routeRequest().requiredCapabilities())
        .isEmpty();
  }

  @Test
  void responsesBodiesAreRead() {
    OpenAiRequest plain = read("{\"model\":\"m\",\"input\":\"hello\",\"max_output_tokens\":77}");
    assertThat(plain.endpoint()).isEqualTo(OpenAiRequest.Endpoint.RESPONSES);
    assertThat(plain.routeRequest().prompt()).isEqualTo(Prompt.ofText("user\u001Fhello\u001E"));
    assertThat(plain.routeRequest().maxOutputTokens()).isEqualTo(77);

    OpenAiRequest items =
        read(
            """
            {"model":"m","instructions":"be brief","input":[
              {"type":"message","role":"user","content":[{"type":"input_text","text":"weather?"}]},
              {"type":"function_call","id":"fc_1","call_id":"c1","name":"weather","arguments":"{}"},
              {"type":"function_call_output","call_id":"c1","output":"sunny"}]}
            """);
    assertThat(((Prompt.Text) items.routeRequest().prompt()).text())
        .isEqualTo(
            "system\u001Fbe brief\u001E"
                + "user\u001Fweather?\u001E"
                + "function_call\u001F\u001Dcall_id\u001F\"c1\"\u001Dname\u001F\"weather\""
                + "\u001Darguments\u001F\"{}\"\u001E"
                + "function_call_output\u001F\u001Dcall_id\u001F\"c1\"\u001Doutput\u001F\"sunny\"\u001E");
  }

  @Test
  void nAndBestOfAndPromptCountMultiplyTheReservation() {
    assertThat(
            read("{\"model\":\"m\",\"prompt\":\"x\",\"max_tokens\":100,\"n\":3}")
                .routeRequest()
                .maxOutputTokens())
        .isEqualTo(300);
    OpenAiRequest bestOf =
        read("{\"model\":\"m\",\"prompt\":[\"a\",\"b\"],\"max_tokens\":100,\"n\":2,\"best_of\":5}");
    assertThat(bestOf.choices()).isEqualTo(5);
    assertThat(bestOf.routeRequest().maxOutputTokens()).isEqualTo(1000);
    assertThat(
            read(chat(",\"n\":4", "[{\"role\":\"user\",\"content\":\"x\"}]"))
                .routeRequest()
                .maxOutputTokens())
        .as("the default reservation counts per choice")
        .isEqualTo(4 * 256);
    assertThat(
            read("{\"model\":\"m\",\"prompt\":\"x\",\"max_tokens\":16000000,\"n\":128}")
                .routeRequest()
                .maxOutputTokens())
        .as("per choice capped at 32768, then 128 choices")
        .isEqualTo(128 * 32_768);
  }

  @Test
  void priorityIsPassedThrough() {
    assertThat(read("{\"model\":\"m\",\"prompt\":\"x\",\"priority\":-5}").priority()).isEqualTo(-5);
    assertThat(read("{\"model\":\"m\",\"prompt\":\"x\"}").priority()).isZero();
  }

  @Test
  void onlyTheFirstOfManyCompletionPromptsIsKept() {
    List<String> prompts = new ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      prompts.add("\"p" + i + "\"");
    }
    OpenAiRequest r = read("{\"model\":\"m\",\"prompt\":[" + String.join(",", prompts) + "]}");
    assertThat(r.promptCount()).isEqualTo(1000);
    assertThat(r.routeRequest().prompt()).isEqualTo(Prompt.ofText("p0"));
  }
}
