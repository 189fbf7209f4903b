package dev.prefixrouter.gateway;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Added latency of the gateway over a direct call (JDK only, run as a source file): the same
 * streamed chat completion sent {@code perStream} times in a closed loop by each of {@code streams}
 * concurrent clients, first straight to a fake engine, then through the gateway, after a warm-up of
 * each ({@code warmUp} requests per client, by default {@code perStream / 4}, not counted). Prints,
 * for each side, p50/p99 of the time to the first byte of the body, to the first content token (the
 * first {@code "content":"x} with a non-empty string) and to the end of the stream, with the
 * differences (gateway minus direct, so p99 can be below p50), and the requests per second of the
 * measured run.
 *
 * <p>With a fourth argument, the gateway's process id (Linux only), it also prints the gateway's
 * CPU over its measured run (not its warm-up) per request: the whole process (fields 14 and 15 of
 * {@code /proc/PID/stat}, utime + stime in clock ticks of 10 ms, JIT and GC included) and its
 * Reactor Netty event loops (the first field of {@code /proc/PID/task/TID/schedstat}, ns on CPU, of
 * the threads named {@code reactor-http-epoll-*}), and every live thread group's share (threads
 * that ended during the run are missing from the groups, not from the process figure), and how
 * often per request its event loops were scheduled in and how long they waited for a CPU (fields 3
 * and 2 of {@code schedstat}: wake-ups and run-queue delay). On Linux it prints how busy the whole
 * machine was during each measured run ({@code /proc/stat}).
 *
 * <p>Each request carries an {@code X-Request-Id} ({@code RUN-INDEX}); with {@code -Dprobe=FILE}
 * the tool writes one line per measured request there ({@code d} or {@code g}, the id, its start as
 * {@link System#nanoTime()}, then ns to the first byte, the first token and the end), to be joined
 * with the gateway's {@link LatencyProbe} lines and the fake engine's ({@code -Dfakeengine.probe})
 * by id: the three processes' {@code nanoTime} is the same clock on Linux.
 *
 * <pre>{@code
 * java gateway/src/test/java/dev/prefixrouter/gateway/GatewayLatency.java \
 *     http://127.0.0.1:8001 http://127.0.0.1:8080 64 100 [GATEWAY_PID [WARM_UP]]
 * }</pre>
 *
 * <p>With {@code NAME=URL,NAME=URL,...} in place of the gateway's URL it compares several relays
 * with the direct call in alternating rounds ({@code benchmarks/gateway-baseline.sh}; see {@code
 * compare}).
 */
final class GatewayLatency {
  private GatewayLatency() {}

  /** Clock ticks per second of {@code /proc/PID/stat} (USER_HZ, 100 on Linux x86 and arm64). */
  private static final double USER_HZ = 100;

  public static void main(String[] args) throws Exception {
    String direct = args[0];
    String gateway = args[1];
    int streams = Integer.parseInt(args[2]);
    int perStream = Integer.parseInt(args[3]);
    long pid = args.length > 4 ? Long.parseLong(args[4]) : -1;
    int warm = args.length > 5 ? Integer.parseInt(args[5]) : Math.max(1, perStream / 4);
    String probe = System.getProperty("probe", "");
    String body =
        "{\"model\":\"demo\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}";
    HttpClient client =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();
    ExecutorService pool = Executors.newFixedThreadPool(streams);
    if (gateway.contains("=")) {
      try {
        compare(client, pool, direct, gateway, body, streams, perStream, warm);
      } finally {
        pool.shutdownNow();
      }
      return;
    }
    try {
      run(client, pool, direct, body, streams, warm); // warm-up
      long[] cpuD0 = machineTicks();
      Run d = run(client, pool, direct, body, streams, perStream);
      long[] cpuD1 = machineTicks();
      run(client, pool, gateway, body, streams, warm); // warm-up
      long[] ticks0 = pid > 0 ? processTicks(pid) : new long[2];
      Map<String, Long> threads0 = pid > 0 ? threadNanos(pid) : Map.of();
      long[] cpuG0 = machineTicks();
      Run g = run(client, pool, gateway, body, streams, perStream);
      long[] cpuG1 = machineTicks();
      long[] ticks1 = pid > 0 ? processTicks(pid) : new long[2];
      Map<String, Long> threads1 = pid > 0 ? threadNanos(pid) : Map.of();
      if (!probe.isEmpty()) {
        List<String> lines = new ArrayList<>();
        d.probe(lines, "d");
        g.probe(lines, "g");
        Files.write(Path.of(probe), lines);
      }
      report("first byte", d.first, g.first);
      report("first token", d.token, g.token);
      report("whole stream", d.total, g.total);
      System.out.printf(
          "throughput   direct %.1f req/s | gateway %.1f req/s (%d streams x %d requests)%n",
          d.perSecond(), g.perSecond(), streams, perStream);
      System.out.printf(
          "machine CPU busy (all processes, %d cores): direct run %.0f %%, gateway run %.0f %%%n",
          machineCores(), busy(cpuD0, cpuD1), busy(cpuG0, cpuG1));
      if (pid > 0) {
        int n = g.total.length;
        Map<String, Long> used = new TreeMap<>();
        threads1.forEach((k, v) -> used.put(k, v - threads0.getOrDefault(k, 0L)));
        long loops =
            used.entrySet().stream()
                .filter(e -> e.getKey().startsWith("reactor-http"))
                .mapToLong(Map.Entry::getValue)
                .sum();
        long loopWait =
            used.entrySet().stream()
                .filter(e -> e.getKey().startsWith(WAIT + "reactor-http"))
                .mapToLong(Map.Entry::getValue)
                .sum();
        long loopSlices =
            used.entrySet().stream()
                .filter(e -> e.getKey().startsWith(SLICES + "reactor-http"))
                .mapToLong(Map.Entry::getValue)
                .sum();
        long user = ticks1[0] - ticks0[0];
        long sys = ticks1[1] - ticks0[1];
        System.out.printf(
            "gateway CPU per request: process %.3f ms (user %.3f, system %.3f), event loops %.3f ms"
                + " (%d requests)%n",
            (user + sys) * 1000.0 / USER_HZ / n,
            user * 1000.0 / USER_HZ / n,
            sys * 1000.0 / USER_HZ / n,
            loops / 1e6 / n,
            n);
        System.out.printf(
            "  event loops per request: %.1f times scheduled in, %.3f ms waiting for a CPU"
                + " (schedstat fields 3 and 2)%n",
            loopSlices / (double) n, loopWait / 1e6 / n);
        StringBuilder by = new StringBuilder("  by thread group (live threads, ms per request):");
        used.entrySet().stream()
            .filter(e -> !e.getKey().startsWith(WAIT) && !e.getKey().startsWith(SLICES))
            .sorted(Map.Entry.<String, Long>comparingByValue().reversed())
            .filter(e -> e.getValue() / 1e6 / n >= 0.005)
            .forEach(e -> by.append(String.format(" %s %.3f", e.getKey(), e.getValue() / 1e6 / n)));
        System.out.println(by);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * Compare mode: {@code targets} is {@code NAME=URL,NAME=URL,...} (relays in front of the same
   * engine, the gateway among them). After a warm-up of every side ({@code warm} requests per
   * stream on {@code -DwarmStreams=} streams, then up to {@code -Dsettle=} seconds until the
   * machine is quiet), {@code -Drounds=} (3) rounds each measure the direct call and then every
   * target in turn (the targets' order rotated by one each round, so that none always runs right
   * after the direct call), and print per target the added p50/p99 (target minus that round's
   * direct call) to the first token and to the end of the stream, then the median over the rounds
   * of each figure.
   */
  private static void compare(
      HttpClient client,
      ExecutorService pool,
      String direct,
      String targets,
      String body,
      int streams,
      int perStream,
      int warm)
      throws Exception {
    int rounds = Integer.getInteger("rounds", 3);
    Map<String, String> urls = new java.util.LinkedHashMap<>();
    for (String t : targets.split(",")) {
      int eq = t.indexOf('=');
      urls.put(t.substring(0, eq), t.substring(eq + 1));
    }
    // warm-up: -DwarmStreams= concurrent streams (default: as measured) make the JITs of the sides
    // compile sooner; -Dsettle= seconds (default 0) then let the compilers' queues drain
    int warmStreams = Integer.getInteger("warmStreams", streams);
    ExecutorService warmPool =
        warmStreams > streams ? Executors.newFixedThreadPool(warmStreams) : pool;
    try {
      run(client, warmPool, direct, body, warmStreams, warm);
      for (String url : urls.values()) {
        run(client, warmPool, url, body, warmStreams, warm);
      }
    } finally {
      if (warmPool != pool) {
        warmPool.shutdownNow();
      }
    }
    settle(Integer.getInteger("settle", 0));
    List<String> names = new ArrayList<>(urls.keySet());
    Map<String, List<double[]>> figures = new java.util.LinkedHashMap<>();
    figures.put("direct", new ArrayList<>());
    names.forEach(n -> figures.put(n, new ArrayList<>()));
    for (int r = 0; r < rounds; r++) {
      long[] busy0 = machineTicks();
      Run d = run(client, pool, direct, body, streams, perStream);
      double[] df = figures(d, busy(busy0, machineTicks()));
      figures.get("direct").add(df);
      System.out.printf("round %d %-10s %s%n", r + 1, "direct", describe(df));
      for (int i = 0; i < names.size(); i++) {
        String name = names.get((i + r) % names.size());
        busy0 = machineTicks();
        Run g = run(client, pool, urls.get(name), body, streams, perStream);
        double[] gf = figures(g, busy(busy0, machineTicks()));
        figures.get(name).add(gf);
        System.out.printf("round %d %-10s %s%n", r + 1, name, describe(gf, df));
      }
    }
    System.out.printf(
        "median of %d rounds (%d streams x %d requests each, added = side minus the same round's"
            + " direct call):%n",
        rounds, streams, perStream);
    List<double[]> ds = figures.get("direct");
    figures.forEach(
        (name, runs) -> {
          double[] med = new double[runs.get(0).length];
          double[] added = new double[med.length];
          for (int k = 0; k < med.length; k++) {
            double[] v = new double[runs.size()];
            double[] a = new double[runs.size()];
            for (int r = 0; r < runs.size(); r++) {
              v[r] = runs.get(r)[k];
              a[r] = runs.get(r)[k] - ds.get(r)[k];
            }
            med[k] = median(v);
            added[k] = median(a);
          }
          System.out.printf(
              "  %-10s %s%s%n",
              name,
              describe(med),
              name.equals("direct")
                  ? ""
                  : String.format(
                      " | added token %.2f / %.2f, stream %.2f / %.2f ms",
                      added[0], added[1], added[2], added[3]));
        });
  }

  /**
   * Waits, at most {@code seconds}, until the machine is quiet (under 15 % busy over one second):
   * the sides' JIT compilers finish the warm-up's queue before anything is measured.
   */
  private static void settle(int seconds) throws InterruptedException {
    long t0 = System.nanoTime();
    double busy = 100;
    int waited = 0;
    while (waited < seconds && busy >= 15) {
      long[] a = machineTicks();
      Thread.sleep(1000);
      busy = busy(a, machineTicks());
      waited++;
    }
    System.out.printf(
        "settled after %.0f s (machine %.0f %% busy over the last second)%n",
        (System.nanoTime() - t0) / 1e9, busy);
  }

  /** p50, p99 to the first token, p50, p99 to the end (ms), requests/s, machine busy (%). */
  private static double[] figures(Run run, double busy) {
    long[] token = run.token.clone();
    long[] total = run.total.clone();
    Arrays.sort(token);
    Arrays.sort(total);
    return new double[] {
      ms(token, 0.50), ms(token, 0.99), ms(total, 0.50), ms(total, 0.99), run.perSecond(), busy
    };
  }

  private static String describe(double[] f) {
    return String.format(
        "token p50 %.2f p99 %.2f | stream p50 %.2f p99 %.2f ms | %.1f req/s, machine %.0f %%",
        f[0], f[1], f[2], f[3], f[4], f[5]);
  }

  private static String describe(double[] f, double[] direct) {
    return describe(f)
        + String.format(
            " | added token %.2f / %.2f, stream %.2f / %.2f ms",
            f[0] - direct[0], f[1] - direct[1], f[2] - direct[2], f[3] - direct[3]);
  }

  private static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }

  private record Run(
      long[] first, long[] token, long[] total, long[] starts, String tag, long wallNanos) {
    /** One line per request: id, start (nanoTime), first byte, first token, end (ns after it). */
    void probe(List<String> lines, String side) {
      for (int i = 0; i < starts.length; i++) {
        lines.add(
            side + " " + tag + "-" + i + " " + starts[i] + " " + first[i] + " " + token[i] + " "
                + total[i]);
      }
    }

    double perSecond() {
      return total.length / (wallNanos / 1e9);
    }
  }

  private static Run run(
      HttpClient client, ExecutorService pool, String base, String body, int streams, int n)
      throws Exception {
    String tag = Long.toString(System.nanoTime(), 36);
    long start = System.nanoTime();
    List<Future<long[][]>> futures = new ArrayList<>();
    for (int s = 0; s < streams; s++) {
      int s0 = s;
      futures.add(
          pool.submit(
              () -> {
                long[] starts = new long[n];
                long[] first = new long[n];
                long[] token = new long[n];
                long[] total = new long[n];
                byte[] buf = new byte[8192];
                for (int i = 0; i < n; i++) {
                  // the request id (stream s, request i) keys the probe lines of client, gateway
                  // and engine
                  HttpRequest req =
                      HttpRequest.newBuilder(URI.create(base + "/v1/chat/completions"))
                          .header("Content-Type", "application/json")
                          .header("X-Request-Id", tag + "-" + (s0 * n + i))
                          .timeout(Duration.ofSeconds(60))
                          .POST(HttpRequest.BodyPublishers.ofString(body))
                          .build();
                  long t0 = System.nanoTime();
                  starts[i] = t0;
                  HttpResponse<InputStream> res =
                      client.send(req, HttpResponse.BodyHandlers.ofInputStream());
                  try (InputStream in = res.body()) {
                    if (res.statusCode() != 200) {
                      throw new IllegalStateException(base + " answered " + res.statusCode());
                    }
                    StringBuilder seen = new StringBuilder();
                    int r = in.read(buf);
                    first[i] = System.nanoTime() - t0;
                    while (r >= 0) {
                      if (token[i] == 0 && r > 0) {
                        seen.append(new String(buf, 0, r, StandardCharsets.UTF_8));
                        if (hasContent(seen)) {
                          token[i] = System.nanoTime() - t0;
                        }
                      }
                      r = in.read(buf);
                    }
                  }
                  total[i] = System.nanoTime() - t0;
                  if (token[i] == 0) {
                    throw new IllegalStateException(base + " sent no content token");
                  }
                }
                return new long[][] {first, token, total, starts};
              }));
    }
    long[] first = new long[streams * n];
    long[] token = new long[streams * n];
    long[] total = new long[streams * n];
    long[] starts = new long[streams * n];
    int k = 0;
    for (Future<long[][]> f : futures) {
      long[][] r = f.get();
      System.arraycopy(r[0], 0, first, k, n);
      System.arraycopy(r[1], 0, token, k, n);
      System.arraycopy(r[2], 0, total, k, n);
      System.arraycopy(r[3], 0, starts, k, n);
      k += n;
    }
    return new Run(first, token, total, starts, tag, System.nanoTime() - start);
  }

  /** Whether the stream so far holds a {@code "content":"} followed by a non-empty string. */
  private static boolean hasContent(CharSequence s) {
    String key = "\"content\":\"";
    String all = s.toString();
    for (int i = all.indexOf(key); i >= 0; i = all.indexOf(key, i + 1)) {
      int c = i + key.length();
      if (c < all.length() && all.charAt(c) != '"') {
        return true;
      }
    }
    return false;
  }

  /** Busy and total clock ticks of the whole machine ({@code /proc/stat}'s {@code cpu} line). */
  private static long[] machineTicks() {
    try {
      String[] f = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+");
      long total = 0;
      for (int i = 1; i < f.length && i <= 8; i++) {
        total += Long.parseLong(f[i]);
      }
      long idle = Long.parseLong(f[4]) + Long.parseLong(f[5]); // idle + iowait
      return new long[] {total - idle, total};
    } catch (IOException | RuntimeException e) {
      return new long[] {0, 0}; // not Linux: reported as 0 %
    }
  }

  /** The machine's cores as {@code /proc/stat} lists them (this process may be pinned to fewer). */
  private static long machineCores() {
    try {
      long n = 0;
      for (String line : Files.readAllLines(Path.of("/proc/stat"))) {
        if (line.matches("cpu[0-9]+ .*")) {
          n++;
        }
      }
      return n;
    } catch (IOException e) {
      return Runtime.getRuntime().availableProcessors();
    }
  }

  private static double busy(long[] a, long[] b) {
    long total = b[1] - a[1];
    return total <= 0 ? 0 : 100.0 * (b[0] - a[0]) / total;
  }

  /** utime and stime (fields 14 and 15 of {@code /proc/PID/stat}), clock ticks. */
  private static long[] processTicks(long pid) throws IOException {
    String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
    // fields after the command name (which is in parentheses and may hold spaces)
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return new long[] {Long.parseLong(f[11]), Long.parseLong(f[12])};
  }

  /**
   * CPU time (ns, first field of {@code schedstat}) of the process's live threads, summed by name
   * with trailing digits and dashes removed ({@code reactor-http-epoll-2}, which the kernel cuts to
   * {@code reactor-http-ep}, → {@code reactor-http-ep}).
   */
  private static final String WAIT = "wait:";

  private static final String SLICES = "slices:";

  private static Map<String, Long> threadNanos(long pid) throws IOException {
    Map<String, Long> sum = new HashMap<>();
    try (DirectoryStream<Path> tasks =
        Files.newDirectoryStream(Path.of("/proc/" + pid + "/task"))) {
      for (Path t : tasks) {
        try {
          String name = Files.readString(t.resolve("comm")).strip().replaceAll("[-#0-9 ]+$", "");
          String[] f = Files.readString(t.resolve("schedstat")).strip().split(" ");
          sum.merge(name, Long.parseLong(f[0]), Long::sum);
          sum.merge(WAIT + name, Long.parseLong(f[1]), Long::sum);
          sum.merge(SLICES + name, Long.parseLong(f[2]), Long::sum);
        } catch (IOException gone) {
          // the thread ended between listing and reading
        }
      }
    }
    return sum;
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
