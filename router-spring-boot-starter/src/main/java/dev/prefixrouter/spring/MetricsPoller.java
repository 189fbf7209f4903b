package dev.prefixrouter.spring;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.RoutingEngine;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * Reads each backend's Prometheus {@code /metrics} on an interval and feeds the engine's load
 * reports; sets a backend's KV capacity from {@code cache_config_info} when its descriptor has
 * none. One daemon thread; each scrape has a timeout and a body cap (4 MiB), and a failure is
 * counted per backend and logged at most once a minute per backend — it never reaches routing.
 */
public final class MetricsPoller implements SmartLifecycle {
  private static final Logger log = LoggerFactory.getLogger(MetricsPoller.class);
  private static final int MAX_BODY = 4 << 20;

  /** Scrape outcome counters of one backend. */
  public record Stats(
      long scrapes, long failures, long malformedLines, @Nullable String lastError) {}

  private final RoutingEngine engine;
  private final Function<String, @Nullable String> urlOf;
  private final Duration interval;
  private final Duration timeout;
  private final HttpClient client;
  private final Map<String, Counters> counters = new ConcurrentHashMap<>();
  private @Nullable ScheduledExecutorService executor;

  private static final class Counters {
    final AtomicLong scrapes = new AtomicLong();
    final AtomicLong failures = new AtomicLong();
    final AtomicLong malformed = new AtomicLong();
    volatile @Nullable String lastError;
    volatile long lastWarnNanos = Long.MIN_VALUE;
  }

  /**
   * @param urlOf base URL of a backend id ({@code null}: not polled)
   */
  public MetricsPoller(
      RoutingEngine engine,
      Function<String, @Nullable String> urlOf,
      Duration interval,
      Duration timeout) {
    this.engine = Objects.requireNonNull(engine, "engine");
    this.urlOf = Objects.requireNonNull(urlOf, "urlOf");
    if (interval.toMillis() < 10 || timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException(
          "poller interval must be >= 10 ms and timeout positive, were "
              + interval
              + ", "
              + timeout);
    }
    this.interval = interval;
    this.timeout = timeout;
    this.client = HttpClient.newBuilder().connectTimeout(timeout).build();
  }

  /** Polls every backend once, now, on the caller's thread. */
  public void pollOnce() {
    for (Backend b : engine.backends().all()) {
      String base = urlOf.apply(b.id());
      if (base != null) {
        poll(b, base);
      }
    }
  }

  private void poll(Backend b, String base) {
    Counters c = counters.computeIfAbsent(b.id(), k -> new Counters());
    c.scrapes.incrementAndGet();
    try {
      URI uri = URI.create(base.endsWith("/") ? base + "metrics" : base + "/metrics");
      HttpResponse<byte[]> r =
          client.send(
              HttpRequest.newBuilder(uri).timeout(timeout).GET().build(),
              HttpResponse.BodyHandlers.ofByteArray());
      if (r.statusCode() != 200) {
        throw new IllegalStateException("HTTP " + r.statusCode());
      }
      if (r.body().length > MAX_BODY) {
        throw new IllegalStateException("metrics body over " + MAX_BODY + " bytes");
      }
      PrometheusText.Scrape scrape =
          PrometheusText.parse(new String(r.body(), java.nio.charset.StandardCharsets.UTF_8));
      c.malformed.addAndGet(scrape.malformedLines());
      EngineMetrics m = EngineMetrics.from(scrape);
      if (!m.found()) {
        throw new IllegalStateException("no vLLM or SGLang load metrics in the scrape");
      }
      engine.backends().reportLoad(b.id(), m.toLoadReport());
      if (b.capacityBlocks() == 0 && m.capacityBlocks().isPresent()) {
        long blocks = m.capacityBlocks().getAsLong();
        engine
            .backends()
            .update(
                b.id(), cur -> cur.capacityBlocks() == 0 ? cur.withCapacityBlocks(blocks) : cur);
      }
      c.lastError = null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      c.failures.incrementAndGet();
      c.lastError = e.getClass().getSimpleName() + ": " + e.getMessage();
      long now = System.nanoTime();
      if (c.lastWarnNanos == Long.MIN_VALUE || now - c.lastWarnNanos > 60_000_000_000L) {
        c.lastWarnNanos = now;
        log.warn("scraping {} for backend {} failed: {}", base, b.id(), c.lastError);
      }
    }
  }

  /** Counters per backend id. */
  public Map<String, Stats> stats() {
    Map<String, Stats> out = new java.util.LinkedHashMap<>();
    counters.forEach(
        (id, c) ->
            out.put(
                id, new Stats(c.scrapes.get(), c.failures.get(), c.malformed.get(), c.lastError)));
    return out;
  }

  @Override
  public synchronized void start() {
    if (executor != null) {
      return;
    }
    executor =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "prefix-router-metrics-poller");
              t.setDaemon(true);
              return t;
            });
    executor.scheduleWithFixedDelay(
        this::pollSafely, 0, interval.toMillis(), TimeUnit.MILLISECONDS);
  }

  private void pollSafely() {
    try {
      pollOnce();
    } catch (RuntimeException e) {
      log.warn("metrics poll failed", e);
    }
  }

  @Override
  public synchronized void stop() {
    if (executor != null) {
      executor.shutdownNow();
      executor = null;
    }
  }

  @Override
  public synchronized boolean isRunning() {
    return executor != null;
  }
}
