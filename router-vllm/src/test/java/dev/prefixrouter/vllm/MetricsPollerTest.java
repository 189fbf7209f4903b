package dev.prefixrouter.vllm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.HealthState;
import dev.prefixrouter.api.LoadReport;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.spi.HealthPolicy;
import dev.prefixrouter.api.spi.Scorer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The poller against fake vLLM servers on loopback (real HTTP, no mocks). */
class MetricsPollerTest {
  private static final String LOAD =
      "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 4\n"
          + "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 2\n"
          + "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.5\n";

  private final List<HttpServer> servers = new ArrayList<>();
  private final List<ExecutorService> pools = new ArrayList<>();
  private final List<MetricsPoller> pollers = new ArrayList<>();
  private final CountDownLatch release = new CountDownLatch(1);

  /** A server answering {@code /metrics} with status and body, and {@code /health} with 200. */
  private String serve(int status, String body) throws IOException {
    return serve(ex -> answer(ex, status, body));
  }

  private String serve(Handler metrics) throws IOException {
    HttpServer s = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    ExecutorService pool = Executors.newCachedThreadPool();
    s.setExecutor(pool);
    s.createContext(
        "/metrics",
        ex -> {
          try {
            metrics.handle(ex);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
    s.createContext("/health", ex -> answer(ex, 200, ""));
    s.start();
    servers.add(s);
    pools.add(pool);
    return "http://127.0.0.1:" + s.getAddress().getPort();
  }

  /** A server whose {@code /metrics} answers only when the test ends ({@code /health} at once). */
  private String hungMetrics() throws IOException {
    return serve(
        ex -> {
          release.await(30, TimeUnit.SECONDS);
          answer(ex, 200, LOAD);
        });
  }

  interface Handler {
    void handle(HttpExchange ex) throws IOException, InterruptedException;
  }

  private static void answer(HttpExchange ex, int status, String body) throws IOException {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    ex.sendResponseHeaders(status, b.length == 0 ? -1 : b.length);
    try (OutputStream o = ex.getResponseBody()) {
      o.write(b);
    }
  }

  /** A loopback port nothing listens on. */
  private static String closedPort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return "http://127.0.0.1:" + s.getLocalPort();
    }
  }

  private MetricsPoller.Builder poller(RoutingEngine engine, Map<String, String> urls) {
    Map<String, String> copy = new ConcurrentHashMap<>(urls);
    // generous: a scrape of a fake on loopback that answers must not time out on a loaded host
    return MetricsPoller.builder(engine, copy::get).timeout(Duration.ofSeconds(10));
  }

  private MetricsPoller track(MetricsPoller p) {
    pollers.add(p);
    return p;
  }

  @AfterEach
  void stop() {
    release.countDown();
    pollers.forEach(MetricsPoller::close);
    servers.forEach(s -> s.stop(0));
    pools.forEach(ExecutorService::shutdownNow);
  }

  @Test
  void feedsLoadReportsAndCapacity() throws Exception {
    String url =
        serve(
            200,
            LOAD
                + "garbage line {\n"
                + "vllm:cache_config_info{block_size=\"16\",engine=\"0\",num_gpu_blocks=\"1234\"} 1\n");
    RoutingEngine engine = RoutingEngine.builder().backend(Backend.of("b0", "m")).build();
    MetricsPoller poller = track(poller(engine, Map.of("b0", url)).build());
    poller.pollOnce();
    LoadReport load = engine.inspect().backend("b0").orElseThrow().lastLoad();
    assertThat(load.withAge(Duration.ZERO)).isEqualTo(LoadReport.of(4, 2, 0.5));
    assertThat(engine.backends().get("b0").orElseThrow().capacityBlocks()).isEqualTo(1234);
    MetricsPoller.Stats s = poller.stats().get("b0");
    assertThat(s.scrapes()).isEqualTo(1);
    assertThat(s.failures()).isZero();
    assertThat(s.malformedLines()).isEqualTo(1);
    assertThat(s.lastSuccessAgeMillis()).isGreaterThanOrEqualTo(0);
    assertThat(poller.totals().scrapes()).isEqualTo(1);
  }

  /**
   * The backend's id is removed and added again behind another server (RedisMembershipSync on a URL
   * change) while a scrape of the old server is in flight: the old server's load and capacity were
   * reported to the new registration (capacity 111 stuck, being set only while 0).
   */
  @Test
  void aScrapeThatOutlivesItsRegistrationIsDropped() throws Exception {
    CountDownLatch arrived = new CountDownLatch(1);
    CountDownLatch answer = new CountDownLatch(1);
    String old =
        serve(
            ex -> {
              arrived.countDown();
              answer.await(30, TimeUnit.SECONDS);
              answer(
                  ex,
                  200,
                  "vllm:num_requests_running 30\n"
                      + "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"111\"} 1\n");
            });
    String neu =
        serve(
            200,
            "vllm:num_requests_running 0\nvllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"999\"} 1\n");
    RoutingEngine engine = RoutingEngine.builder().backend(Backend.of("A", "m")).build();
    Map<String, String> urls = new ConcurrentHashMap<>(Map.of("A", old));
    MetricsPoller poller =
        track(MetricsPoller.builder(engine, urls::get).timeout(Duration.ofSeconds(10)).build());
    Thread scrape = new Thread(poller::pollOnce);
    scrape.start();
    assertThat(arrived.await(10, TimeUnit.SECONDS)).as("the old server is asked").isTrue();
    engine.backends().remove("A");
    urls.put("A", neu);
    engine.backends().add(Backend.of("A", "m"));
    answer.countDown();
    scrape.join(30_000);
    assertThat(engine.backends().get("A").orElseThrow().capacityBlocks())
        .as("not the old server's")
        .isZero();
    assertThat(engine.inspect().backend("A").orElseThrow().lastLoad()).isNull();
    poller.pollOnce();
    assertThat(engine.backends().get("A").orElseThrow().capacityBlocks()).isEqualTo(999);
  }

  /**
   * Capacities were taken in the engine's own blocks: vLLM's 1,000 blocks of 64 tokens (FlashMLA)
   * are 4,000 of the router's 16-token blocks (it set 1,000), SGLang's 500,000 pages of one token
   * are 31,250 (it set 500,000).
   */
  @Test
  void capacitiesAreConvertedFromTheEnginesBlocksToTheRoutersBlocks() throws Exception {
    String vllm =
        serve(
            200,
            LOAD
                + "vllm:cache_config_info{block_size=\"64\",engine=\"0\",num_gpu_blocks=\"1000\"} 1\n");
    String sglang =
        serve(
            200,
            "sglang:num_running_reqs{model_name=\"m\"} 1\n"
                + "sglang:cache_config_info{page_size=\"1\",num_pages=\"500000\"} 1\n");
    String pages =
        serve(
            200,
            "sglang:num_running_reqs{model_name=\"m\"} 1\n"
                + "sglang:cache_config_info{page_size=\"32\",num_pages=\"100\"} 1\n");
    RoutingEngine engine =
        RoutingEngine.builder()
            .backend(Backend.of("v", "m"))
            .backend(Backend.of("s", "m"))
            .backend(Backend.of("p", "m"))
            .build();
    track(poller(engine, Map.of("v", vllm, "s", sglang, "p", pages)).build()).pollOnce();
    assertThat(engine.backends().get("v").orElseThrow().capacityBlocks()).isEqualTo(4_000);
    assertThat(engine.backends().get("s").orElseThrow().capacityBlocks()).isEqualTo(31_250);
    assertThat(engine.backends().get("p").orElseThrow().capacityBlocks()).isEqualTo(200);
    RoutingEngine other = RoutingEngine.builder().backend(Backend.of("v", "m")).build();
    track(poller(other, Map.of("v", vllm)).tokensPerBlock(64).build()).pollOnce();
    assertThat(other.backends().get("v").orElseThrow().capacityBlocks())
        .as("at the router's own 64-token blocks")
        .isEqualTo(1_000);
  }

  /**
   * A report was stamped at the scrape's completion (age 0): an answer that took 500 ms passed for
   * a fresh measurement.
   */
  @Test
  void aLoadReportIsAsOldAsItsExchange() throws Exception {
    String url =
        serve(
            ex -> {
              Thread.sleep(500);
              answer(ex, 200, LOAD);
            });
    RoutingEngine engine = RoutingEngine.builder().backend(Backend.of("b0", "m")).build();
    track(poller(engine, Map.of("b0", url)).build()).pollOnce();
    var b0 = engine.inspect().backend("b0").orElseThrow();
    assertThat(b0.lastLoad()).isNotNull();
    assertThat(b0.lastLoad().age()).isGreaterThanOrEqualTo(Duration.ofMillis(500));
    assertThat(b0.loadAgeNanos()).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(500));
  }

  @Test
  void aCapacityTheEngineRejectsLeavesTheDescriptorAndTheScrapeSucceeds() throws Exception {
    String url =
        serve(
            200,
            LOAD
                + "vllm:cache_config_info{block_size=\"16\",engine=\"0\",num_gpu_blocks=\"3000000000\"} 1\n");
    // a part that bounds the capacity as the radix index does (2,147,483,639 blocks)
    Scorer bounded =
        new Scorer() {
          private final Scorer inner = Scorer.leastInFlight();

          @Override
          public String name() {
            return "bounded";
          }

          @Override
          public void score(dev.prefixrouter.api.spi.ScoringContext ctx) {
            inner.score(ctx);
          }

          @Override
          public void updateBackend(int slot, Backend before, Backend after) {
            if (after.capacityBlocks() > Integer.MAX_VALUE - 8) {
              throw new IllegalArgumentException("capacityBlocks too large");
            }
          }
        };
    RoutingEngine engine =
        RoutingEngine.builder().scorer(bounded).backend(Backend.of("b0", "m")).build();
    MetricsPoller poller = track(poller(engine, Map.of("b0", url)).build());
    poller.pollOnce();
    assertThat(engine.inspect().backend("b0").orElseThrow().lastLoad().withAge(Duration.ZERO))
        .isEqualTo(LoadReport.of(4, 2, 0.5));
    assertThat(engine.backends().get("b0").orElseThrow().capacityBlocks()).isZero();
    MetricsPoller.Stats s = poller.stats().get("b0");
    assertThat(s.failures()).isZero();
    assertThat(s.lastError()).isNull();
  }

  @Test
  void failuresAreCountedNeverThrown() throws Exception {
    String url = serve(503, "down");
    RoutingEngine engine =
        RoutingEngine.builder()
            .backend(Backend.of("b0", "m"))
            .backend(Backend.of("b1", "m"))
            .backend(Backend.of("b2", "m"))
            .build();
    MetricsPoller poller =
        track(
            poller(engine, Map.of("b0", url, "b1", closedPort(), "b2", "not a url"))
                .unreachableAfter(Duration.ofHours(1))
                .build());
    poller.pollOnce();
    assertThat(poller.stats().get("b0").failures()).isEqualTo(1);
    assertThat(poller.stats().get("b0").lastError()).contains("HTTP 503");
    assertThat(poller.stats().get("b0").unreachable()).isFalse();
    assertThat(poller.stats().get("b1").failures()).isEqualTo(1);
    assertThat(poller.stats().get("b1").unreachable()).isTrue();
    assertThat(poller.stats().get("b2").failures()).isEqualTo(1);
    assertThat(poller.totals().failures()).isEqualTo(3);
    assertThat(poller.totals().unreachableReports()).isZero(); // not unreachable for an hour yet
    assertThat(engine.inspect().backend("b0").orElseThrow().lastLoad()).isNull();
  }

  @Test
  void aBodyOverTheCapFailsTheScrape() throws Exception {
    String url = serve(200, LOAD + "# " + "x".repeat(2048) + "\n");
    RoutingEngine engine = RoutingEngine.builder().backend(Backend.of("b0", "m")).build();
    MetricsPoller poller = track(poller(engine, Map.of("b0", url)).maxBodyBytes(1024).build());
    poller.pollOnce();
    assertThat(poller.stats().get("b0").lastError()).contains("over 1024 bytes");
    assertThat(engine.inspect().backend("b0").orElseThrow().lastLoad()).isNull();
  }

  @Test
  void aHungBackendDoesNotDelayTheOthers() throws Exception {
    String hung = hungMetrics();
    String fast = serve(200, LOAD);
    RoutingEngine engine =
        RoutingEngine.builder()
            .backend(Backend.of("hung", "m")) // polled first
            .backend(Backend.of("fast", "m"))
            .build();
    MetricsPoller poller =
        track(
            poller(engine, Map.of("hung", hung, "fast", fast))
                .timeout(Duration.ofSeconds(20))
                .interval(Duration.ofMillis(50))
                .build());
    poller.start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15); // the hung scrape: 20 s
    while (poller.stats().getOrDefault("fast", idle()).scrapes() < 3
        && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    // the hung scrape has not ended (its server waits for the latch), yet "fast" was scraped
    // round after round, and "hung" was skipped while its scrape was in flight
    assertThat(engine.inspect().backend("fast").orElseThrow().lastLoad()).isNotNull();
    assertThat(poller.stats().get("fast").scrapes()).isGreaterThanOrEqualTo(3);
    assertThat(poller.stats().get("hung").scrapes()).isEqualTo(1);
    assertThat(poller.stats().get("hung").overruns()).isGreaterThanOrEqualTo(1);
    assertThat(engine.inspect().backend("hung").orElseThrow().lastLoad()).isNull();
  }

  private static MetricsPoller.Stats idle() {
    return new MetricsPoller.Stats(0, 0, 0, 0, 0, 0, false, -1, null);
  }

  @Test
  void aScrapeThatTakesTooLongTimesOut() throws Exception {
    String hung = hungMetrics();
    RoutingEngine engine = RoutingEngine.builder().backend(Backend.of("b0", "m")).build();
    // /metrics never answers; /health, probed next with the same timeout, does: 2 s, not less,
    // so that a stall of the loaded host does not make that answer late too
    MetricsPoller poller =
        track(poller(engine, Map.of("b0", hung)).timeout(Duration.ofSeconds(2)).build());
    poller.pollOnce();
    MetricsPoller.Stats s = poller.stats().get("b0");
    assertThat(s.timeouts()).isEqualTo(1);
    assertThat(s.unreachable()).isFalse(); // /health answered
    assertThat(s.lastError()).contains("no answer within");
  }

  /**
   * A body that trickles in: the timed-out exchange must end, or every round opens another one
   * beside it (the timeout used to complete the future cancel was then called on, so the cancel did
   * nothing).
   */
  @Test
  void aScrapeThatTimesOutIsAbortedNotLeftRunningBesideTheNext() throws Exception {
    AtomicInteger open = new AtomicInteger();
    AtomicInteger most = new AtomicInteger();
    String trickle =
        serve(
            ex -> {
              most.accumulateAndGet(open.incrementAndGet(), Math::max);
              try (OutputStream o = ex.getResponseBody()) {
                ex.sendResponseHeaders(200, 0);
                long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (System.nanoTime() < end && release.getCount() > 0) {
                  o.write('#');
                  o.flush();
                  Thread.sleep(50);
                }
              } catch (IOException gone) {
                // the client aborted the exchange
              } finally {
                open.decrementAndGet();
              }
            });
    RoutingEngine engine = RoutingEngine.builder().backend(Backend.of("b0", "m")).build();
    MetricsPoller poller =
        track(
            poller(engine, Map.of("b0", trickle))
                .timeout(Duration.ofMillis(300))
                .interval(Duration.ofMillis(50))
                .build());
    poller.start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (poller.stats().getOrDefault("b0", idle()).timeouts() < 6
        && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    assertThat(poller.stats().get("b0").timeouts()).isGreaterThanOrEqualTo(6);
    assertThat(most.get()).as("scrapes of b0 open at once").isLessThanOrEqualTo(3);
  }

  @Test
  void aBackendUnreachablePastTheLimitIsReportedToTheHealthPolicy() throws Exception {
    AtomicLong now = new AtomicLong();
    String down = closedPort();
    String up = serve(200, LOAD);
    RoutingEngine engine =
        RoutingEngine.builder()
            .health(new OpensAfter(2))
            .backend(Backend.of("down", "m"))
            .backend(Backend.of("up", "m"))
            .build();
    MetricsPoller poller =
        track(
            poller(engine, Map.of("down", down, "up", up))
                .unreachableAfter(Duration.ofSeconds(10))
                .ticker(now::get)
                .build());
    poller.pollOnce(); // t = 0: unreachable, but not for 10 s yet
    assertThat(poller.stats().get("down").unreachableReports()).isZero();
    now.set(TimeUnit.SECONDS.toNanos(9));
    poller.pollOnce();
    assertThat(poller.stats().get("down").unreachableReports()).isZero();
    now.set(TimeUnit.SECONDS.toNanos(10));
    poller.pollOnce();
    now.set(TimeUnit.SECONDS.toNanos(11));
    poller.pollOnce();
    assertThat(poller.stats().get("down").unreachableReports()).isEqualTo(2);
    assertThat(poller.totals().unreachableBackends()).isEqualTo(1);
    assertThat(engine.inspect().backend("down").orElseThrow().health()).isEqualTo(HealthState.OPEN);
    assertThat(engine.inspect().backend("up").orElseThrow().health()).isEqualTo(HealthState.CLOSED);
    assertThat(poller.totals().maxStalenessMillis()).isEqualTo(11_000);
  }

  @Test
  void followsBackendsAddedAndRemovedAtRuntime() throws Exception {
    String url = serve(200, LOAD);
    RoutingEngine engine = RoutingEngine.builder().backend(Backend.of("b0", "m")).build();
    Map<String, String> urls = new HashMap<>();
    urls.put("b0", url);
    urls.put("b1", url);
    MetricsPoller poller = track(poller(engine, urls).build());
    poller.pollOnce();
    assertThat(poller.stats()).containsOnlyKeys("b0");
    engine.backends().add(Backend.of("b1", "m"));
    poller.pollOnce();
    assertThat(engine.inspect().backend("b1").orElseThrow().lastLoad()).isNotNull();
    engine.backends().remove("b0");
    poller.pollOnce();
    assertThat(poller.stats()).containsOnlyKeys("b1");
    assertThat(poller.totals().scrapes()).isEqualTo(4);
  }

  @Test
  void startsNothingBeforeStartAndStopsOnClose() throws Exception {
    AtomicInteger hits = new AtomicInteger();
    String url =
        serve(
            ex -> {
              hits.incrementAndGet();
              answer(ex, 200, LOAD);
            });
    RoutingEngine engine = RoutingEngine.builder().backend(Backend.of("b0", "m")).build();
    MetricsPoller poller =
        track(poller(engine, Map.of("b0", url)).interval(Duration.ofMillis(20)).build());
    Thread.sleep(100);
    assertThat(hits.get()).isZero();
    assertThat(poller.isRunning()).isFalse();
    poller.start();
    poller.start(); // idempotent
    assertThat(poller.isRunning()).isTrue();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (engine.inspect().backend("b0").orElseThrow().lastLoad() == null
        && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    poller.close();
    poller.close(); // idempotent
    assertThat(poller.isRunning()).isFalse();
    assertThat(engine.inspect().backend("b0").orElseThrow().lastLoad()).isNotNull();
    assertThatThrownBy(poller::pollOnce).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(poller::start).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void builderRejectsOutOfRangeSettings() {
    RoutingEngine engine = RoutingEngine.builder().build();
    MetricsPoller.Builder b = MetricsPoller.builder(engine, id -> null);
    assertThatThrownBy(() -> b.interval(Duration.ofMillis(5)))
        .hasMessageContaining("interval must be in");
    assertThatThrownBy(() -> b.timeout(Duration.ZERO)).hasMessageContaining("timeout must be in");
    assertThatThrownBy(() -> b.unreachableAfter(Duration.ofSeconds(-1)))
        .hasMessageContaining("unreachableAfter must be in");
    assertThatThrownBy(() -> b.maxBodyBytes(10)).hasMessageContaining("maxBodyBytes must be in");
  }

  /** Opens a slot after {@code n} failures; never closes (enough for these tests). */
  static final class OpensAfter implements HealthPolicy {
    private final int n;
    private final Map<Integer, AtomicInteger> failures = new ConcurrentHashMap<>();

    OpensAfter(int n) {
      this.n = n;
    }

    @Override
    public void addBackend(int slot, Backend backend) {
      failures.put(slot, new AtomicInteger());
    }

    @Override
    public void removeBackend(int slot) {
      failures.remove(slot);
    }

    @Override
    public HealthState state(int slot, long nowNanos) {
      AtomicInteger f = failures.get(slot);
      return f != null && f.get() >= n ? HealthState.OPEN : HealthState.CLOSED;
    }

    @Override
    public boolean tryAcquire(int slot, long nowNanos) {
      return state(slot, nowNanos) != HealthState.OPEN;
    }

    @Override
    public void onSuccess(int slot, long nowNanos) {}

    @Override
    public void onFailure(int slot, Failure failure, long nowNanos) {
      AtomicInteger f = failures.get(slot);
      if (f != null) {
        f.incrementAndGet();
      }
    }
  }
}
