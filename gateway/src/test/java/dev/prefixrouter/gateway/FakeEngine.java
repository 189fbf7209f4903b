package dev.prefixrouter.gateway;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An OpenAI-compatible engine on loopback for the end-to-end tests: real HTTP, SSE streamed chunk
 * by chunk with a final usage chunk when asked ({@code stream_options.include_usage}), or a JSON
 * body with usage. Behaviours: {@link Mode#OK}; {@link Mode#GATED} holds the stream after its first
 * content chunk until {@link #gate} opens (at most 5 s); {@link Mode#FAIL_500} answers 500; {@link
 * Mode#SILENT} sends headers and then nothing for 3 s; {@link Mode#HOLD} sends one content chunk
 * and then keeps writing a comment every 50 ms for at most 5 s, recording when the reader is gone;
 * {@link Mode#DIE} sends two chunks and then drops the connection without ending the body; {@link
 * Mode#HANG} reads the request and never answers (at most 5 s). Like OpenAI, a stream asked for
 * usage carries {@code "usage":null} in every chunk before the usage chunk.
 */
final class FakeEngine implements AutoCloseable {
  enum Mode {
    OK,
    GATED,
    FAIL_500,
    SILENT,
    HOLD,
    DIE,
    HANG
  }

  /** Completion tokens the engine reports in its usage (unlike the number of chunks it sends). */
  static final int COMPLETION_TOKENS = 7;

  static final int PROMPT_TOKENS = 11;

  final String name;
  volatile Mode mode;
  final CountDownLatch gate = new CountDownLatch(1);

  /** Set when a {@link Mode#GATED} stream waited 5 s for its gate in vain. */
  volatile boolean gateTimedOut;

  final CountDownLatch readerGone = new CountDownLatch(1);
  final List<String> bodies = new CopyOnWriteArrayList<>();
  final AtomicInteger requests = new AtomicInteger();
  private final HttpServer server;
  private final ExecutorService pool = Executors.newCachedThreadPool();

  FakeEngine(String name, Mode mode) throws IOException {
    this(name, mode, 0);
  }

  FakeEngine(String name, Mode mode, int port) throws IOException {
    this.name = name;
    this.mode = mode;
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 256);
    server.setExecutor(pool);
    server.createContext("/v1/", this::handle);
    server.start();
  }

  /**
   * Runs {@link Mode#OK} engines on the given loopback ports until the process is stopped (JDK
   * only, as a source file): {@code java
   * gateway/src/test/java/dev/prefixrouter/gateway/FakeEngine.java 8001 8002}.
   */
  public static void main(String[] args) throws Exception {
    if (args.length == 0) {
      System.err.println("usage: FakeEngine.java PORT [PORT...]");
      System.exit(2);
    }
    for (String a : args) {
      FakeEngine e = new FakeEngine("engine-" + a, Mode.OK, Integer.parseInt(a));
      System.out.println("fake engine " + e.name + " on " + e.url());
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
      requests.incrementAndGet();
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
      if (!stream) {
        byte[] b =
            ("{\"id\":\"x\",\"object\":\"chat.completion\",\"model\":\"m\",\"choices\":[{\"index\":0,"
                    + "\"message\":{\"role\":\"assistant\",\"content\":\"hi from "
                    + name
                    + "\"}}],\"usage\":{\"prompt_tokens\":"
                    + PROMPT_TOKENS
                    + ",\"completion_tokens\":"
                    + COMPLETION_TOKENS
                    + ",\"total_tokens\":18}}")
                .getBytes(StandardCharsets.UTF_8);
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
      send(
          out,
          "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]"
              + nul
              + "}");
      send(out, "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello \"}}]" + nul + "}");
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
      send(
          out,
          "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"from " + name + "\"}}]" + nul + "}");
      send(out, "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]" + nul + "}");
      if (usage) {
        send(
            out,
            "{\"choices\":[],\"usage\":{\"prompt_tokens\":"
                + PROMPT_TOKENS
                + ",\"completion_tokens\":"
                + COMPLETION_TOKENS
                + ",\"total_tokens\":18,\"prompt_tokens_details\":{\"cached_tokens\":3}}}");
      }
      out.write("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
      out.flush();
    } catch (IOException e) {
      readerGone.countDown();
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
