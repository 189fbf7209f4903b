package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Usage;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DefaultDataBufferFactory;
import tools.jackson.databind.json.JsonMapper;

/** The usage chunk the gateway asked for, removed from a stream however it is cut into chunks. */
class ResponseTapTest {
  private static final DefaultDataBufferFactory F = DefaultDataBufferFactory.sharedInstance;

  /** The last bytes of a too-long JSON body that the tap keeps ({@code ResponseTap}'s bound). */
  private static final int JSON_TAIL = 64 * 1024;

  private static final String WITH_USAGE =
      "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}],\"usage\":null}\n\n"
          + "data: {\"choices\":[{\"delta\":{\"content\":\"a \\\"usage\\\":null\"}}], \"usage\": null}\r\n\r\n"
          + "data: {\"usage\":null,\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
          + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,"
          + "\"prompt_tokens_details\":{\"cached_tokens\":1}}}\n\n"
          + "data: [DONE]\n\n";

  private static final String WITHOUT_USAGE =
      "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
          + "data: {\"choices\":[{\"delta\":{\"content\":\"a \\\"usage\\\":null\"}}]}\r\n\r\n"
          + "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
          + "data: [DONE]\n\n";

  @Test
  void stripsTheUsageChunkAndNullUsageAtEveryChunkBoundary() {
    byte[] in = WITH_USAGE.getBytes(StandardCharsets.UTF_8);
    for (int cut = 0; cut <= in.length; cut++) {
      AtomicInteger first = new AtomicInteger();
      ResponseTap tap = new ResponseTap(true, 1 << 20, true, first::incrementAndGet);
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      feed(tap, in, 0, cut, out);
      feed(tap, in, cut, in.length, out);
      byte[] rest = tap.onEnd();
      if (rest != null) {
        out.writeBytes(rest);
      }
      assertThat(out.toString(StandardCharsets.UTF_8)).as("cut at " + cut).isEqualTo(WITHOUT_USAGE);
      assertThat(tap.usage()).isEqualTo(new Usage(5, 2, 1));
      assertThat(first).hasValue(1);
      assertThat(tap.dataEvents()).isEqualTo(3);
    }
  }

  @Test
  void aMissingCachedCountIsUnknownNotZero() {
    JsonMapper json = JsonMapper.builder().build();
    Usage none =
        ResponseTap.usageOf(
            json.readTree("{\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}"));
    assertThat(none).isEqualTo(Usage.of(5, 2));
    assertThat(none.cachedReported()).isFalse();
    Usage nullDetails =
        ResponseTap.usageOf(
            json.readTree(
                "{\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,"
                    + "\"prompt_tokens_details\":null}}"));
    assertThat(nullDetails.cachedReported()).isFalse();
    Usage zero =
        ResponseTap.usageOf(
            json.readTree(
                "{\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,"
                    + "\"prompt_tokens_details\":{\"cached_tokens\":0}}}"));
    assertThat(zero).isEqualTo(new Usage(5, 2, 0));
    assertThat(zero.cachedReported()).isTrue();
  }

  @Test
  void withoutStrippingTheChunksPassAsTheyAre() {
    byte[] in = WITH_USAGE.getBytes(StandardCharsets.UTF_8);
    ResponseTap tap = new ResponseTap(true, 1 << 20, false, () -> {});
    DataBuffer b = F.wrap(in);
    assertThat(tap.onChunk(b, F)).isSameAs(b);
    assertThat(tap.onEnd()).isNull();
    assertThat(tap.usage()).isEqualTo(new Usage(5, 2, 1));
  }

  @Test
  void theErrorEventClosesAPartLineOrEvent() {
    assertThat(errorAfter("data: {\"a\":1}\n\n")).startsWith("data: {\"error\":");
    assertThat(errorAfter("data: {\"a\":1}\n")).startsWith("\ndata: {\"error\":");
    assertThat(errorAfter("data: {\"a\"")).startsWith("\n\ndata: {\"error\":");
    assertThat(errorAfter("data: {\"a\":1}\n\n"))
        .contains("\"type\":\"server_error\"", "\"code\":\"backend_failed\"")
        .endsWith("}}\n\ndata: [DONE]\n\n");
  }

  @Test
  void aLineTooLongToHoldPassesThroughWhenStripping() {
    String big = "data: " + "x".repeat(ResponseTap.MAX_LINE_BYTES + 10) + "\n\n";
    ResponseTap tap = new ResponseTap(true, 1 << 20, true, () -> {});
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] in = (big + "data: [DONE]\n\n").getBytes(StandardCharsets.UTF_8);
    feed(tap, in, 0, in.length, out);
    assertThat(tap.onEnd()).isNull();
    assertThat(out.toByteArray()).isEqualTo(in);
  }

  private static String errorAfter(String sent) {
    ResponseTap tap = new ResponseTap(true, 1 << 20, false, () -> {});
    tap.onChunk(F.wrap(sent.getBytes(StandardCharsets.UTF_8)), F);
    return new String(tap.errorEvent("backend_failed", "gone"), StandardCharsets.UTF_8);
  }

  /**
   * What a lease is charged from the tap: the engine's usage; without one the prompt and one token
   * per event; a JSON body too long to read its usage charges the reserved output, never none.
   */
  @Test
  void theChargeComesFromTheUsageTheEventsOrTheReservation() {
    dev.prefixrouter.api.RoutingEngine engine =
        dev.prefixrouter.api.RoutingEngine.builder()
            .backend(dev.prefixrouter.api.Backend.of("a", "m"))
            .build();
    dev.prefixrouter.api.Routed routed =
        (dev.prefixrouter.api.Routed)
            engine.route(
                dev.prefixrouter.api.RouteRequest.builder("t", "m")
                    .prompt(dev.prefixrouter.api.Prompt.ofText("hello"))
                    .maxOutputTokens(8_000)
                    .build());
    int prompt = routed.promptTokens();
    assertThat(PrefixRouterGatewayFilter.used(routed, null)).isEqualTo(Usage.of(prompt, 0));

    ResponseTap withUsage = new ResponseTap(true, 1 << 20, true, () -> {});
    feed(withUsage, WITH_USAGE.getBytes(StandardCharsets.UTF_8), new ByteArrayOutputStream());
    assertThat(PrefixRouterGatewayFilter.used(routed, withUsage)).isEqualTo(new Usage(5, 2, 1));

    ResponseTap events = new ResponseTap(true, 1 << 20, false, () -> {});
    feed(events, WITHOUT_USAGE.getBytes(StandardCharsets.UTF_8), new ByteArrayOutputStream());
    assertThat(PrefixRouterGatewayFilter.used(routed, events)).isEqualTo(Usage.of(prompt, 3));

    // a body longer than the tap keeps is scanned for its usage wherever it is (first here)
    byte[] body =
        ("{\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7000},"
                + "\"choices\":[{\"message\":{\"content\":\""
                + "x".repeat(JSON_TAIL)
                + "\"}}]}")
            .getBytes(StandardCharsets.UTF_8);
    ResponseTap scanned = new ResponseTap(false, 64, false, () -> {});
    feed(scanned, body, new ByteArrayOutputStream());
    scanned.onEnd();
    assertThat(PrefixRouterGatewayFilter.used(routed, scanned)).isEqualTo(Usage.of(5, 7000));
    // and without one it is charged the reservation
    ResponseTap tooLong = new ResponseTap(false, 64, false, () -> {});
    String noUsage =
        new String(body, StandardCharsets.UTF_8)
            .replace("{\"prompt_tokens\":5,\"completion_tokens\":7000}", "null");
    feed(tooLong, noUsage.getBytes(StandardCharsets.UTF_8), new ByteArrayOutputStream());
    tooLong.onEnd();
    assertThat(tooLong.usage()).isNull();
    assertThat(tooLong.usageLost()).isTrue();
    assertThat(PrefixRouterGatewayFilter.used(routed, tooLong)).isEqualTo(Usage.of(prompt, 8_000));

    ResponseTap small = new ResponseTap(false, 1 << 20, false, () -> {});
    feed(small, body, new ByteArrayOutputStream());
    small.onEnd();
    assertThat(small.usageLost()).isFalse();
    assertThat(PrefixRouterGatewayFilter.used(routed, small)).isEqualTo(Usage.of(5, 7000));
  }

  /**
   * A JSON body longer than the tap keeps (a long answer with {@code logprobs} passes 8 MB at a few
   * thousand tokens) is charged the usage the engine wrote at its end, read from the body's last
   * bytes however the body is cut into chunks; an answer's own {@code "usage"} tokens and strings
   * before it are not taken for it.
   */
  @Test
  void aJsonBodyLongerThanTheTapKeepsIsChargedTheUsageAtItsEnd() {
    StringBuilder logprobs = new StringBuilder();
    for (int i = 0; i < 3_000; i++) {
      logprobs
          .append(i == 0 ? "" : ",")
          .append("{\"token\":\"usage\",\"logprob\":-0.1,\"top_logprobs\":[")
          .append("{\"token\":\"\\\"usage\\\":{\",\"logprob\":-1.5}]}");
    }
    String usage =
        "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7000,\"total_tokens\":7005,"
            + "\"prompt_tokens_details\":{\"cached_tokens\":2}}";
    byte[] body =
        ("{\"id\":\"x\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,"
                + "\"message\":{\"role\":\"assistant\",\"content\":\"a \\\"usage\\\": {}\"},"
                + "\"logprobs\":{\"content\":["
                + logprobs
                + "]},\"finish_reason\":\"length\"}],"
                + usage
                + ",\"prompt_logprobs\":null,\"kv_transfer_params\":null}")
            .getBytes(StandardCharsets.UTF_8);
    assertThat(body.length).isGreaterThan(2 * JSON_TAIL);
    for (int chunk : new int[] {1, 7, 4096, JSON_TAIL + 3, body.length}) {
      ResponseTap tap = new ResponseTap(false, 100_000, false, () -> {});
      for (int from = 0; from < body.length; from += chunk) {
        feed(tap, body, from, Math.min(body.length, from + chunk), new ByteArrayOutputStream());
      }
      assertThat(tap.onEnd()).isNull();
      assertThat(tap.usage()).as("chunks of " + chunk).isEqualTo(new Usage(5, 7000, 2));
      assertThat(tap.usageLost()).isFalse();
    }
  }

  /**
   * A member after {@code usage} longer than any tail (vLLM's {@code prompt_logprobs}, which a
   * client asks for) does not hide it: the body is scanned as it passes, not read from its end.
   */
  @Test
  void aLongMemberAfterTheUsageDoesNotHideIt() {
    StringBuilder promptLogprobs = new StringBuilder("[null");
    for (int i = 0; i < 20_000; i++) {
      promptLogprobs.append(",{\"").append(i).append("\":{\"logprob\":-1.5,\"rank\":1}}");
    }
    byte[] body =
        ("{\"id\":\"x\",\"choices\":[{\"index\":0,\"text\":\"\\\"usage\\\":{}\"}],"
                + "\"usage\":{\"prompt_tokens\":20000,\"completion_tokens\":9000,"
                + "\"prompt_tokens_details\":{\"cached_tokens\":0}},"
                + "\"prompt_logprobs\":"
                + promptLogprobs
                + "]}")
            .getBytes(StandardCharsets.UTF_8);
    assertThat(body.length).isGreaterThan(8 * JSON_TAIL);
    for (int chunk : new int[] {1, 4096, body.length}) {
      ResponseTap tap = new ResponseTap(false, 1_000, false, () -> {});
      for (int from = 0; from < body.length; from += chunk) {
        feed(tap, body, from, Math.min(body.length, from + chunk), new ByteArrayOutputStream());
      }
      tap.onEnd();
      assertThat(tap.usage()).as("chunks of " + chunk).isEqualTo(new Usage(20000, 9000, 0));
      assertThat(tap.usageLost()).isFalse();
    }
  }

  /** A body whose last {@code "usage"} member is cut or not counts is charged its reservation. */
  @Test
  void aJsonBodyTooLongWithAnUnreadableUsageAtItsEndLosesIt() {
    String head = "{\"choices\":[{\"text\":\"" + "x".repeat(200) + "\"}],";
    for (String end :
        new String[] {
          "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":70", // cut off
          "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":\"many\"}}",
          "\"usage\":null}",
          "\"id\":\"x\"}"
        }) {
      ResponseTap tap = new ResponseTap(false, 64, false, () -> {});
      feed(tap, (head + end).getBytes(StandardCharsets.UTF_8), new ByteArrayOutputStream());
      tap.onEnd();
      assertThat(tap.usage()).as(end).isNull();
      assertThat(tap.usageLost()).as(end).isTrue();
    }
  }

  private static void feed(ResponseTap tap, byte[] in, ByteArrayOutputStream out) {
    feed(tap, in, 0, in.length, out);
  }

  private static void feed(
      ResponseTap tap, byte[] in, int from, int to, ByteArrayOutputStream out) {
    byte[] part = java.util.Arrays.copyOfRange(in, from, to);
    DataBuffer o = tap.onChunk(F.wrap(part), F);
    if (o != null) {
      byte[] b = new byte[o.readableByteCount()];
      o.read(b);
      out.writeBytes(b);
    }
  }
}
