package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.RoutingEngine;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The runnable gateway (its own application class) in front of fake engines on loopback, called by
 * the JDK's HTTP client: streaming chunk by chunk with usage, non-streaming usage, failover on 5xx
 * and on a refused connection, the idle timeout, a client that goes away, and every rejection as
 * OpenAI's error JSON with its status.
 */
@SpringBootTest(
    classes = GatewayApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
      "prefix-router.scorer.policy=round-robin",
      "prefix-router.limiter.tenants.tiny=60",
      "prefix-router.gateway.idle-timeout=1s",
      "prefix-router.gateway.response-timeout=2s",
      "management.endpoints.web.exposure.include=health,prefixrouter,prometheus",
      "management.endpoint.prefixrouter.access=unrestricted",
      // the runnable jar's log format (GatewayApplication.defaults(), applied by its main method)
      "logging.structured.format.console=ecs"
    })
@ExtendWith(OutputCaptureExtension.class)
class GatewayEndToEndTest {
  private static final String MAIN_KEY = "sk-main-test";
  private static final String TINY_KEY = "sk-tiny-test";

  static final FakeEngine OK1 = engine("ok1", FakeEngine.Mode.OK);
  static final FakeEngine OK2 = engine("ok2", FakeEngine.Mode.OK);
  static final FakeEngine GATED = engine("gated", FakeEngine.Mode.GATED);
  static final FakeEngine BAD = engine("bad", FakeEngine.Mode.FAIL_500);
  static final FakeEngine GOOD = engine("good", FakeEngine.Mode.OK);
  static final FakeEngine ALIVE = engine("alive", FakeEngine.Mode.OK);
  static final FakeEngine SILENT = engine("silent", FakeEngine.Mode.SILENT);
  static final FakeEngine HOLD = engine("hold", FakeEngine.Mode.HOLD);
  static final FakeEngine DRAINED = engine("drained", FakeEngine.Mode.OK);
  static final FakeEngine DYING = engine("dying", FakeEngine.Mode.DIE);
  static final FakeEngine HANG = engine("hang", FakeEngine.Mode.HANG);
  static final FakeEngine HANG_OK = engine("hang-ok", FakeEngine.Mode.OK);

  /** 25 tokens 100 ms apart: ~2.5 s in all, longer than the idle timeout, never idle that long. */
  static final FakeEngine PACED = engine("paced", new FakeEngine.Timing(100, 100, 25));

  /**
   * Its second token comes 3 s after the first: three times the idle timeout (with 1.5 s, a check
   * that ran 0.5 s late on a loaded host would have seen that token and let the stream through).
   */
  static final FakeEngine STALLING = engine("stalling", new FakeEngine.Timing(0, 3000, 3));

  @DynamicPropertySource
  static void backends(DynamicPropertyRegistry r) throws IOException {
    int i = 0;
    i = backend(r, i, "ok1", OK1.url(), "chat");
    i = backend(r, i, "ok2", OK2.url(), "chat");
    i = backend(r, i, "gated", GATED.url(), "gated");
    i = backend(r, i, "bad", BAD.url(), "flaky");
    i = backend(r, i, "good", GOOD.url(), "flaky");
    i = backend(r, i, "dead", "http://127.0.0.1:" + closedPort(), "deadish");
    i = backend(r, i, "alive", ALIVE.url(), "deadish");
    i = backend(r, i, "silent", SILENT.url(), "silent");
    i = backend(r, i, "hold", HOLD.url(), "hold");
    i = backend(r, i, "drained", DRAINED.url(), "drained");
    i = backend(r, i, "dying", DYING.url(), "dying");
    i = backend(r, i, "hang", HANG.url(), "hangy");
    i = backend(r, i, "hang-ok", HANG_OK.url(), "hangy");
    i = backend(r, i, "paced", PACED.url(), "paced");
    backend(r, i, "stalling", STALLING.url(), "stalling");
    // (an indexed list binds from one property source only: every entry is given here)
    r.add("prefix-router.gateway.api-keys[0].tenant", () -> "main");
    r.add("prefix-router.gateway.api-keys[1].tenant", () -> "tiny");
    r.add("prefix-router.gateway.api-keys[0].sha256", () -> ApiKeys.sha256Hex(MAIN_KEY));
    r.add("prefix-router.gateway.api-keys[1].sha256", () -> ApiKeys.sha256Hex(TINY_KEY));
  }

  @LocalServerPort int port;
  @Autowired RoutingEngine engine;
  @Autowired MeterRegistry meters;
  @Autowired reactor.netty.http.client.HttpClient upstream;

  private final HttpClient client =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(2))
          .build();

  @AfterAll
  static void stop() {
    for (FakeEngine e :
        List.of(
            OK1, OK2, GATED, BAD, GOOD, ALIVE, SILENT, HOLD, DRAINED, DYING, HANG, HANG_OK, PACED,
            STALLING)) {
      e.close();
    }
  }

  @Test
  void streamsChunkByChunkAndChargesTheEnginesUsage() throws Exception {
    double completionBefore = counter("prefixrouter.gateway.tokens", "gated", "completion");
    long ttftBefore = ttftCount("gated");
    HttpResponse<InputStream> res =
        client.send(post("/v1/chat/completions", chat("gated", true), MAIN_KEY), ofStream());
    assertThat(res.statusCode()).isEqualTo(200);
    assertThat(res.headers().firstValue("content-type"))
        .hasValueSatisfying(v -> assertThat(v).startsWith("text/event-stream"));
    List<String> lines = new ArrayList<>();
    try (BufferedReader in = reader(res)) {
      String line;
      while ((line = in.readLine()) != null && !line.contains("hello")) {
        lines.add(line);
      }
      // the engine is still holding the rest of its answer: the first chunk came through alone
      assertThat(line).contains("hello");
      GATED.gate.countDown();
      while ((line = in.readLine()) != null) {
        lines.add(line);
      }
    }
    assertThat(String.join("\n", lines)).contains("from gated").contains("[DONE]");
    assertThat(GATED.gateTimedOut).as("first chunk held back until the stream ended").isFalse();
    // the gateway asked for usage, the client did not: the client does not see it
    assertThat(GATED.bodies.get(GATED.bodies.size() - 1)).contains("\"include_usage\":true");
    assertThat(String.join("\n", lines)).doesNotContain("usage");
    // complete(usage) with the engine's counts (not the number of chunks), firstToken once
    awaitTrue(
        () ->
            counter("prefixrouter.gateway.tokens", "gated", "completion") - completionBefore
                == FakeEngine.COMPLETION_TOKENS);
    assertThat(ttftCount("gated")).isEqualTo(ttftBefore + 1);
    awaitTrue(() -> engine.inspect().backend("gated").orElseThrow().inFlight() == 0);
  }

  @Test
  void theClientSeesExactlyWhatTheEngineSendsWithoutTheGateway() throws Exception {
    for (boolean askUsage : new boolean[] {false, true}) {
      String body =
          askUsage
              ? chat("chat", true)
                  .replace(
                      "\"stream\":true",
                      "\"stream\":true,\"stream_options\":{\"include_usage\":true}")
              : chat("chat", true);
      HttpResponse<String> via =
          client.send(post("/v1/chat/completions", body, MAIN_KEY), ofString());
      assertThat(via.statusCode()).isEqualTo(200);
      String backend =
          via.headers().firstValue(PrefixRouterGatewayFilter.BACKEND_HEADER).orElseThrow();
      FakeEngine e = backend.equals("ok1") ? OK1 : OK2;
      HttpResponse<String> direct =
          client.send(
              HttpRequest.newBuilder(URI.create(e.url() + "/v1/chat/completions"))
                  .header("Content-Type", "application/json")
                  .POST(HttpRequest.BodyPublishers.ofString(body))
                  .build(),
              ofString());
      assertThat(via.body()).as("usage asked: " + askUsage).isEqualTo(direct.body());
      assertThat(via.body().contains("\"completion_tokens\":7")).isEqualTo(askUsage);
      assertThat(via.body().contains("\"usage\":null")).isEqualTo(askUsage);
    }
  }

  @Test
  void anEngineThatDiesMidStreamEndsTheStreamWithAnErrorEvent() throws Exception {
    HttpResponse<String> res =
        client.send(post("/v1/chat/completions", chat("dying", true), MAIN_KEY), ofString());
    assertThat(res.statusCode()).isEqualTo(200);
    String[] events = res.body().split("\n\n");
    assertThat(events[1]).contains("hello");
    assertThat(events[events.length - 2])
        .startsWith("data: {\"error\":{")
        .contains("\"type\":\"server_error\"")
        .contains("\"code\":\"backend_failed\"")
        .contains("mid-stream");
    assertThat(events[events.length - 1]).isEqualTo("data: [DONE]");
    assertThat(DYING.requests.get()).as("no failover after the first byte").isEqualTo(1);
    awaitTrue(() -> engine.inspect().backend("dying").orElseThrow().inFlight() == 0);
    var failed =
        meters.find("prefixrouter.gateway.requests").tag("model", "dying").tag("outcome", "failed");
    awaitTrue(() -> failed.timer() != null && failed.timer().count() == 1);
    assertThat(
            meters
                .find("prefixrouter.gateway.requests")
                .tag("model", "dying")
                .tag("outcome", "cancelled")
                .timer())
        .isNull();
  }

  @Test
  void theIdleTimeoutCountsSilenceBetweenChunksNotTheStreamsLength() throws Exception {
    long t0 = System.nanoTime();
    HttpResponse<String> paced =
        client.send(post("/v1/chat/completions", chat("paced", true), MAIN_KEY), ofString());
    assertThat(System.nanoTime() - t0)
        .as("the stream outlasted the 1 s idle timeout")
        .isGreaterThan(TimeUnit.MILLISECONDS.toNanos(2000));
    assertThat(paced.statusCode()).isEqualTo(200);
    assertThat(paced.body())
        .contains("from paced")
        .doesNotContain("error")
        .endsWith("data: [DONE]\n\n");
    assertThat(paced.body().split("\"content\":\"tok \"", -1)).hasSize(24); // 23 middle tokens

    // 3 s of silence after the first token: cut with an error event, no failover
    HttpResponse<String> stalled =
        client.send(post("/v1/chat/completions", chat("stalling", true), MAIN_KEY), ofString());
    assertThat(stalled.statusCode()).isEqualTo(200);
    assertThat(stalled.body())
        .contains("hello ")
        .doesNotContain("from stalling")
        .contains("\"code\":\"backend_timeout\"")
        .endsWith("data: [DONE]\n\n");
    assertThat(STALLING.requests.get()).isEqualTo(1);
  }

  @Test
  void anEngineThatNeverAnswersFailsOverWithinTheHeaderTimeout() throws Exception {
    // streamed: headers within the idle timeout (1 s); non-streamed: the response timeout (2 s)
    for (boolean stream : new boolean[] {true, false}) {
      int before = HANG.requests.get();
      for (int i = 0; i < 10 && HANG.requests.get() == before; i++) {
        long t0 = System.nanoTime();
        HttpResponse<String> res =
            client.send(post("/v1/chat/completions", chat("hangy", stream), MAIN_KEY), ofString());
        assertThat(res.statusCode()).as("stream " + stream).isEqualTo(200);
        assertThat(res.body()).contains("hang-ok");
        assertThat(res.headers().firstValue(PrefixRouterGatewayFilter.BACKEND_HEADER))
            .hasValue("hang-ok");
        // well inside "never": the header timeout and a failover, with room for a loaded host
        assertThat(System.nanoTime() - t0).isLessThan(TimeUnit.SECONDS.toNanos(8));
      }
      assertThat(HANG.requests.get()).as("the hanging engine was tried").isGreaterThan(before);
    }
    assertThat(failovers("hangy")).isGreaterThanOrEqualTo(2);
    awaitTrue(() -> engine.inspect().backend("hang").orElseThrow().inFlight() == 0);
  }

  @Test
  void responsesAndCompletionsStreamWithTheirOwnUsage() throws Exception {
    // the Responses API: output_text.delta events, usage in response.completed (input/output)
    long ttftBefore = ttftCount("chat");
    double completionBefore = counter("prefixrouter.gateway.tokens", "chat", "completion");
    double cachedBefore = counter("prefixrouter.gateway.tokens", "chat", "cached");
    String responses =
        "{\"model\":\"chat\",\"stream\":true,\"input\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    HttpResponse<String> res = client.send(post("/v1/responses", responses, MAIN_KEY), ofString());
    assertThat(res.statusCode()).isEqualTo(200);
    assertThat(res.body())
        .contains("event: response.output_text.delta")
        .contains("\"type\":\"response.completed\"")
        .contains("\"input_tokens\":" + FakeEngine.PROMPT_TOKENS);
    String forwarded = lastBody();
    assertThat(forwarded)
        .as("no stream_options for the Responses API")
        .doesNotContain("include_usage");
    awaitTrue(() -> ttftCount("chat") == ttftBefore + 1);
    awaitTrue(
        () ->
            counter("prefixrouter.gateway.tokens", "chat", "completion") - completionBefore
                == FakeEngine.COMPLETION_TOKENS);
    awaitTrue(() -> counter("prefixrouter.gateway.tokens", "chat", "cached") - cachedBefore == 3);

    // completions: choices[].text chunks; the usage chunk the gateway asked for is not passed on
    double completionBefore2 = counter("prefixrouter.gateway.tokens", "chat", "completion");
    String completions = "{\"model\":\"chat\",\"stream\":true,\"prompt\":\"hello there\"}";
    HttpResponse<String> c =
        client.send(post("/v1/completions", completions, MAIN_KEY), ofString());
    assertThat(c.statusCode()).isEqualTo(200);
    assertThat(c.body()).contains("\"text\":\"hello \"").contains("[DONE]").doesNotContain("usage");
    assertThat(lastBody()).contains("\"include_usage\":true");
    awaitTrue(() -> ttftCount("chat") == ttftBefore + 2);
    awaitTrue(
        () ->
            counter("prefixrouter.gateway.tokens", "chat", "completion") - completionBefore2
                == FakeEngine.COMPLETION_TOKENS);
  }

  @Test
  void upstreamConnectionsArePooledPerEventLoop() {
    // prefix-router.gateway.upstream-loop-affinity (default true) with Spring Cloud Gateway's
    // elastic pool: its HttpClient takes connections from a LoopAffinityConnectionProvider
    assertThat(upstream.configuration().connectionProvider())
        .isInstanceOf(LoopAffinityConnectionProvider.class);
  }

  /** The body the chat engines received last (the request just sent went to one of them). */
  private static String lastBody() {
    String a = OK1.bodies.isEmpty() ? "" : OK1.bodies.get(OK1.bodies.size() - 1);
    String b = OK2.bodies.isEmpty() ? "" : OK2.bodies.get(OK2.bodies.size() - 1);
    return OK1.lastAt >= OK2.lastAt ? a : b;
  }

  @Test
  void eachRequestLogsOneJsonLineWithItsRequestAndTraceIds(CapturedOutput output) throws Exception {
    assertThat(GatewayApplication.defaults())
        .containsEntry("logging.structured.format.console", "ecs");
    String traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    String requestId = "req-log-" + System.nanoTime();
    HttpResponse<String> res =
        client.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
                .timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json")
                .header("Authorization", "Bearer " + MAIN_KEY)
                .header("X-Request-Id", requestId)
                .header("traceparent", "00-" + traceId + "-00f067aa0ba902b7-01")
                .POST(HttpRequest.BodyPublishers.ofString(chat("chat", true)))
                .build(),
            ofString());
    assertThat(res.statusCode()).isEqualTo(200);
    assertThat(res.headers().firstValue("X-Request-Id")).hasValue(requestId);
    // the backend got a traceparent of the same trace (a new span id)
    String sent =
        OK1.lastAt >= OK2.lastAt
            ? OK1.traceparents.get(OK1.traceparents.size() - 1)
            : OK2.traceparents.get(OK2.traceparents.size() - 1);
    assertThat(sent).startsWith("00-" + traceId + "-").doesNotContain("00f067aa0ba902b7");
    awaitTrue(() -> output.getOut().contains("\"request_id\":\"" + requestId + "\""));
    String line =
        output
            .getOut()
            .lines()
            .filter(l -> l.contains("\"request_id\":\"" + requestId + "\""))
            .findFirst()
            .orElseThrow();
    assertThat(line)
        .startsWith("{")
        .endsWith("}")
        .contains("\"trace_id\":\"" + traceId + "\"")
        .containsPattern("\"upstream_request_id\":\"[0-9a-f]{32}\"")
        .contains("\"outcome\":\"ok\"")
        .contains("\"model\":\"chat\"")
        .contains("\"tenant\":\"main\"");
  }

  /**
   * The engine never gets a client's {@code kv_transfer_params} (KV blocks by id, past the tenant's
   * cache salt) or, by default, its {@code priority} (queue order under vLLM's priority
   * scheduling); the rest of the body is forwarded.
   */
  @Test
  void theEngineGetsNoClientKvTransferParamsOrPriority() throws Exception {
    String body =
        "{\"model\":\"chat\",\"stream\":false,\"priority\":-100,"
            + "\"kv_transfer_params\":{\"do_remote_prefill\":true,\"remote_block_ids\":[1,2,3]},"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    HttpResponse<String> res =
        client.send(post("/v1/chat/completions", body, MAIN_KEY), ofString());
    assertThat(res.statusCode()).isEqualTo(200);
    assertThat(lastBody())
        .as("the body the engine got")
        .isEqualTo(
            "{\"model\":\"chat\",\"stream\":false,"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
  }

  /**
   * The engine takes the {@code X-Request-Id} it gets as its own request id, which must be unique
   * (vLLM fails a request whose id is already running): it gets the gateway's own id for every
   * request, never the client's, which is echoed back.
   */
  @Test
  void theEngineGetsTheGatewaysOwnRequestIdNotTheClients() throws Exception {
    String clientId = "req-dup-" + System.nanoTime();
    List<String> sentIds = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      HttpResponse<String> res =
          client.send(
              HttpRequest.newBuilder(
                      URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
                  .timeout(Duration.ofSeconds(10))
                  .header("Content-Type", "application/json")
                  .header("Authorization", "Bearer " + MAIN_KEY)
                  .header("X-Request-Id", clientId)
                  .POST(HttpRequest.BodyPublishers.ofString(chat("chat", false)))
                  .build(),
              ofString());
      assertThat(res.statusCode()).isEqualTo(200);
      assertThat(res.headers().firstValue("X-Request-Id")).hasValue(clientId);
      FakeEngine e = OK1.lastAt >= OK2.lastAt ? OK1 : OK2;
      sentIds.add(e.requestIds.get(e.requestIds.size() - 1));
    }
    assertThat(sentIds)
        .as("the X-Request-Id the engine got")
        .doesNotContain(clientId)
        .doesNotHaveDuplicates()
        .allSatisfy(id -> assertThat(id).matches("[0-9a-f]{32}"));
  }

  @Test
  void nonStreamingPassesTheBodyAndChargesItsUsage() throws Exception {
    double before = counter("prefixrouter.gateway.tokens", "chat", "prompt");
    HttpResponse<String> res =
        client.send(post("/v1/chat/completions", chat("chat", false), MAIN_KEY), ofString());
    assertThat(res.statusCode()).isEqualTo(200);
    assertThat(res.body()).contains("\"completion_tokens\":7").contains("hi from ok");
    assertThat(res.headers().firstValue("X-Request-Id")).isPresent();
    awaitTrue(
        () ->
            counter("prefixrouter.gateway.tokens", "chat", "prompt") - before
                == FakeEngine.PROMPT_TOKENS);
  }

  @Test
  void a5xxBeforeTheFirstByteFailsOver() throws Exception {
    for (int i = 0; i < 10 && BAD.requests.get() == 0; i++) {
      HttpResponse<String> res =
          client.send(post("/v1/chat/completions", chat("flaky", false), MAIN_KEY), ofString());
      assertThat(res.statusCode()).isEqualTo(200);
      assertThat(res.body()).contains("hi from good");
      assertThat(res.headers().firstValue(PrefixRouterGatewayFilter.BACKEND_HEADER))
          .hasValue("good");
    }
    assertThat(BAD.requests.get()).as("the 500 engine was tried").isPositive();
  }

  @Test
  void aRefusedConnectionFailsOver() throws Exception {
    double before = failovers("deadish");
    for (int i = 0; i < 10 && failovers("deadish") == before; i++) {
      HttpResponse<String> res =
          client.send(post("/v1/chat/completions", chat("deadish", true), MAIN_KEY), ofString());
      assertThat(res.statusCode()).isEqualTo(200);
      assertThat(res.body()).contains("from alive");
    }
    assertThat(failovers("deadish")).isGreaterThan(before);
    // the starter observes the failover itself (Lease.failover), a timer through Boot's handler
    var observed =
        meters
            .find("prefixrouter.failover")
            .tag("model", "deadish")
            .tag("failure", "connect")
            .tag("outcome", "routed")
            .timer();
    assertThat(observed).isNotNull();
    assertThat(observed.count()).isPositive();
  }

  @Test
  void aSilentEngineTimesOutAs504() throws Exception {
    HttpResponse<String> res =
        client.send(post("/v1/chat/completions", chat("silent", true), MAIN_KEY), ofString());
    assertThat(res.statusCode()).isEqualTo(504);
    assertThat(res.body()).contains("\"code\":\"backend_timeout\"");
  }

  @Test
  void aClientThatGoesAwayEndsTheLeaseAndTheUpstreamCall() throws Exception {
    HttpResponse<InputStream> res =
        client.send(post("/v1/chat/completions", chat("hold", true), MAIN_KEY), ofStream());
    BufferedReader in = reader(res);
    String line;
    while ((line = in.readLine()) != null && !line.contains("hello")) {
      // skip to the first content chunk
    }
    assertThat(line).contains("hello");
    assertThat(engine.inspect().backend("hold").orElseThrow().inFlight()).isEqualTo(1);
    res.body().close();
    awaitTrue(() -> engine.inspect().backend("hold").orElseThrow().inFlight() == 0);
    assertThat(HOLD.readerGone.await(15, TimeUnit.SECONDS)).isTrue();
    var cancelled =
        meters
            .find("prefixrouter.gateway.requests")
            .tag("model", "hold")
            .tag("outcome", "cancelled");
    // recorded just after the lease failed (inFlight 0 can be seen first)
    awaitTrue(() -> cancelled.timer() != null && cancelled.timer().count() >= 1);
    assertThat(cancelled.timer()).isNotNull();
    assertThat(cancelled.timer().count()).isEqualTo(1);
  }

  @Test
  void rejectionsAreOpenAiErrorsWithTheirStatus() throws Exception {
    HttpResponse<String> unknown =
        client.send(
            post("/v1/chat/completions", chat("no-such-model", false), MAIN_KEY), ofString());
    assertThat(unknown.statusCode()).isEqualTo(404);
    assertThat(unknown.body()).contains("\"code\":\"model_not_found\"").contains("\"error\":{");

    engine.backends().drain("drained");
    HttpResponse<String> drained =
        client.send(post("/v1/chat/completions", chat("drained", false), MAIN_KEY), ofString());
    assertThat(drained.statusCode()).isEqualTo(503);
    assertThat(drained.body()).contains("\"code\":\"no_healthy_backend\"");

    HttpResponse<String> bad =
        client.send(
            post("/v1/chat/completions", "{\"model\": \"chat\", \"messages\": [", MAIN_KEY),
            ofString());
    assertThat(bad.statusCode()).isEqualTo(400);
    assertThat(bad.body()).contains("\"code\":\"malformed_json\"");

    HttpResponse<String> noKey =
        client.send(post("/v1/chat/completions", chat("chat", false), null), ofString());
    assertThat(noKey.statusCode()).isEqualTo(401);
    assertThat(noKey.body()).contains("\"code\":\"invalid_api_key\"");

    HttpResponse<String> tooLarge =
        client.send(
            post("/v1/chat/completions", chatWithMaxTokens("chat", 1000), TINY_KEY), ofString());
    assertThat(tooLarge.statusCode()).isEqualTo(413);
    assertThat(tooLarge.body()).contains("\"code\":\"request_too_large\"");

    HttpResponse<String> limited = null;
    for (int i = 0; i < 10; i++) {
      limited =
          client.send(
              post("/v1/chat/completions", chatWithMaxTokens("chat", 40), TINY_KEY), ofString());
      if (limited.statusCode() != 200) {
        break;
      }
    }
    assertThat(limited.statusCode()).isEqualTo(429);
    assertThat(limited.headers().firstValue("Retry-After"))
        .hasValueSatisfying(v -> assertThat(Long.parseLong(v)).isPositive());
    assertThat(limited.body()).contains("\"code\":\"rate_limit_exceeded\"");
  }

  @Test
  void modelsListsWhatTheBackendsServe() throws Exception {
    HttpResponse<String> res =
        client.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/models"))
                .header("Authorization", "Bearer " + MAIN_KEY)
                .build(),
            ofString());
    assertThat(res.statusCode()).isEqualTo(200);
    assertThat(res.body()).contains("\"id\":\"chat\"").contains("\"id\":\"flaky\"");
  }

  @Test
  void prometheusShowsTheGatewaysHistogramsInSeconds() throws Exception {
    client.send(post("/v1/chat/completions", chat("chat", true), MAIN_KEY), ofString());
    HttpResponse<String> res =
        client.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/actuator/prometheus"))
                .build(),
            ofString());
    assertThat(res.statusCode()).isEqualTo(200);
    assertThat(res.body())
        .contains("prefixrouter_gateway_ttft_seconds_bucket{")
        .contains("prefixrouter_gateway_requests_seconds_bucket{")
        .contains("prefixrouter_route_seconds_count{");
  }

  @Test
  void actuatorWritesAreRefusedWithoutAnAdminKey() throws Exception {
    HttpResponse<String> res =
        client.send(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + port + "/actuator/prefixrouter/new"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"action\":\"add\",\"models\":\"x\"}"))
                .build(),
            ofString());
    assertThat(res.statusCode()).isEqualTo(403);
    assertThat(engine.backends().get("new")).isEmpty();
  }

  /**
   * With API keys on, the fleet snapshot (every tenant's name and remaining tokens, the backends)
   * is not for anyone who can reach the port, nor for a tenant's key: without an admin key
   * configured, reads of the endpoint are refused too, on every path that reaches it.
   */
  @Test
  void theFleetSnapshotIsNotReadableWithoutTheAdminKeyWhenApiKeysAreOn() throws Exception {
    client.send(post("/v1/chat/completions", chat("chat", false), TINY_KEY), ofString());
    for (String path :
        new String[] {
          "/actuator/prefixrouter", "/actuator/prefixrouter/ok1", "/%61ctuator/PrefixRouter"
        }) {
      for (String key : new String[] {null, MAIN_KEY}) {
        HttpRequest.Builder b =
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path));
        if (key != null) {
          b.header("Authorization", "Bearer " + key);
        }
        HttpResponse<String> read = client.send(b.build(), ofString());
        assertThat(read.statusCode()).as(path + " key " + key).isEqualTo(403);
        assertThat(read.body()).doesNotContain("tiny").contains("admin_key_required");
      }
    }
    // health stays open for probes (UP or DOWN as the fleet is)
    HttpResponse<String> health =
        client.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/actuator/health"))
                .build(),
            ofString());
    assertThat(health.statusCode()).isIn(200, 503);
  }

  @Test
  void theGrafanaDashboardReadsOnlyMetersThatExist() throws Exception {
    // traffic that makes every meter of the dashboard appear: a stream, a rejection, a failover
    client.send(post("/v1/chat/completions", chat("chat", true), MAIN_KEY), ofString());
    client.send(post("/v1/chat/completions", chat("no-such-model", true), MAIN_KEY), ofString());
    for (int i = 0; i < 10 && failovers("deadish") == 0; i++) {
      client.send(post("/v1/chat/completions", chat("deadish", false), MAIN_KEY), ofString());
    }
    String scrape =
        client
            .send(
                HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + port + "/actuator/prometheus"))
                    .build(),
                ofString())
            .body();
    String dashboard =
        Files.readString(Path.of("grafana/prefix-router-gateway.json"), StandardCharsets.UTF_8);
    Matcher m = Pattern.compile("prefixrouter_[a-z_]+").matcher(dashboard);
    List<String> missing = new ArrayList<>();
    int names = 0;
    while (m.find()) {
      names++;
      String name = m.group();
      if (!Pattern.compile("(?m)^" + name + "[{ ]").matcher(scrape).find()) {
        missing.add(name);
      }
    }
    assertThat(names).isGreaterThan(10);
    assertThat(missing).as("dashboard series absent from /actuator/prometheus").isEmpty();
  }

  // --- helpers

  private HttpRequest post(String path, String body, String key) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofSeconds(10))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body));
    if (key != null) {
      b.header("Authorization", "Bearer " + key);
    }
    return b.build();
  }

  private static String chat(String model, boolean stream) {
    return "{\"model\":\""
        + model
        + "\",\"stream\":"
        + stream
        + ",\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}";
  }

  private static String chatWithMaxTokens(String model, int maxTokens) {
    return "{\"model\":\""
        + model
        + "\",\"max_tokens\":"
        + maxTokens
        + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
  }

  private double counter(String name, String model, String kind) {
    var c = meters.find(name).tag("model", model).tag("kind", kind).counter();
    return c == null ? 0 : c.count();
  }

  private double failovers(String model) {
    var c = meters.find("prefixrouter.gateway.failovers").tag("model", model).counter();
    return c == null ? 0 : c.count();
  }

  private long ttftCount(String model) {
    var t = meters.find("prefixrouter.gateway.ttft").tag("model", model).timer();
    return t == null ? 0 : t.count();
  }

  private static HttpResponse.BodyHandler<String> ofString() {
    return HttpResponse.BodyHandlers.ofString();
  }

  private static HttpResponse.BodyHandler<InputStream> ofStream() {
    return HttpResponse.BodyHandlers.ofInputStream();
  }

  private static BufferedReader reader(HttpResponse<InputStream> res) {
    return new BufferedReader(new InputStreamReader(res.body(), StandardCharsets.UTF_8));
  }

  /** Polls what the gateway's threads make true, at most 15 s (a loaded host stalls). */
  private static void awaitTrue(BooleanSupplier condition) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (!condition.getAsBoolean()) {
      assertThat(end - System.nanoTime()).as("condition not met within 15 s").isPositive();
      Thread.sleep(10);
    }
  }

  private static int backend(
      DynamicPropertyRegistry r, int i, String id, String url, String model) {
    String p = "prefix-router.backends[" + i + "].";
    r.add(p + "id", () -> id);
    r.add(p + "url", () -> url);
    r.add(p + "models[0]", () -> model);
    return i + 1;
  }

  private static int closedPort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private static FakeEngine engine(String name, FakeEngine.Timing timing) {
    try {
      return new FakeEngine(name, FakeEngine.Mode.OK, 0, timing, FakeEngine.COMPLETION_TOKENS);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private static FakeEngine engine(String name, FakeEngine.Mode mode) {
    try {
      return new FakeEngine(name, mode);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
