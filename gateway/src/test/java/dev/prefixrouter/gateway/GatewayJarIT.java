package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.File;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The runnable jar as the README's "Run the gateway" starts it (run by Failsafe after {@code
 * package}): two fake engines from their source file ({@code java .../FakeEngine.java PORT PORT},
 * paced like serving engines), {@code java -jar target/gateway.jar} with the two backends, and a
 * streamed chat completion through it, read as it comes: the first content arrives long before the
 * stream ends, which ends with {@code [DONE]}. Processes are this test's own, stopped by handle.
 */
class GatewayJarIT {
  private final List<Process> processes = new ArrayList<>();

  @AfterEach
  void stop() throws InterruptedException {
    for (Process p : processes) {
      p.destroy();
    }
    for (Process p : processes) {
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
      }
    }
  }

  @Test
  void theRunnableJarStreamsAChatCompletionFromTwoFakeEngines() throws Exception {
    Path jar = Path.of("target", "gateway.jar");
    assertThat(jar).as("built by package").exists();
    String java = ProcessHandle.current().info().command().orElse("java");
    int[] ports = freePorts(3); // three distinct ports
    int e1 = ports[0];
    int e2 = ports[1];
    int gw = ports[2];
    start(
        "engines",
        java,
        "src/test/java/dev/prefixrouter/gateway/FakeEngine.java",
        Integer.toString(e1),
        Integer.toString(e2));
    start(
        "gateway",
        java,
        "-jar",
        jar.toString(),
        "--server.port=" + gw,
        "--prefix-router.backends[0].id=e1",
        "--prefix-router.backends[0].url=http://127.0.0.1:" + e1,
        "--prefix-router.backends[0].models=demo",
        "--prefix-router.backends[1].id=e2",
        "--prefix-router.backends[1].url=http://127.0.0.1:" + e2,
        "--prefix-router.backends[1].models=demo");
    HttpClient client =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(2))
            .build();
    awaitUp(client, "http://127.0.0.1:" + gw + "/actuator/health");
    awaitUp(client, "http://127.0.0.1:" + e1 + "/v1/models");
    awaitUp(client, "http://127.0.0.1:" + e2 + "/v1/models");

    // one streamed request first, read whole: the measured one is then not the fresh gateway
    // JVM's first, whose class loading and compilation on a loaded host could hold its first chunk
    // back for longer than the margin of the timing check below
    assertThat(client.send(chat(gw), HttpResponse.BodyHandlers.ofString()).body())
        .contains("data: [DONE]");

    long t0 = System.nanoTime();
    HttpResponse<InputStream> res =
        client.send(chat(gw), HttpResponse.BodyHandlers.ofInputStream());
    assertThat(res.statusCode()).isEqualTo(200);
    assertThat(res.headers().firstValue("content-type"))
        .hasValueSatisfying(v -> assertThat(v).startsWith("text/event-stream"));
    assertThat(res.headers().firstValue(PrefixRouterGatewayFilter.BACKEND_HEADER))
        .hasValueSatisfying(v -> assertThat(v).isIn("e1", "e2"));
    long firstContent = 0;
    List<String> lines = new ArrayList<>();
    try (BufferedReader in =
        new BufferedReader(new InputStreamReader(res.body(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = in.readLine()) != null) {
        if (firstContent == 0 && line.contains("\"content\":\"hello \"")) {
          firstContent = System.nanoTime() - t0;
        }
        lines.add(line);
      }
    }
    long total = System.nanoTime() - t0;
    String all = String.join("\n", lines).strip();
    assertThat(all).contains("from engine-").endsWith("data: [DONE]").doesNotContain("usage");
    // 64 tokens 20 ms apart: the first one came through alone, ~1.2 s before the end (a buffered
    // response would show it at the end; 400 ms leaves room for a loaded host)
    assertThat(firstContent).isPositive();
    assertThat(total - firstContent).isGreaterThan(TimeUnit.MILLISECONDS.toNanos(400));
  }

  private void start(String name, String... command) throws IOException {
    File log = Files.createTempFile("gateway-it-" + name, ".log").toFile();
    log.deleteOnExit();
    processes.add(
        new ProcessBuilder(command)
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.to(log))
            .start());
  }

  private void awaitUp(HttpClient client, String url) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while (true) {
      for (Process p : processes) {
        assertThat(p.isAlive()).as("process %s exited", p.info().commandLine()).isTrue();
      }
      try {
        HttpResponse<Void> r =
            client.send(
                HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(5)).build(),
                HttpResponse.BodyHandlers.discarding());
        if (r.statusCode() < 500) {
          return;
        }
      } catch (IOException e) {
        // not listening yet (refused, reset, or no answer within 5 s)
      }
      assertThat(System.nanoTime()).as("%s up within 90 s", url).isLessThan(deadline);
      Thread.sleep(250);
    }
  }

  private static HttpRequest chat(int gw) {
    return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gw + "/v1/chat/completions"))
        .timeout(Duration.ofSeconds(30))
        .header("Content-Type", "application/json")
        .POST(
            HttpRequest.BodyPublishers.ofString(
                "{\"model\": \"demo\", \"stream\": true, \"messages\": [{\"role\": \"user\","
                    + " \"content\": \"hello\"}]}"))
        .build();
  }

  /** {@code n} free ports, distinct: each socket stays bound until all are chosen. */
  private static int[] freePorts(int n) throws IOException {
    List<ServerSocket> open = new ArrayList<>();
    try {
      int[] ports = new int[n];
      for (int i = 0; i < n; i++) {
        ServerSocket s = new ServerSocket(0);
        open.add(s);
        ports[i] = s.getLocalPort();
      }
      return ports;
    } finally {
      for (ServerSocket s : open) {
        s.close();
      }
    }
  }
}
