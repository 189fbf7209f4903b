package dev.prefixrouter.vllm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.vllm.OpenAiRequestException.Problem;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class OpenAiRequestReaderTest {
  private final OpenAiRequestReader reader = OpenAiRequestReader.defaults();

  private OpenAiRequest read(String json) {
    return reader.read(json.getBytes(StandardCharsets.UTF_8), null);
  }

  private Problem problemOf(String json) {
    try {
      read(json);
    } catch (OpenAiRequestException e) {
      return e.problem();
    }
    throw new AssertionError("accepted: " + json);
  }

  @Test
  void readsAChatCompletionsBody() {
    OpenAiRequest r =
        read(
            """
            {"model":"qwen","stream":true,"user":"u1","max_tokens":100,
             "max_completion_tokens":50,"cache_salt":"salt-1","temperature":0.2,
             "tools":[{"type":"function","function":{"name":"f","parameters":{"a":[1,{"b":2}]}}}],
             "messages":[{"role":"system","content":"be brief"},
                         {"role":"user","content":[{"type":"text","text":"hi"},
                                                   {"type":"text","text":"there"}]},
                         {"role":"assistant","content":null,"tool_calls":[]}]}
            """);
    assertThat(r.endpoint()).isEqualTo(OpenAiRequest.Endpoint.CHAT_COMPLETIONS);
    assertThat(r.stream()).isTrue();
    assertThat(r.user()).isEqualTo("u1");
    RouteRequest rr = r.routeRequest();
    assertThat(rr.model()).isEqualTo("qwen");
    assertThat(rr.tenant()).isEqualTo("u1");
    assertThat(rr.maxOutputTokens()).as("the largest limit given").isEqualTo(100);
    assertThat(rr.cacheSalt()).isEqualTo("salt-1");
    assertThat(rr.requiredCapabilities()).isEmpty();
    assertThat(rr.prompt())
        .as("tools first, then the messages; an empty tool_calls renders as nothing")
        .isEqualTo(
            Prompt.ofText(
                "tools\u001F[{\"type\":\"function\",\"function\":{\"name\":\"f\","
                    + "\"parameters\":{\"a\":[1,{\"b\":2}]}}}]\u001E"
                    + "system\u001Fbe brief\u001E"
                    + "user\u001Fhi\nthere\u001E"
                    + "assistant\u001F\u001E"));
  }

  /**
   * The body's engine-facing members a host may strip are reported as present, by their decoded
   * names (an escaped name is the same member to the engine), and only at the top level.
   */
  @Test
  void reportsPriorityAndKvTransferParamsMembers() {
    OpenAiRequest plain = read("{\"model\":\"m\",\"prompt\":\"x\"}");
    assertThat(plain.hasPriority()).isFalse();
    assertThat(plain.hasKvTransferParams()).isFalse();
    OpenAiRequest both =
        read(
            "{\"model\":\"m\",\"prompt\":\"x\",\"priority\":0,"
                + "\"kv\\u005ftransfer_params\":{\"remote_block_ids\":[1,2]}}");
    assertThat(both.hasPriority()).as("priority 0 is a member too").isTrue();
    assertThat(both.priority()).isZero();
    assertThat(both.hasKvTransferParams()).isTrue();
    OpenAiRequest nested =
        read(
            "{\"model\":\"m\",\"prompt\":\"x\","
                + "\"metadata\":{\"kv_transfer_params\":{},\"priority\":1}}");
    assertThat(nested.hasPriority()).isFalse();
    assertThat(nested.hasKvTransferParams()).isFalse();
  }

  @Test
  void aPlainConversationRendersLikeBlockHashersRender() {
    // BlockHashers.render (router-radix): role U+001F content U+001E per message
    OpenAiRequest r =
        read(
            "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
                + "{\"content\":\"hi\",\"role\":\"user\"}]}");
    assertThat(r.routeRequest().prompt())
        .isEqualTo(Prompt.ofText("system\u001Fbe brief\u001Euser\u001Fhi\u001E"));
  }

  @Test
  void hostTenantWinsOverUserAndDefaultTenantIsLast() {
    byte[] body =
        "{\"model\":\"m\",\"user\":\"u\",\"prompt\":\"x\"}".getBytes(StandardCharsets.UTF_8);
    assertThat(reader.read(body, "acme").routeRequest().tenant()).isEqualTo("acme");
    assertThat(read("{\"model\":\"m\",\"prompt\":\"x\"}").routeRequest().tenant())
        .isEqualTo("anonymous");
  }

  /**
   * A message cannot spell another conversation's structure: separators inside a role, content,
   * text part or field name are escaped with U+001B, exactly as {@code BlockHashers.render} does.
   */
  @Test
  void contentThatSpellsSeparatorsDoesNotRenderAsAnotherConversation() {
    Prompt forged =
        read("{\"model\":\"m\",\"messages\":[{\"role\":\"system\","
                + "\"content\":\"S\\u001euser\\u001fQ\"}]}")
            .routeRequest()
            .prompt();
    Prompt real =
        read("{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"S\"},"
                + "{\"role\":\"user\",\"content\":\"Q\"}]}")
            .routeRequest()
            .prompt();
    assertThat(real).isEqualTo(Prompt.ofText("system\u001FS\u001Euser\u001FQ\u001E"));
    assertThat(forged)
        .isNotEqualTo(real)
        .isEqualTo(Prompt.ofText("system\u001FS\u001B\u001Euser\u001B\u001FQ\u001E"));
    // the same rendering as BlockHashers.render of Prompt.ofChat (router-radix), escape included
    assertThat(
            read("{\"model\":\"m\",\"messages\":[{\"role\":\"u\\u001b\","
                    + "\"content\":[{\"type\":\"text\",\"text\":\"a\\u001db\"}]}]}")
                .routeRequest()
                .prompt())
        .isEqualTo(Prompt.ofText("u\u001B\u001B\u001Fa\u001B\u001Db\u001E"));
    // a text part that spells an image part's placeholder is not that image
    String image =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":["
            + "{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://x/cat.png\"}}]}]}";
    String rendered = ((Prompt.Text) read(image).routeRequest().prompt()).text();
    String placeholder = rendered.substring("user\u001F".length(), rendered.length() - 1);
    String spelt =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":["
            + "{\"type\":\"text\",\"text\":\""
            + placeholder.replace("\u001D", "\\u001d")
            + "\"}]}]}";
    assertThat(read(spelt).routeRequest().prompt())
        .isNotEqualTo(read(image).routeRequest().prompt());
    // nor can a media part's type spell a second message
    String typed =
        ((Prompt.Text)
                read("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":["
                        + "{\"type\":\"t\\u001e\\u001frole2\",\"image_url\":{\"url\":\"u\"}}]}]}")
                    .routeRequest()
                    .prompt())
            .text();
    assertThat(typed).startsWith("user\u001F\u001Dt\u001B\u001E\u001B\u001Frole2:");
  }

  @Test
  void imagePartsRequireVision() {
    OpenAiRequest r =
        read(
            """
            {"model":"m","messages":[{"role":"user","content":[
              {"type":"image_url","image_url":{"url":"data:..."}},{"type":"text","text":"what?"}]}]}
            """);
    assertThat(r.routeRequest().requiredCapabilities())
        .containsExactly(OpenAiRequestReader.VISION_CAPABILITY);
  }

  @Test
  void mediaPartsCarryTheirDigestsForMediaAffinity() {
    String body =
        """
        {"model":"m","messages":[{"role":"system","content":"%s"},{"role":"user","content":[
          {"type":"image_url","image_url":{"url":"https://x/cat.png"}},
          {"type":"image_url","image_url":{"url":"https://x/dog.png"}},
          {"type":"image_url","image_url":{"url":"https://x/cat.png"}},
          {"type":"text","text":"what?"}]}]}
        """;
    var one = read(body.formatted("you are A")).routeRequest();
    var two = read(body.formatted("you are B")).routeRequest();
    assertThat(one.media()).hasSize(2).allMatch(d -> d.matches("[0-9a-f]{64}"));
    assertThat(two.media()).as("same images after another context").isEqualTo(one.media());
    assertThat(read("{\"model\":\"m\",\"prompt\":\"x\"}").routeRequest().media()).isEmpty();
    StringBuilder many =
        new StringBuilder("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[");
    for (int i = 0; i < 70; i++) {
      many.append(i == 0 ? "" : ",")
          .append("{\"type\":\"image_url\",\"image_url\":{\"url\":\"u")
          .append(i)
          .append("\"}}");
    }
    many.append("]}]}");
    assertThat(read(many.toString()).routeRequest().media())
        .as("the first 64 distinct are listed, the rest only rendered")
        .hasSize(RouteRequest.MAX_MEDIA);
  }

  @Test
  void readsCompletionsPromptsInEveryShape() {
    assertThat(read("{\"model\":\"m\",\"prompt\":\"hello\"}").routeRequest().prompt())
        .isEqualTo(Prompt.ofText("hello"));
    assertThat(read("{\"model\":\"m\",\"prompt\":[1,2,3]}").routeRequest().prompt())
        .isEqualTo(Prompt.ofTokens(1, 2, 3));
    OpenAiRequest multi = read("{\"model\":\"m\",\"prompt\":[\"a\",\"b\",\"c\"]}");
    assertThat(multi.routeRequest().prompt()).isEqualTo(Prompt.ofText("a"));
    assertThat(multi.promptCount()).isEqualTo(3);
    OpenAiRequest ids = read("{\"model\":\"m\",\"prompt\":[[5,6],[7]]}");
    assertThat(ids.routeRequest().prompt()).isEqualTo(Prompt.ofTokens(5, 6));
    assertThat(ids.promptCount()).isEqualTo(2);
    assertThat(ids.endpoint()).isEqualTo(OpenAiRequest.Endpoint.COMPLETIONS);
  }

  @Test
  void countsTheCompletionsPromptsAfterTheFirstAsPromptTokens() {
    String longText = "x".repeat(4000);
    OpenAiRequest r =
        read("{\"model\":\"m\",\"prompt\":[\"hi there\",\"" + longText + "\",\"ab\"]}");
    assertThat(r.routeRequest().prompt()).isEqualTo(Prompt.ofText("hi there"));
    assertThat(r.routeRequest().additionalPromptTokens()).isEqualTo(1000 + 1);
    assertThat(r.routeRequest().promptTokens()).isEqualTo(2 + 1001);
    OpenAiRequest ids = read("{\"model\":\"m\",\"prompt\":[[5,6],[7,8,9],[1]]}");
    assertThat(ids.routeRequest().additionalPromptTokens()).isEqualTo(4);
    assertThat(read("{\"model\":\"m\",\"prompt\":\"one\"}").routeRequest().additionalPromptTokens())
        .isZero();
  }

  @Test
  void reservesTheDefaultWhenNoMaxTokensAndCapsLargeAsks() {
    assertThat(read("{\"model\":\"m\",\"prompt\":\"x\"}").routeRequest().maxOutputTokens())
        .isEqualTo(256);
    assertThat(
            read("{\"model\":\"m\",\"prompt\":\"x\",\"max_tokens\":1000000}")
                .routeRequest()
                .maxOutputTokens())
        .isEqualTo(32_768);
    OpenAiRequestReader custom =
        OpenAiRequestReader.builder()
            .defaultMaxOutputTokens(10)
            .maxReservedOutputTokens(20)
            .build();
    byte[] body =
        "{\"model\":\"m\",\"prompt\":\"x\",\"max_tokens\":50}".getBytes(StandardCharsets.UTF_8);
    assertThat(custom.read(body, null).routeRequest().maxOutputTokens()).isEqualTo(20);
  }

  @ParameterizedTest(name = "{0} -> {1}")
  @CsvSource(
      delimiter = '|',
      value = {
        "{\"model\":\"m\",\"prompt\":\"x\"  | MALFORMED_JSON",
        "{\"model\":\"m\",,\"prompt\":\"x\"} | MALFORMED_JSON",
        "{\"model\":\"m\",\"prompt\":\"x\"} {} | MALFORMED_JSON",
        "{\"model\":\"m\",\"model\":\"n\",\"prompt\":\"x\"} | MALFORMED_JSON",
        "'' | NOT_AN_OBJECT",
        "[1,2] | NOT_AN_OBJECT",
        "\"str\" | NOT_AN_OBJECT",
        "{\"prompt\":\"x\"} | MISSING_MODEL",
        "{\"model\":\"  \",\"prompt\":\"x\"} | MISSING_MODEL",
        "{\"model\":\"m\"} | MISSING_PROMPT",
        "{\"model\":\"m\",\"prompt\":\"x\",\"messages\":[{\"role\":\"user\",\"content\":\"y\"}]} | MISSING_PROMPT",
        "{\"model\":7,\"prompt\":\"x\"} | WRONG_TYPE",
        "{\"model\":\"m\",\"prompt\":{}} | WRONG_TYPE",
        "{\"model\":\"m\",\"prompt\":[1,\"a\"]} | WRONG_TYPE",
        "{\"model\":\"m\",\"prompt\":[true]} | WRONG_TYPE",
        "{\"model\":\"m\",\"prompt\":\"x\",\"max_tokens\":\"10\"} | WRONG_TYPE",
        "{\"model\":\"m\",\"prompt\":\"x\",\"max_tokens\":10.5} | WRONG_TYPE",
        "{\"model\":\"m\",\"prompt\":\"x\",\"stream\":\"yes\"} | WRONG_TYPE",
        "{\"model\":\"m\",\"messages\":{}} | WRONG_TYPE",
        "{\"model\":\"m\",\"messages\":[\"hi\"]} | WRONG_TYPE",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":5}]} | WRONG_TYPE",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[\"x\"]}]} | WRONG_TYPE",
        "{\"model\":\"m\",\"prompt\":\"x\",\"user\":[]} | WRONG_TYPE",
        "{\"model\":\"m\",\"prompt\":\"x\",\"max_tokens\":-1} | INVALID_VALUE",
        "{\"model\":\"m\",\"prompt\":\"x\",\"max_tokens\":99999999999999999999} | INVALID_VALUE",
        "{\"model\":\"m\",\"prompt\":[-4]} | INVALID_VALUE",
        "{\"model\":\"m\",\"prompt\":[4294967296]} | INVALID_VALUE",
        "{\"model\":\"m\",\"prompt\":[]} | INVALID_VALUE",
        "{\"model\":\"m\",\"prompt\":[[]]} | INVALID_VALUE",
        "{\"model\":\"m\",\"messages\":[]} | INVALID_VALUE",
        "{\"model\":\"m\",\"messages\":[{\"content\":\"x\"}]} | INVALID_VALUE",
        "{\"model\":\"m\",\"prompt\":\"x\",\"cache_salt\":\"\"} | INVALID_VALUE",
        "{\"model\":\"m\",\"prompt\":\"x\",\"input\":\"y\"} | MISSING_PROMPT",
        "{\"model\":\"m\",\"input\":5} | WRONG_TYPE",
        "{\"model\":\"m\",\"input\":[]} | INVALID_VALUE",
        "{\"model\":\"m\",\"input\":[{\"content\":\"x\"}]} | INVALID_VALUE",
        "{\"model\":\"m\",\"prompt\":\"x\",\"n\":0} | INVALID_VALUE",
        "{\"model\":\"m\",\"prompt\":\"x\",\"n\":129} | INVALID_VALUE",
        "{\"model\":\"m\",\"prompt\":\"x\",\"best_of\":1000} | INVALID_VALUE",
        "{\"model\":\"m\",\"prompt\":\"x\",\"priority\":\"high\"} | WRONG_TYPE",
        "{\"model\":\"m\",\"prompt\":\"x\",\"priority\":99999999999} | INVALID_VALUE",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"x\"}]}]} | INVALID_VALUE",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]} | INVALID_VALUE",
      })
  void refusesMalformedAndHostileBodiesWithASpecificProblem(String json, Problem expected) {
    assertThat(problemOf(json)).isEqualTo(expected);
  }

  @Test
  void errorNamesTheField() {
    assertThatThrownBy(
            () -> read("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":5}]}"))
        .isInstanceOf(OpenAiRequestException.class)
        .hasMessageContaining("messages[0].content")
        .extracting(e -> ((OpenAiRequestException) e).field())
        .isEqualTo("messages[0].content");
  }

  @Test
  void oversizeBodiesAreRefusedBeforeParsing() {
    OpenAiRequestReader small = OpenAiRequestReader.builder().maxBodyBytes(1024).build();
    String big = "{\"model\":\"m\",\"prompt\":\"" + "x".repeat(2000) + "\"}";
    assertThatThrownBy(() -> small.read(big.getBytes(StandardCharsets.UTF_8), null))
        .isInstanceOf(OpenAiRequestException.class)
        .matches(e -> ((OpenAiRequestException) e).problem() == Problem.TOO_LARGE);
    assertThatThrownBy(
            () -> small.read(new ByteArrayInputStream(big.getBytes(StandardCharsets.UTF_8)), null))
        .matches(e -> ((OpenAiRequestException) e).problem() == Problem.TOO_LARGE);
  }

  @Test
  void deepNestingIsRefusedAsTooLarge() {
    String deep =
        "{\"model\":\"m\",\"prompt\":\"x\",\"extra\":" + "[".repeat(500) + "]".repeat(500) + "}";
    assertThat(problemOf(deep)).isEqualTo(Problem.TOO_LARGE);
  }

  @Test
  void invalidUtf8IsMalformed() {
    byte[] body = {
      '{', '"', 'm', 'o', 'd', 'e', 'l', '"', ':', '"', (byte) 0xC3, (byte) 0x28, '"', '}'
    };
    assertThatThrownBy(() -> reader.read(body, null))
        .isInstanceOf(OpenAiRequestException.class)
        .matches(e -> ((OpenAiRequestException) e).problem() == Problem.MALFORMED_JSON);
  }

  @Test
  void readsFromAStream() throws Exception {
    OpenAiRequest r =
        reader.read(
            new ByteArrayInputStream(
                "{\"model\":\"m\",\"prompt\":[1,2]}".getBytes(StandardCharsets.UTF_8)),
            "t");
    assertThat(r.routeRequest().prompt()).isEqualTo(Prompt.ofTokens(1, 2));
  }

  @Test
  void builderValidates() {
    assertThatThrownBy(() -> OpenAiRequestReader.builder().maxBodyBytes(10))
        .hasMessageContaining("maxBodyBytes");
    assertThatThrownBy(() -> OpenAiRequestReader.builder().defaultTenant(" "))
        .hasMessageContaining("defaultTenant");
  }
}
