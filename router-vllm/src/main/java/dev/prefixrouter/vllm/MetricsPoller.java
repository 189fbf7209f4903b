package dev.prefixrouter.vllm;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.RoutingEngine;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads each backend's Prometheus {@code /metrics} (vLLM and SGLang names, see {@link
 * EngineMetrics}) into the engine's load reports, sets a backend's KV capacity from {@code
 * cache_config_info} when its descriptor has none (converted from the engine's blocks or pages to
 * tokens and to the router's blocks of {@link Builder#tokensPerBlock} tokens), and reports a
 * backend that stays unreachable to the engine's health policy.
 *
 * <pre>{@code
 * MetricsPoller poller = MetricsPoller.builder(engine, id -> urls.get(id)).build();
 * poller.start(); // ... poller.close() on shutdown
 * }</pre>
 *
 * <p><b>Backends.</b> Each round polls the engine's current backends ({@code
 * engine.backends().all()}), so backends added or removed at runtime are followed; {@code urlOf}
 * gives a backend's base URL ({@code null}: not polled). Counters of a removed backend are dropped
 * at the next round.
 *
 * <p><b>Parallel, bounded.</b> Every round starts one scrape per backend at once, asynchronously;
 * each scrape has its own timeout and a body cap (default 4 MiB, a larger body fails the scrape
 * without being buffered). A backend whose previous scrape is still running is skipped for the
 * round (counted as an overrun), so at most one scrape per backend is in flight and one hung
 * backend never delays the others.
 *
 * <p><b>Unreachable backends.</b> When {@code /metrics} fails, {@code /health} is tried; a backend
 * answering neither (no HTTP response in time; an HTTP error status still proves it reachable) for
 * longer than {@link Builder#unreachableAfter} gets a {@link Failure.Kind#CONNECT} or {@link
 * Failure.Kind#TIMEOUT} reported to the health policy ({@link
 * dev.prefixrouter.api.BackendRegistry#reportFailure}) once per round until it answers again — a
 * circuit breaker then opens instead of the backend staying routable. Recovery is left to the
 * policy (a half-open breaker's probes).
 *
 * <p><b>Capacity.</b> A capacity the engine refuses (a published {@code num_gpu_blocks} above the
 * prefix index's bound, {@link dev.prefixrouter.api.BackendRegistry#update}'s {@link
 * IllegalArgumentException}) leaves the descriptor as it was and is logged at most once a minute
 * per backend; the scrape still counts as a success (its load report was applied).
 *
 * <p><b>Age.</b> A load report's {@link dev.prefixrouter.api.LoadReport#age() age} is the time
 * since its {@code /metrics} request was sent (the engine measured at some point of the exchange;
 * the oldest is assumed), so a slow answer is not taken as a fresh one.
 *
 * <p><b>Registrations.</b> Each scrape belongs to the backend's registration it started with (its
 * descriptor instance and URL): a scrape that completes after the id was removed and added again
 * (another server behind it), after its URL changed or after any update of its descriptor is
 * dropped, neither reported (load, capacity) nor counted as a failure, so the old server's load,
 * capacity or unreachability never lands on the new registration. (A report racing a change by less
 * than the check itself takes still can; the next round corrects its load.)
 *
 * <p><b>Threads.</b> Nothing starts before {@link #start()} (or {@link #pollOnce()}): then one
 * scheduler thread and an HTTP client whose work runs on a pool of daemon threads (at most about
 * one per backend being scraped). A failure is counted per backend and logged at most once a minute
 * per backend; it never reaches routing. {@link #close()} stops everything. Thread-safe.
 */
public final class MetricsPoller implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(MetricsPoller.class);
  private static final long WARN_EVERY_NANOS = TimeUnit.MINUTES.toNanos(1);

  /**
   * Scrape counters of one backend.
   *
   * @param scrapes scrapes started
   * @param failures scrapes that produced no load report
   * @param timeouts scrapes of those that timed out
   * @param malformedLines exposition lines that could not be parsed (summed over scrapes)
   * @param overruns rounds skipped because the previous scrape was still running
   * @param unreachableReports failures reported to the health policy
   * @param unreachable whether the backend answered neither {@code /metrics} nor {@code /health} at
   *     its last scrape
   * @param lastSuccessAgeMillis time since the last successful scrape, -1 if none yet
   * @param lastError the last failure's reason, null after a success
   */
  public record Stats(
      long scrapes,
      long failures,
      long timeouts,
      long malformedLines,
      long overruns,
      long unreachableReports,
      boolean unreachable,
      long lastSuccessAgeMillis,
      @Nullable String lastError) {}

  /**
   * Counters over every backend polled since the start (removed backends included), for meters.
   *
   * @param scrapes scrapes started
   * @param failures scrapes that produced no load report
   * @param timeouts scrapes of those that timed out
   * @param overruns rounds skipped for a backend whose previous scrape was still running
   * @param unreachableReports failures reported to the health policy
   * @param unreachableBackends backends now unreachable
   * @param maxStalenessMillis the longest time since a current backend's last successful scrape (or
   *     since its first scrape, if none succeeded), 0 with no backend
   */
  public record Totals(
      long scrapes,
      long failures,
      long timeouts,
      long overruns,
      long unreachableReports,
      int unreachableBackends,
      long maxStalenessMillis) {}

  private final RoutingEngine engine;
  private final Function<String, @Nullable String> urlOf;
  private final Duration interval;
  private final Duration timeout;
  private final long unreachableAfterNanos;
  private final int maxBodyBytes;
  private final LongSupplier ticker;
  private final int tokensPerBlock;
  private final Map<String, Target> targets = new ConcurrentHashMap<>();
  private final LongAdder scrapes = new LongAdder();
  private final LongAdder failures = new LongAdder();
  private final LongAdder timeouts = new LongAdder();
  private final LongAdder overruns = new LongAdder();
  private final LongAdder unreachableReports = new LongAdder();
  private final Object lifecycle = new Object();
  private @Nullable ScheduledExecutorService scheduler; // guarded by lifecycle
  private @Nullable ExecutorService httpExecutor; // guarded by lifecycle
  private @Nullable HttpClient client; // guarded by lifecycle
  private boolean closed; // guarded by lifecycle

  /** One polled backend's state; its scrape fields are written by one scrape at a time. */
  private static final class Target {
    final AtomicBoolean inFlight = new AtomicBoolean();
    final LongAdder scrapes = new LongAdder();
    final LongAdder failures = new LongAdder();
    final LongAdder timeouts = new LongAdder();
    final LongAdder malformed = new LongAdder();
    final LongAdder overruns = new LongAdder();
    final LongAdder unreachableReports = new LongAdder();
    final long firstSeen;
    volatile long lastSuccess = Long.MIN_VALUE;
    volatile long lastReached;
    volatile boolean unreachable;
    volatile @Nullable String lastError;
    volatile long lastWarn = Long.MIN_VALUE;

    Target(long now) {
      this.firstSeen = now;
      this.lastReached = now;
    }
  }

  private MetricsPoller(Builder b) {
    this.engine = b.engine;
    this.urlOf = b.urlOf;
    this.interval = b.interval;
    this.timeout = b.timeout;
    this.unreachableAfterNanos = b.unreachableAfter.toNanos();
    this.maxBodyBytes = b.maxBodyBytes;
    this.ticker = b.ticker;
    this.tokensPerBlock = b.tokensPerBlock;
  }

  /**
   * A builder.
   *
   * @param urlOf a backend id's base URL (e.g. {@code http://10.0.0.5:8000}), or {@code null} to
   *     leave it unpolled; called once per backend per round, must be thread-safe and fast
   */
  public static Builder builder(RoutingEngine engine, Function<String, @Nullable String> urlOf) {
    return new Builder(engine, urlOf);
  }

  /** Starts polling every interval on a daemon thread; idempotent. */
  public void start() {
    synchronized (lifecycle) {
      checkOpen();
      if (scheduler != null) {
        return;
      }
      client();
      ScheduledExecutorService s =
          Executors.newSingleThreadScheduledExecutor(daemon("prefix-router-metrics-poller"));
      s.scheduleWithFixedDelay(this::roundSafely, 0, interval.toNanos(), TimeUnit.NANOSECONDS);
      scheduler = s;
    }
  }

  /** Whether {@link #start()} was called and {@link #close()} not yet. */
  public boolean isRunning() {
    synchronized (lifecycle) {
      return scheduler != null;
    }
  }

  /**
   * Polls every backend once, now, and waits for the scrapes it started (at most about twice the
   * timeout: {@code /metrics}, then {@code /health}). A backend whose scrape is still running from
   * a previous round is not waited for.
   */
  public void pollOnce() {
    List<CompletableFuture<Void>> started = round();
    try {
      CompletableFuture.allOf(started.toArray(new CompletableFuture<?>[0]))
          .get(2 * timeout.toMillis() + 1_000, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException e) {
      // every scrape completes normally; a timeout here is already counted by its scrape
    }
  }

  private void roundSafely() {
    try {
      round();
    } catch (RuntimeException e) {
      log.warn("metrics poll round failed", e);
    }
  }

  /** Starts one scrape per polled backend not already being scraped. */
  private List<CompletableFuture<Void>> round() {
    HttpClient c;
    synchronized (lifecycle) {
      checkOpen();
      c = client();
    }
    long now = ticker.getAsLong();
    List<CompletableFuture<Void>> started = new ArrayList<>();
    Set<String> current = new HashSet<>();
    for (Backend b : engine.backends().all()) {
      String base = urlOf.apply(b.id());
      if (base == null) {
        continue;
      }
      current.add(b.id());
      Target t = targets.computeIfAbsent(b.id(), k -> new Target(now));
      if (!t.inFlight.compareAndSet(false, true)) {
        t.overruns.increment();
        overruns.increment();
        continue;
      }
      started.add(scrape(c, b, base, t));
    }
    targets.keySet().retainAll(current);
    return started;
  }

  private CompletableFuture<Void> scrape(HttpClient c, Backend b, String base, Target t) {
    t.scrapes.increment();
    scrapes.increment();
    long sent = ticker.getAsLong();
    CompletableFuture<Void> done;
    try {
      done =
          get(c, url(base, "metrics"), new CappedBody(maxBodyBytes))
              .thenAccept(r -> onMetrics(b, base, t, r, sent))
              .exceptionallyCompose(
                  x -> {
                    if (unwrap(x) instanceof Answered) {
                      onFailure(b, base, t, x, true);
                      return CompletableFuture.completedFuture(null);
                    }
                    return probeHealth(c, base)
                        .thenAccept(reached -> onFailure(b, base, t, x, reached));
                  });
    } catch (RuntimeException x) { // e.g. a URL that is not one
      onFailure(b, base, t, x, false);
      done = CompletableFuture.completedFuture(null);
    }
    return done.whenComplete((v, x) -> t.inFlight.set(false));
  }

  private static String url(String base, String path) {
    return base.endsWith("/") ? base + path : base + "/" + path;
  }

  /** A GET with the scrape timeout on the exchange and on the whole response, body included. */
  private <T> CompletableFuture<HttpResponse<T>> get(
      HttpClient c, String url, HttpResponse.BodySubscriber<T> body) {
    HttpRequest req = HttpRequest.newBuilder(URI.create(url)).timeout(timeout).GET().build();
    CompletableFuture<HttpResponse<T>> f = c.sendAsync(req, info -> body);
    // the timeout completes a copy: had it completed f itself, f.cancel would do nothing and the
    // exchange (a body trickling in) would run on past it, a new scrape beside it every round
    return f.copy()
        .orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS)
        .whenComplete(
            (r, x) -> {
              if (x != null) {
                f.cancel(true); // aborts the exchange if it is still running
              }
            });
  }

  /** Whether {@code /health} gives any HTTP answer in time. */
  private CompletableFuture<Boolean> probeHealth(HttpClient c, String base) {
    try {
      return get(c, url(base, "health"), HttpResponse.BodySubscribers.discarding())
          .handle((r, x) -> x == null);
    } catch (RuntimeException x) {
      return CompletableFuture.completedFuture(false);
    }
  }

  /** The backend answered, but not with load metrics: no need to probe {@code /health}. */
  private static final class Answered extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Answered(String message) {
      super(message, null, false, false);
    }
  }

  private static Throwable unwrap(Throwable x) {
    return x instanceof CompletionException && x.getCause() != null ? x.getCause() : x;
  }

  /**
   * Whether {@code b}, the descriptor a scrape of {@code base} started with, is still the backend's
   * registration: the same descriptor instance (a removal and a new add of the id, e.g. {@code
   * RedisMembershipSync} on a URL change, or any descriptor update, makes a new one) at the same
   * URL. A scrape that outlived its registration describes another server: its load, capacity and
   * failure are dropped.
   */
  private boolean current(Backend b, String base) {
    return engine.backends().get(b.id()).orElse(null) == b && base.equals(urlOf.apply(b.id()));
  }

  private void onMetrics(Backend b, String base, Target t, HttpResponse<byte[]> r, long sent) {
    if (!current(b, base)) {
      return; // another registration now: the next round scrapes it
    }
    long now = ticker.getAsLong();
    t.lastReached = now;
    if (r.statusCode() != 200) {
      throw new Answered("HTTP " + r.statusCode() + " from /metrics");
    }
    PrometheusText.Scrape scrape =
        PrometheusText.parse(new String(r.body(), StandardCharsets.UTF_8));
    t.malformed.add(scrape.malformedLines());
    EngineMetrics m = EngineMetrics.from(scrape);
    if (!m.found()) {
      throw new Answered("no vLLM or SGLang load metrics in the scrape");
    }
    // the engine measured somewhere between the request and its answer: the report is as old as
    // the exchange (the conservative end), not new at its completion
    engine
        .backends()
        .reportLoad(b.id(), m.toLoadReport().withAge(Duration.ofNanos(Math.max(0, now - sent))));
    OptionalLong capacity = m.capacityBlocks(tokensPerBlock);
    if (b.capacityBlocks() == 0 && capacity.isPresent() && capacity.getAsLong() > 0) {
      long blocks = capacity.getAsLong();
      try {
        engine
            .backends()
            .update(
                b.id(),
                cur ->
                    cur == b && cur.capacityBlocks() == 0 ? cur.withCapacityBlocks(blocks) : cur);
      } catch (IllegalArgumentException rejected) {
        // a part of the engine (the prefix index's capacity bound) refuses the published value: the
        // descriptor stays as it was, the load report above stands, the scrape succeeded
        if (warnDue(t, now)) {
          log.warn(
              "backend {} publishes a KV capacity of {} blocks, which the engine rejects: {}",
              b.id(),
              blocks,
              rejected.getMessage());
        }
      }
    }
    t.lastSuccess = now;
    t.lastError = null;
    if (t.unreachable) {
      t.unreachable = false;
      log.info("backend {} answers again", b.id());
    }
  }

  private void onFailure(Backend b, String base, Target t, Throwable x, boolean reached) {
    if (!current(b, base)) {
      return; // the old server's failure must not count against the new registration
    }
    Throwable cause = unwrap(x);
    boolean timedOut = cause instanceof TimeoutException || cause instanceof HttpTimeoutException;
    t.failures.increment();
    failures.increment();
    if (timedOut) {
      t.timeouts.increment();
      timeouts.increment();
    }
    String reason = timedOut ? "no answer within " + timeout : describe(cause);
    t.lastError = reason;
    long now = ticker.getAsLong();
    if (reached) {
      t.lastReached = now;
      if (t.unreachable) {
        t.unreachable = false;
        log.info("backend {} answers /health again", b.id());
      }
    } else {
      t.unreachable = true;
      if (now - t.lastReached >= unreachableAfterNanos) {
        Failure f =
            new Failure(
                timedOut ? Failure.Kind.TIMEOUT : Failure.Kind.CONNECT,
                "/metrics and /health unreachable: " + reason);
        if (engine.backends().reportFailure(b.id(), f)) {
          t.unreachableReports.increment();
          unreachableReports.increment();
        }
      }
    }
    if (warnDue(t, now)) {
      log.warn(
          "scraping {} for backend {} failed{}: {}",
          url(base, "metrics"),
          b.id(),
          reached ? "" : " and /health does not answer",
          reason);
    }
  }

  /**
   * Whether a warning about this backend may be logged now (at most once a minute); if so, notes
   * the time.
   */
  private static boolean warnDue(Target t, long now) {
    if (t.lastWarn == Long.MIN_VALUE || now - t.lastWarn > WARN_EVERY_NANOS) {
      t.lastWarn = now;
      return true;
    }
    return false;
  }

  private static String describe(Throwable x) {
    String m = x.getMessage();
    if (x instanceof Answered) {
      return String.valueOf(m);
    }
    return x.getClass().getSimpleName() + (m == null ? "" : ": " + m);
  }

  /** Counters per polled backend id. */
  public Map<String, Stats> stats() {
    long now = ticker.getAsLong();
    Map<String, Stats> out = new LinkedHashMap<>();
    targets.forEach(
        (id, t) -> {
          long last = t.lastSuccess;
          out.put(
              id,
              new Stats(
                  t.scrapes.sum(),
                  t.failures.sum(),
                  t.timeouts.sum(),
                  t.malformed.sum(),
                  t.overruns.sum(),
                  t.unreachableReports.sum(),
                  t.unreachable,
                  last == Long.MIN_VALUE ? -1 : TimeUnit.NANOSECONDS.toMillis(now - last),
                  t.lastError));
        });
    return out;
  }

  /** Counters over every backend; cost linear in the number of polled backends. */
  public Totals totals() {
    long now = ticker.getAsLong();
    int unreachable = 0;
    long stalest = 0;
    for (Target t : targets.values()) {
      if (t.unreachable) {
        unreachable++;
      }
      long last = t.lastSuccess == Long.MIN_VALUE ? t.firstSeen : t.lastSuccess;
      stalest = Math.max(stalest, now - last);
    }
    return new Totals(
        scrapes.sum(),
        failures.sum(),
        timeouts.sum(),
        overruns.sum(),
        unreachableReports.sum(),
        unreachable,
        TimeUnit.NANOSECONDS.toMillis(stalest));
  }

  /** Stops the scheduler and the HTTP threads; scrapes in flight are abandoned. Idempotent. */
  @Override
  public void close() {
    synchronized (lifecycle) {
      closed = true;
      if (scheduler != null) {
        scheduler.shutdownNow();
        scheduler = null;
      }
      if (httpExecutor != null) {
        httpExecutor.shutdownNow();
        httpExecutor = null;
      }
      client = null;
    }
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("the metrics poller is closed");
    }
  }

  /** The HTTP client, made on first use. Lock held. */
  private HttpClient client() {
    HttpClient c = client;
    if (c == null) {
      ExecutorService e = Executors.newCachedThreadPool(daemon("prefix-router-metrics-http"));
      c =
          HttpClient.newBuilder()
              .version(HttpClient.Version.HTTP_1_1)
              .connectTimeout(timeout)
              .executor(e)
              .build();
      httpExecutor = e;
      client = c;
    }
    return c;
  }

  private static ThreadFactory daemon(String name) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, name + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  /** Collects a body of at most {@code max} bytes; a larger one fails without being kept. */
  private static final class CappedBody implements HttpResponse.BodySubscriber<byte[]> {
    private final int max;
    private final CompletableFuture<byte[]> result = new CompletableFuture<>();
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private Flow.@Nullable Subscription subscription;

    CappedBody(int max) {
      this.max = max;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      subscription = s;
      s.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(List<ByteBuffer> items) {
      if (result.isDone()) {
        return;
      }
      for (ByteBuffer bb : items) {
        if (bb.remaining() > max - out.size()) {
          result.completeExceptionally(new IOException("metrics body over " + max + " bytes"));
          Flow.Subscription s = subscription;
          if (s != null) {
            s.cancel();
          }
          return;
        }
        byte[] chunk = new byte[bb.remaining()];
        bb.get(chunk);
        out.write(chunk, 0, chunk.length);
      }
    }

    @Override
    public void onError(Throwable t) {
      result.completeExceptionally(t);
    }

    @Override
    public void onComplete() {
      result.complete(out.toByteArray());
    }

    @Override
    public CompletableFuture<byte[]> getBody() {
      return result;
    }
  }

  /** Builder for {@link MetricsPoller}; setters validate at once. */
  public static final class Builder {
    private final RoutingEngine engine;
    private final Function<String, @Nullable String> urlOf;
    private Duration interval = Duration.ofSeconds(1);
    private Duration timeout = Duration.ofSeconds(2);
    private Duration unreachableAfter = Duration.ofSeconds(10);
    private int maxBodyBytes = 4 << 20;
    private LongSupplier ticker = System::nanoTime;
    private int tokensPerBlock = 16;

    private Builder(RoutingEngine engine, Function<String, @Nullable String> urlOf) {
      this.engine = Objects.requireNonNull(engine, "engine");
      this.urlOf = Objects.requireNonNull(urlOf, "urlOf");
    }

    /** Time between the end of one round's start and the next, 10 ms .. 1 h (default 1 s). */
    public Builder interval(Duration interval) {
      this.interval = Durations.within("interval", interval, 10, 3_600_000);
      return this;
    }

    /**
     * One request's limit (connect, answer and body), 10 ms .. 60 s (default 2 s); a scrape that
     * also probes {@code /health} may take twice this.
     */
    public Builder timeout(Duration timeout) {
      this.timeout = Durations.within("timeout", timeout, 10, 60_000);
      return this;
    }

    /**
     * How long a backend may answer neither {@code /metrics} nor {@code /health} before each failed
     * round is reported to the health policy, 0 .. 1 h (default 10 s; 0: at the first).
     */
    public Builder unreachableAfter(Duration after) {
      this.unreachableAfter = Durations.within("unreachableAfter", after, 0, 3_600_000);
      return this;
    }

    /** Largest {@code /metrics} body read, 1 KiB .. 64 MiB (default 4 MiB). */
    public Builder maxBodyBytes(int bytes) {
      if (bytes < 1024 || bytes > 64 << 20) {
        throw new IllegalArgumentException(
            "maxBodyBytes must be in [1024, 67108864], was " + bytes);
      }
      this.maxBodyBytes = bytes;
      return this;
    }

    /**
     * Tokens per block of the router's prefix index (its {@code BlockHasher.tokensPerBlock()}), 1
     * .. 1,048,576 (default 16): the capacity an engine publishes in its own blocks or pages is
     * converted to tokens and then to these blocks (a vLLM engine at {@code block_size} 64 with
     * 1,000 blocks holds 4,000 blocks of 16 tokens).
     */
    public Builder tokensPerBlock(int tokens) {
      if (tokens < 1 || tokens > 1 << 20) {
        throw new IllegalArgumentException("tokensPerBlock must be in [1, 1048576], was " + tokens);
      }
      this.tokensPerBlock = tokens;
      return this;
    }

    /** The clock, in nanoseconds (default {@link System#nanoTime()}); for tests. */
    public Builder ticker(LongSupplier ticker) {
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      return this;
    }

    /** A poller that has not started; see {@link MetricsPoller#start()}. */
    public MetricsPoller build() {
      return new MetricsPoller(this);
    }
  }
}
