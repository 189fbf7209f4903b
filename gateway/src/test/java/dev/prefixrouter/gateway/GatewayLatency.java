package dev.prefixrouter.gateway;

import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Added latency of the gateway over a direct call (JDK only, run as a source file): the same
 * streamed chat completion sent {@code perStream} times by each of {@code streams} concurrent
 * clients, first straight to a fake engine, then through the gateway, after a warm-up of each;
 * prints p50/p99 of the time to the first byte and to the end of the stream, and the differences.
 *
 * <pre>{@code
 * java gateway/src/test/java/dev/prefixrouter/gateway/GatewayLatency.java \
 *     http://127.0.0.1:8001 http://127.0.0.1:8080 64 100
 * }</pre>
 */
final class GatewayLatency {
  private GatewayLatency() {}

  public static void main(String[] args) throws Exception {
    String direct = args[0];
    String gateway = args[1];
    int streams = Integer.parseInt(args[2]);
    int perStream = Integer.parseInt(args[3]);
    String body =
        "{\"model\":\"demo\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}";
    HttpClient client =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();
    ExecutorService pool = Executors.newFixedThreadPool(streams);
    try {
      run(client, pool, direct, body, streams, Math.max(1, perStream / 4)); // warm-up
      long[][] d = run(client, pool, direct, body, streams, perStream);
      run(client, pool, gateway, body, streams, Math.max(1, perStream / 4)); // warm-up
      long[][] g = run(client, pool, gateway, body, streams, perStream);
      report("first byte", d[0], g[0]);
      report("whole stream", d[1], g[1]);
    } finally {
      pool.shutdownNow();
    }
  }

  private static long[][] run(
      HttpClient client, ExecutorService pool, String base, String body, int streams, int n)
      throws Exception {
    HttpRequest req =
        HttpRequest.newBuilder(URI.create(base + "/v1/chat/completions"))
            .header("Content-Type", "application/json")
            .timeout(Duration.ofSeconds(30))
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build();
    List<Future<long[][]>> futures = new ArrayList<>();
    for (int s = 0; s < streams; s++) {
      futures.add(
          pool.submit(
              () -> {
                long[] first = new long[n];
                long[] total = new long[n];
                byte[] buf = new byte[8192];
                for (int i = 0; i < n; i++) {
                  long t0 = System.nanoTime();
                  HttpResponse<InputStream> res =
                      client.send(req, HttpResponse.BodyHandlers.ofInputStream());
                  try (InputStream in = res.body()) {
                    if (res.statusCode() != 200) {
                      throw new IllegalStateException(base + " answered " + res.statusCode());
                    }
                    int r = in.read(buf);
                    first[i] = System.nanoTime() - t0;
                    while (r >= 0) {
                      r = in.read(buf);
                    }
                  }
                  total[i] = System.nanoTime() - t0;
                }
                return new long[][] {first, total};
              }));
    }
    long[] first = new long[streams * n];
    long[] total = new long[streams * n];
    int k = 0;
    for (Future<long[][]> f : futures) {
      long[][] r = f.get();
      System.arraycopy(r[0], 0, first, k, n);
      System.arraycopy(r[1], 0, total, k, n);
      k += n;
    }
    return new long[][] {first, total};
  }

  private static void report(String what, long[] direct, long[] gateway) {
    Arrays.sort(direct);
    Arrays.sort(gateway);
    double d50 = ms(direct, 0.50);
    double d99 = ms(direct, 0.99);
    double g50 = ms(gateway, 0.50);
    double g99 = ms(gateway, 0.99);
    System.out.printf(
        "%-12s direct p50 %.3f ms p99 %.3f ms | gateway p50 %.3f ms p99 %.3f ms | added p50 %.3f"
            + " ms p99 %.3f ms (n=%d each)%n",
        what, d50, d99, g50, g99, g50 - d50, g99 - d99, direct.length);
  }

  private static double ms(long[] sorted, double q) {
    int i = (int) Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1);
    return sorted[Math.max(0, i)] / 1e6;
  }
}
