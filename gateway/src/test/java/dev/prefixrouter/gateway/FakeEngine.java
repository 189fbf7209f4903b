package dev.prefixrouter.gateway;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An OpenAI-compatible engine on loopback for the end-to-end tests and the latency runs: real HTTP,
 * SSE streamed chunk by chunk with a final usage chunk when asked ({@code
 * stream_options.include_usage}), or a JSON body with usage.
 *
 * <p>Timing ({@link Timing}): the tests' engines answer at once with two content chunks ({@link
 * Timing#INSTANT}); an engine started from the command line paces its answer like a serving engine
 * ({@link Timing#REALISTIC} unless {@code --ttft-ms}, {@code --itl-ms}, {@code --tokens} say
 * otherwise): the response headers at once (as vLLM's server sends them before the first chunk),
 * the role chunk and the first content chunk after the time to first token, then one content chunk
 * per token, each after the inter-token delay; a non-streamed answer comes whole after the same
 * total time. {@code Thread.sleep} paces it (overshoot ~0.1 ms per sleep on Linux).
 *
 * <p>Behaviours: {@link Mode#OK}; {@link Mode#GATED} holds the stream after its first content chunk
 * until {@link #gate} opens (at most 5 s); {@link Mode#FAIL_500} answers 500; {@link Mode#SILENT}
 * sends headers and then nothing for 3 s; {@link Mode#HOLD} sends one content chunk and then keeps
 * writing a comment every 50 ms for at most 5 s, recording when the reader is gone; {@link
 * Mode#HOLD_JSON} answers a non-streamed request with the start of a JSON body (chunked, no usage
 * yet) and then keeps writing a space every 50 ms for at most 5 s, as a body still on its way,
 * recording when the reader is gone; {@link Mode#DIE} sends two chunks and then drops the
 * connection without ending the body; {@link Mode#HANG} reads the request and never answers (at
 * most 5 s); {@link Mode#FLOOD} streams content chunks of 32 KiB each as fast as its reader takes
 * them for at most 15 s (a reader that stops reading blocks it), then ends the stream, recording
 * when the reader is gone. Like OpenAI, a stream asked for usage carries {@code "usage":null} in
 * every chunk before the usage chunk.
 */
final class FakeEngine implements AutoCloseable {
  /**
   * Pacing of an answer.
   *
   * @param ttftMillis time from reading the request to the first content chunk, ms, 0..60,000
   * @param itlMillis delay before each further content chunk, ms, 0..60,000
   * @param tokens content chunks per streamed answer (one token each), 2..100,000; the first is
   *     {@code "hello "}, the last {@code "from NAME"}, the others {@code "tok "}
   */
  record Timing(long ttftMillis, long itlMillis, int tokens) {
    /** The tests' engines: no delay, two content chunks. */
    static final Timing INSTANT = new Timing(0, 0, 2);

    /**
     * A command-line engine's default: 50 ms to the first token (a short prompt on a warm engine
     * that is not queueing), 20 ms per further token (50 tokens/s per stream, a mid-size model in a
     * busy batch) and 64 tokens per answer, so 1.31 s per streamed answer.
     */
    static final Timing REALISTIC = new Timing(50, 20, 64);

    Timing {
      if (ttftMillis < 0 || ttftMillis > 60_000) {
        throw new IllegalArgumentException("ttft-ms must be 0..60000, was " + ttftMillis);
      }
      if (itlMillis < 0 || itlMillis > 60_000) {
        throw new IllegalArgumentException("itl-ms must be 0..60000, was " + itlMillis);
      }
      if (tokens < 2 || tokens > 100_000) {
        throw new IllegalArgumentException("tokens must be 2..100000, was " + tokens);
      }
    }
  }

  enum Mode {
    OK,
    GATED,
    FAIL_500,
    SILENT,
    HOLD,
    HOLD_JSON,
    DIE,
    HANG,
    FLOOD
  }

  /**
   * Completion tokens a test engine reports in its usage (unlike the number of chunks it sends, so
   * a test tells the engine's usage from counted chunks); a command-line engine reports its {@link
   * Timing#tokens()}.
   */
  static final int COMPLETION_TOKENS = 7;

  static final int PROMPT_TOKENS = 11;

  final String name;
  final Timing timing;
  private final int completionTokens;
  volatile Mode mode;
  final CountDownLatch gate = new CountDownLatch(1);

  /** Set when a {@link Mode#GATED} stream waited 5 s for its gate in vain. */
  volatile boolean gateTimedOut;

  final CountDownLatch readerGone = new CountDownLatch(1);
  final List<String> bodies = new CopyOnWriteArrayList<>();

  /** The {@code traceparent} header of each request handled normally ("" when absent). */
  final List<String> traceparents = new CopyOnWriteArrayList<>();

  /** The {@code X-Request-Id} header of each request handled normally ("" when absent). */
  final List<String> requestIds = new CopyOnWriteArrayList<>();

  final AtomicInteger requests = new AtomicInteger();

  /** {@link System#nanoTime()} when the last request's body was read. */
  volatile long lastAt = Long.MIN_VALUE;

  /**
   * With {@code -Dfakeengine.probe=FILE}: one line per streamed answer written there at exit, the
   * request's {@code X-Request-Id} and the {@link System#nanoTime()} when its body was read, when
   * the first content chunk was flushed and when the last event was flushed (for the gateway's
   * {@link LatencyProbe} runs).
   */
  private static final String PROBE = System.getProperty("fakeengine.probe", "");

  private static final java.util.Queue<String> PROBE_LINES =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  static {
    if (!PROBE.isEmpty()) {
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(
                  () -> {
                    try {
                      java.nio.file.Files.write(java.nio.file.Path.of(PROBE), PROBE_LINES);
                    } catch (IOException e) {
                      e.printStackTrace();
                    }
                  }));
    }
  }

  private final HttpServer server;
  private final ExecutorService pool = Executors.newCachedThreadPool();

  FakeEngine(String name, Mode mode) throws IOException {
    this(name, mode, 0);
  }

  FakeEngine(String name, Mode mode, int port) throws IOException {
    this(name, mode, port, Timing.INSTANT, COMPLETION_TOKENS);
  }

  FakeEngine(String name, Mode mode, int port, Timing timing, int completionTokens)
      throws IOException {
    this.name = name;
    this.mode = mode;
    this.timing = timing;
    this.completionTokens = completionTokens;
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 256);
    server.setExecutor(pool);
    server.createContext("/v1/", this::handle);
    server.start();
  }

  /**
   * Runs {@link Mode#OK} engines on the given loopback ports until the process is stopped (JDK
   * only, as a source file), paced by {@link Timing#REALISTIC} unless told otherwise: {@code java
   * gateway/src/test/java/dev/prefixrouter/gateway/FakeEngine.java [--ttft-ms=50] [--itl-ms=20]
   * [--tokens=64] 8001 8002} ({@code --ttft-ms=0 --itl-ms=0 --tokens=2}: an engine that answers at
   * once).
   */
  public static void main(String[] args) throws Exception {
    long ttft = Timing.REALISTIC.ttftMillis();
    long itl = Timing.REALISTIC.itlMillis();
    int tokens = Timing.REALISTIC.tokens();
    List<Integer> ports = new ArrayList<>();
    for (String a : args) {
      if (a.startsWith("--ttft-ms=")) {
        ttft = Long.parseLong(a.substring("--ttft-ms=".length()));
      } else if (a.startsWith("--itl-ms=")) {
        itl = Long.parseLong(a.substring("--itl-ms=".length()));
      } else if (a.startsWith("--tokens=")) {
        tokens = Integer.parseInt(a.substring("--tokens=".length()));
      } else if (a.startsWith("-")) {
        throw new IllegalArgumentException("unknown option " + a);
      } else {
        ports.add(Integer.parseInt(a));
      }
    }
    if (ports.isEmpty()) {
      System.err.println(
          "usage: FakeEngine.java [--ttft-ms=N] [--itl-ms=N] [--tokens=N] PORT [PORT...]");
      System.exit(2);
    }
    Timing timing = new Timing(ttft, itl, tokens);
    for (int port : ports) {
      FakeEngine e = new FakeEngine("engine-" + port, Mode.OK, port, timing, timing.tokens());
      System.out.println("fake engine " + e.name + " on " + e.url() + " " + timing);
    }
    Thread.currentThread().join();
  }

  String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  private void handle(HttpExchange ex) throws IOException {
    Mode first = mode;
    if (first == Mode.DIE || first == Mode.HANG) {
      misbehave(ex, first);
      return;
    }
    try (ex) {
      String body = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      bodies.add(body);
      String tp = ex.getRequestHeaders().getFirst("traceparent");
      traceparents.add(tp == null ? "" : tp);
      String rid = ex.getRequestHeaders().getFirst("X-Request-Id");
      requestIds.add(rid == null ? "" : rid);
      requests.incrementAndGet();
      long readAt = System.nanoTime();
      lastAt = readAt;
      Mode m = mode;
      if (m == Mode.FAIL_500) {
        byte[] b = "{\"error\":{\"message\":\"engine exploded\"}}".getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(500, b.length);
        ex.getResponseBody().write(b);
        return;
      }
      boolean stream = body.replace(" ", "").contains("\"stream\":true");
      boolean usage = body.replace(" ", "").contains("\"include_usage\":true");
      Api api = Api.of(ex.getRequestURI().getPath());
      if (!stream && m == Mode.HOLD_JSON) {
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(200, 0);
        OutputStream out = ex.getResponseBody();
        write(out, "{\"id\":\"x\",\"object\":\"chat.completion\",\"model\":\"m\",\"choices\":[");
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        try {
          while (System.nanoTime() < end) {
            sleep(50);
            write(out, " ");
          }
          write(out, "]}");
        } catch (IOException gone) {
          readerGone.countDown();
        }
        return;
      }
      if (!stream) {
        sleep(timing.ttftMillis() + (timing.tokens() - 1) * timing.itlMillis());
        byte[] b = api.body("hi from " + name, completionTokens).getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(200, b.length);
        ex.getResponseBody().write(b);
        return;
      }
      ex.getResponseHeaders().set("Content-Type", "text/event-stream");
      ex.sendResponseHeaders(200, 0);
      OutputStream out = ex.getResponseBody();
      if (m == Mode.SILENT) {
        sleep(3000);
        return;
      }
      String nul = usage ? ",\"usage\":null" : "";
      sleep(timing.ttftMillis());
      write(out, api.start(nul));
      write(out, api.content("hello ", nul));
      long firstAt = System.nanoTime();
      if (m == Mode.FLOOD) {
        String big = "x".repeat(32 * 1024);
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        try {
          while (System.nanoTime() < end) {
            write(out, api.content(big, nul));
          }
          write(out, api.end(nul, completionTokens));
          write(out, api.done());
        } catch (IOException gone) {
          readerGone.countDown();
        }
        return;
      }
      if (m == Mode.HOLD) {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        try {
          while (System.nanoTime() < end) {
            sleep(50);
            out.write(": keep-alive\n\n".getBytes(StandardCharsets.UTF_8));
            out.flush();
          }
        } catch (IOException gone) {
          readerGone.countDown();
        }
        return;
      }
      if (m == Mode.GATED && !await(gate)) {
        gateTimedOut = true;
      }
      for (int t = 2; t < timing.tokens(); t++) {
        sleep(timing.itlMillis());
        write(out, api.content("tok ", nul));
      }
      sleep(timing.itlMillis());
      write(out, api.content("from " + name, nul));
      write(out, api.end(nul, completionTokens));
      if (usage) {
        write(out, api.usageChunk(completionTokens));
      }
      write(out, api.done());
      if (!PROBE.isEmpty()) {
        PROBE_LINES.add(
            ex.getRequestHeaders().getFirst("X-Request-Id")
                + " "
                + readAt
                + " "
                + firstAt
                + " "
                + System.nanoTime());
      }
    } catch (IOException e) {
      readerGone.countDown();
    }
  }

  /**
   * The shape of an answer by endpoint: chat completions ({@code delta.content}), completions
   * ({@code text}) or the Responses API ({@code response.output_text.delta} events and a {@code
   * response.completed} event carrying the usage, no {@code [DONE]}).
   */
  private enum Api {
    CHAT,
    COMPLETIONS,
    RESPONSES;

    static Api of(String path) {
      return path.endsWith("/responses")
          ? RESPONSES
          : path.endsWith("/completions") && !path.endsWith("/chat/completions")
              ? COMPLETIONS
              : CHAT;
    }

    String body(String text, int completionTokens) {
      if (this == RESPONSES) {
        return "{\"id\":\"resp_x\",\"object\":\"response\",\"status\":\"completed\",\"output\":[{"
            + "\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
            + "\"text\":\""
            + text
            + "\"}]}],"
            + responsesUsage(completionTokens)
            + "}";
      }
      String choice =
          this == CHAT
              ? "{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"" + text + "\"}}"
              : "{\"index\":0,\"text\":\"" + text + "\"}";
      return "{\"id\":\"x\",\"object\":\""
          + (this == CHAT ? "chat.completion" : "text_completion")
          + "\",\"model\":\"m\",\"choices\":["
          + choice
          + "],\"usage\":{\"prompt_tokens\":"
          + PROMPT_TOKENS
          + ",\"completion_tokens\":"
          + completionTokens
          + ",\"total_tokens\":"
          + (PROMPT_TOKENS + completionTokens)
          + "}}";
    }

    String start(String nul) {
      return switch (this) {
        case CHAT ->
            data(
                "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]"
                    + nul
                    + "}");
        case COMPLETIONS -> "";
        case RESPONSES ->
            event(
                "response.created",
                "{\"type\":\"response.created\",\"response\":{\"id\":\"resp_x\",\"status\":"
                    + "\"in_progress\"}}");
      };
    }

    String content(String text, String nul) {
      return switch (this) {
        case CHAT ->
            data(
                "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\""
                    + text
                    + "\"}}]"
                    + nul
                    + "}");
        case COMPLETIONS ->
            data("{\"choices\":[{\"index\":0,\"text\":\"" + text + "\"}]" + nul + "}");
        case RESPONSES ->
            event(
                "response.output_text.delta",
                "{\"type\":\"response.output_text.delta\",\"delta\":\"" + text + "\"}");
      };
    }

    String end(String nul, int completionTokens) {
      return switch (this) {
        case CHAT ->
            data(
                "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]" + nul + "}");
        case COMPLETIONS ->
            data(
                "{\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"stop\"}]"
                    + nul
                    + "}");
        case RESPONSES ->
            event(
                "response.completed",
                "{\"type\":\"response.completed\",\"response\":{\"id\":\"resp_x\",\"status\":"
                    + "\"completed\","
                    + responsesUsage(completionTokens)
                    + "}}");
      };
    }

    /** The usage chunk asked with {@code include_usage} (the Responses API has none). */
    String usageChunk(int completionTokens) {
      return this == RESPONSES
          ? ""
          : data(
              "{\"choices\":[],\"usage\":{\"prompt_tokens\":"
                  + PROMPT_TOKENS
                  + ",\"completion_tokens\":"
                  + completionTokens
                  + ",\"total_tokens\":"
                  + (PROMPT_TOKENS + completionTokens)
                  + ",\"prompt_tokens_details\":{\"cached_tokens\":3}}}");
    }

    String done() {
      return this == RESPONSES ? "" : "data: [DONE]\n\n";
    }

    private static String responsesUsage(int completionTokens) {
      return "\"usage\":{\"input_tokens\":"
          + PROMPT_TOKENS
          + ",\"output_tokens\":"
          + completionTokens
          + ",\"total_tokens\":"
          + (PROMPT_TOKENS + completionTokens)
          + ",\"input_tokens_details\":{\"cached_tokens\":3}}";
    }

    private static String data(String json) {
      return "data: " + json + "\n\n";
    }

    private static String event(String type, String json) {
      return "event: " + type + "\ndata: " + json + "\n\n";
    }
  }

  /** Writes and flushes one SSE event (nothing when empty). */
  private static void write(OutputStream out, String event) throws IOException {
    if (!event.isEmpty()) {
      out.write(event.getBytes(StandardCharsets.UTF_8));
      out.flush();
    }
  }

  /**
   * {@link Mode#DIE}: two chunks, then an exception out of the handler, on which the JDK's server
   * closes the connection without the chunked body's end. {@link Mode#HANG}: no answer at all.
   */
  private void misbehave(HttpExchange ex, Mode m) throws IOException {
    bodies.add(new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
    requests.incrementAndGet();
    if (m == Mode.HANG) {
      sleep(5000);
      ex.close();
      return;
    }
    ex.getResponseHeaders().set("Content-Type", "text/event-stream");
    ex.sendResponseHeaders(200, 0);
    OutputStream out = ex.getResponseBody();
    send(out, "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}");
    send(out, "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello \"}}]}");
    sleep(50);
    throw new IllegalStateException("engine died mid-stream");
  }

  private static void send(OutputStream out, String json) throws IOException {
    out.write(("data: " + json + "\n\n").getBytes(StandardCharsets.UTF_8));
    out.flush();
  }

  private static void sleep(long ms) {
    if (ms <= 0) {
      return;
    }
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static boolean await(CountDownLatch l) {
    try {
      return l.await(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  @Override
  public void close() {
    server.stop(0);
    pool.shutdownNow();
  }
}
