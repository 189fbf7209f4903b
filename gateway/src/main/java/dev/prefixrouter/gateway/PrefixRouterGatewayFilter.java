package dev.prefixrouter.gateway;

import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.Rejected;
import dev.prefixrouter.api.RouteDecision;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.spring.BackendUrls;
import dev.prefixrouter.spring.ReaderProperties;
import dev.prefixrouter.vllm.OpenAiRequest;
import dev.prefixrouter.vllm.OpenAiRequestException;
import dev.prefixrouter.vllm.OpenAiRequestReader;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.cloud.gateway.filter.GatewayFilter;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.cloud.gateway.filter.NettyWriteResponseFilter;
import org.springframework.cloud.gateway.support.ServerWebExchangeUtils;
import org.springframework.core.Ordered;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferFactory;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.core.io.buffer.DefaultDataBufferFactory;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpRequestDecorator;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.http.server.reactive.ServerHttpResponseDecorator;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The Spring Cloud Gateway filter that routes an OpenAI request with the {@link RoutingEngine} and
 * lets the gateway's own Netty routing forward it:
 *
 * <ol>
 *   <li>the tenant comes from the API key (when keys are configured; 401 without a valid one), else
 *       from the tenant header, else the default tenant (the body's {@code user} only when
 *       allowed);
 *   <li>the body is read once, up to the configured size (413 beyond), and parsed by {@link
 *       OpenAiRequestReader} (400 or 413 with the reader's problem as the error code);
 *   <li>the body's top-level {@code kv_transfer_params} is removed (an engine's KV connector
 *       fetches or holds KV blocks by the ids it names, past the tenant's cache salt), and so is
 *       its {@code priority} unless {@code client-priority} is {@code forward} ({@link
 *       ClientFields}); the engine gets the gateway's own {@code X-Request-Id}, unique per request
 *       (vLLM takes it as its request id, and fails a request whose id is already running), while
 *       the client's is echoed back and logged;
 *   <li>a streamed chat or completions request that did not ask for usage gets {@code
 *       stream_options.include_usage} (so the tenant is charged the engine's counts), and the usage
 *       chunk (and {@code "usage":null} members) this adds are removed from what the client gets,
 *       which is then what it would get without the gateway;
 *   <li>{@link RoutingEngine#route} decides (inside the starter's Micrometer observation {@code
 *       prefixrouter.route} when an observation registry exists); a {@link Rejected} is answered as
 *       {@link OpenAiErrors} maps it;
 *   <li>the chosen backend's URL ({@link BackendUrls}) becomes the request URL (by {@link
 *       BackendUrlFilter}); the response passes through chunk by chunk (an event stream is flushed
 *       per chunk) while a {@link ResponseTap} reports the first content line ({@code
 *       firstToken()}) and reads the usage, given to {@code complete(usage)} at the end;
 *   <li>a connect failure, a closed connection, a 5xx status, no response headers in time ({@code
 *       idle-timeout} for a streamed request, {@code response-timeout} otherwise) or an idle
 *       timeout before the first byte reaches the client fails the lease and fails over within the
 *       engine's retry budget (when the budget or the backends run out: the backend's own 5xx is
 *       passed through, a connect failure becomes 502 and a timeout 504); after the first byte, the
 *       lease fails and an event stream ends with an OpenAI error event ({@code server_error}, code
 *       {@code backend_failed} or {@code backend_timeout}) and {@code [DONE]}, while a JSON body is
 *       cut off;
 *   <li>a client that goes away cancels the exchange, which fails the lease as {@code CANCELLED},
 *       and so does one that reads nothing for {@code idle-timeout} while the backend waits on it
 *       (its connection is closed; not counted against the backend); a failover that races the
 *       cancel (made on a timer's or the upstream's thread) is not sent and its lease fails as
 *       {@code CANCELLED} too, charged nothing.
 * </ol>
 *
 * <p>Ordered just before {@link NettyWriteResponseFilter} so that its response decorator is the one
 * the write goes through. Thread-safe and shared by every request; the per-request state lives in
 * the exchange's pipeline.
 */
public final class PrefixRouterGatewayFilter implements GatewayFilter, Ordered {
  /** Order: right before {@link NettyWriteResponseFilter}. */
  public static final int ORDER = NettyWriteResponseFilter.WRITE_RESPONSE_FILTER_ORDER - 1;

  /** Response header naming the backend that served (or last tried) the request. */
  public static final String BACKEND_HEADER = "X-Prefix-Router-Backend";

  /**
   * Request and response header carrying the request id: the client's when valid (echoed back and
   * logged as {@code request_id}), else a new one; upstream, always a new one per request (logged
   * as {@code upstream_request_id}).
   */
  public static final String REQUEST_ID_HEADER = "X-Request-Id";

  /** Exchange attribute holding the chosen backend's base URL, for {@link BackendUrlFilter}. */
  static final String TARGET_ATTR = PrefixRouterGatewayFilter.class.getName() + ".target";

  private static final Logger LOG = LoggerFactory.getLogger(PrefixRouterGatewayFilter.class);

  private static final int MAX_REQUEST_ID = 128;

  private final RoutingEngine engine;
  private final OpenAiRequestReader reader;
  private final BackendUrls urls;
  private final ApiKeys keys;
  private final GatewayMetrics metrics;
  private final String tenantHeader;
  private final boolean tenantFromUser;
  private final String defaultTenant;
  private final int maxBodyBytes;
  private final Duration idleTimeout;
  private final Duration responseTimeout;
  private final Duration bodyTimeout;
  private final boolean includeUsage;
  private final boolean tenantCacheSalt;
  private final boolean stripPriority;

  /**
   * @throws IllegalArgumentException if a property is out of range (the message names it)
   */
  public PrefixRouterGatewayFilter(
      RoutingEngine engine,
      BackendUrls urls,
      ApiKeys keys,
      PrefixRouterGatewayProperties p,
      GatewayMetrics metrics) {
    this(engine, urls, keys, p, metrics, null);
  }

  /**
   * As above, with the starter's {@code prefix-router.reader.*} properties (or null for their
   * defaults): the output reservation ({@code default-max-output-tokens}, {@code
   * max-reserved-output-tokens}) applies to the gateway's requests too; the body size and the
   * default tenant are the gateway's own ({@code prefix-router.gateway.*}).
   */
  public PrefixRouterGatewayFilter(
      RoutingEngine engine,
      BackendUrls urls,
      ApiKeys keys,
      PrefixRouterGatewayProperties p,
      GatewayMetrics metrics,
      @Nullable ReaderProperties readerProperties) {
    this(engine, urls, keys, p, metrics, readerProperties, false);
  }

  /**
   * As above; with {@code tenantCacheSalt} (the auto-configuration passes {@code
   * prefix-router.prefix-isolation}) every forwarded request's {@code cache_salt} is bound to its
   * tenant ({@link TenantCacheSalt}), and the request is routed with that salt, so that the engines
   * keep tenants' cached blocks apart as the router's keys do.
   */
  public PrefixRouterGatewayFilter(
      RoutingEngine engine,
      BackendUrls urls,
      ApiKeys keys,
      PrefixRouterGatewayProperties p,
      GatewayMetrics metrics,
      @Nullable ReaderProperties readerProperties,
      boolean tenantCacheSalt) {
    this.tenantCacheSalt = tenantCacheSalt;
    this.engine = Objects.requireNonNull(engine, "engine");
    this.urls = Objects.requireNonNull(urls, "urls");
    this.keys = Objects.requireNonNull(keys, "keys");
    this.metrics = Objects.requireNonNull(metrics, "metrics");
    long max = p.getMaxBodySize().toBytes();
    if (max < 1024 || max > (1 << 30)) {
      throw new IllegalArgumentException(
          "prefix-router.gateway.max-body-size must be 1KB..1GB, was " + p.getMaxBodySize());
    }
    this.maxBodyBytes = (int) max;
    this.idleTimeout = positive(p.getIdleTimeout(), "idle-timeout");
    this.responseTimeout = positive(p.getResponseTimeout(), "response-timeout");
    this.bodyTimeout = positive(p.getBodyTimeout(), "body-timeout");
    this.tenantHeader = p.getTenantHeader().strip();
    this.tenantFromUser = p.isTenantFromUser();
    this.defaultTenant = p.getDefaultTenant();
    this.includeUsage = p.isIncludeUsage();
    this.stripPriority =
        p.getClientPriority() != PrefixRouterGatewayProperties.ClientPriority.FORWARD;
    OpenAiRequestReader.Builder rb =
        OpenAiRequestReader.builder()
            .maxBodyBytes(maxBodyBytes)
            .defaultTenant(p.getDefaultTenant());
    if (readerProperties != null) {
      rb.defaultMaxOutputTokens(readerProperties.getDefaultMaxOutputTokens())
          .maxReservedOutputTokens(readerProperties.getMaxReservedOutputTokens());
    }
    this.reader = rb.build();
  }

  @Override
  public int getOrder() {
    return ORDER;
  }

  @Override
  public Mono<Void> filter(ServerWebExchange exchange, GatewayFilterChain chain) {
    long start = System.nanoTime();
    ServerHttpRequest request = exchange.getRequest();
    ServerHttpResponse response = exchange.getResponse();
    String clientId = clientRequestId(request.getHeaders().getFirst(REQUEST_ID_HEADER));
    // the engine takes the X-Request-Id it gets as its own request id, which must be unique: a
    // client's is echoed back and logged, never sent upstream
    String upstreamId = newRequestId();
    String requestId = clientId != null ? clientId : upstreamId;
    String traceId = Trace.traceId(request.getHeaders().getFirst(Trace.TRACEPARENT));
    response.getHeaders().set(REQUEST_ID_HEADER, requestId);
    String tenant;
    if (keys.enabled()) {
      tenant = keys.tenant(request.getHeaders().getFirst(HttpHeaders.AUTHORIZATION));
      if (tenant == null) {
        metrics.refused("unauthorized");
        return OpenAiErrors.write(
            response,
            401,
            "invalid_request_error",
            "invalid_api_key",
            null,
            "missing or unknown API key (Authorization: Bearer <key>)");
      }
    } else {
      String h = tenantHeader.isEmpty() ? null : request.getHeaders().getFirst(tenantHeader);
      tenant = h != null && !h.isBlank() ? h : tenantFromUser ? null : defaultTenant;
    }
    Call call = new Call(exchange, requestId, upstreamId, traceId, start);
    if (call.probe != null) {
      exchange.getAttributes().put(LatencyProbe.ATTR, call.probe);
    }
    return DataBufferUtils.join(request.getBody(), maxBodyBytes)
        .map(
            b -> {
              byte[] bytes = new byte[b.readableByteCount()];
              b.read(bytes);
              DataBufferUtils.release(b);
              return bytes;
            })
        .defaultIfEmpty(new byte[0])
        .map(Body::new)
        .timeout(bodyTimeout, Mono.just(Body.TOO_SLOW))
        .onErrorResume(DataBufferLimitException.class, e -> Mono.just(Body.TOO_LARGE))
        .flatMap(body -> route(call, chain, body, tenant))
        .doOnCancel(call::cancelled);
  }

  private static Duration positive(Duration d, String property) {
    if (d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException(
          "prefix-router.gateway." + property + " must be positive, was " + d);
    }
    return d;
  }

  private record Body(byte @Nullable [] bytes) {
    static final Body TOO_LARGE = new Body(null);
    static final Body TOO_SLOW = new Body(null);
  }

  private Mono<Void> route(
      Call call, GatewayFilterChain chain, Body body, @Nullable String tenant) {
    ServerHttpResponse response = call.exchange.getResponse();
    if (body == Body.TOO_SLOW) {
      metrics.refused("body_timeout");
      return OpenAiErrors.write(
          response,
          408,
          "invalid_request_error",
          "body_timeout",
          null,
          "the request body did not arrive within " + bodyTimeout);
    }
    if (body.bytes() == null) {
      metrics.refused("too_large");
      return OpenAiErrors.write(
          response,
          413,
          "invalid_request_error",
          "too_large",
          null,
          "body exceeds the limit of " + maxBodyBytes + " bytes");
    }
    LatencyProbe.mark(call.probe, LatencyProbe.Stage.BODY_READ);
    OpenAiRequest parsed;
    try {
      parsed = reader.read(body.bytes(), tenant);
    } catch (OpenAiRequestException e) {
      metrics.refused("bad_request");
      int status = e.problem() == OpenAiRequestException.Problem.TOO_LARGE ? 413 : 400;
      return OpenAiErrors.write(
          response,
          status,
          "invalid_request_error",
          e.problem().name().toLowerCase(Locale.ROOT),
          e.field(),
          e.getMessage());
    }
    RouteRequest request = parsed.routeRequest();
    byte[] salted =
        ClientFields.without(
            body.bytes(), parsed.hasKvTransferParams(), stripPriority && parsed.hasPriority());
    if (tenantCacheSalt) {
      String salt = TenantCacheSalt.salt(request.tenant(), request.cacheSalt());
      request = request.toBuilder().cacheSalt(salt).build();
      salted = TenantCacheSalt.withSalt(salted, salt);
    }
    byte[] forward = includeUsage ? StreamOptions.withIncludeUsage(salted, parsed) : salted;
    call.parsed = parsed;
    call.usageInjected = forward != salted;
    call.forward = forwardRequest(call, forward);
    RouteDecision d = engine.route(request);
    LatencyProbe.mark(call.probe, LatencyProbe.Stage.ROUTED);
    if (d instanceof Rejected r) {
      metrics.rejected(r);
      call.log("rejected", OpenAiErrors.status(r), null);
      return OpenAiErrors.rejected(response, r, "");
    }
    return attempt(call, chain, (Routed) d);
  }

  private Mono<Void> attempt(Call call, GatewayFilterChain chain, Routed routed) {
    ServerWebExchange exchange = call.exchange;
    call.current = routed;
    if (call.leftBefore(routed)) {
      return Mono.empty(); // a failover raced the client's cancel: nothing is sent
    }
    String url = urls.get(routed.backendId());
    URI base =
        url == null
            ? null
            : URI.create(url.endsWith("/") ? url.substring(0, url.length() - 1) : url);
    if (base == null) {
      routed.lease().fail(new Failure(Failure.Kind.CONNECT, "no URL for the backend"));
      return failover(call, chain, routed, "has no URL", 502);
    }
    exchange.getAttributes().put(TARGET_ATTR, base);
    exchange.getResponse().getHeaders().set(BACKEND_HEADER, routed.backendId());
    Attempt a = new Attempt(call, routed);
    call.attempt = a;
    ServerWebExchange ax =
        exchange
            .mutate()
            .request(call.forward)
            .response(a.new TapResponse(exchange.getResponse()))
            .build();
    OpenAiRequest parsed = Objects.requireNonNull(call.parsed);
    Duration headerTimeout = parsed.stream() ? idleTimeout : responseTimeout;
    // no response headers in time: a TimeoutException, failed over like a connect failure
    Mono<Long> noHeaders =
        Mono.delay(headerTimeout).flatMap(x -> a.headersSeen ? Mono.never() : Mono.just(x));
    Mono<Void> forwarded = chain.filter(ax);
    if (call.probe != null) {
      long[] probe = call.probe;
      forwarded = forwarded.contextWrite(c -> c.put(LatencyProbe.ATTR, probe));
    }
    return forwarded
        .timeout(noHeaders)
        .then(Mono.<Void>fromRunnable(a::finish))
        .onErrorResume(e -> afterError(call, chain, a, e));
  }

  private Mono<Void> afterError(Call call, GatewayFilterChain chain, Attempt a, Throwable e) {
    Routed routed = a.routed;
    if (e == FailoverSignal.INSTANCE && a.next != null) {
      ServerWebExchangeUtils.reset(call.exchange);
      metrics.failover(routed.resolvedModel());
      return attempt(call, chain, a.next);
    }
    if (e instanceof IdleTimeout.ClientStalledException) {
      // the client stopped reading, and its backpressure held the backend's chunks back: the
      // lease ended as if it had gone (Attempt.clientStalled)
      call.cancelled();
      return Mono.error(e);
    }
    Failure f = classify(e);
    routed.lease().fail(f, used(routed, a.tap));
    if (call.gone) {
      // the client left while this error came (a timer's timeout races its cancel): no failover
      call.countCancelled(routed);
      return Mono.empty();
    }
    if (a.tap != null && a.tap.bytesSeen()) {
      call.log("failed_midstream", 0, f);
      metrics.request(routed.resolvedModel(), "failed", call.elapsedNanos());
      return Mono.error(e);
    }
    if (f.kind() == Failure.Kind.CONNECT
        || f.kind() == Failure.Kind.TIMEOUT
        || f.kind() == Failure.Kind.SERVER_ERROR) {
      ServerWebExchangeUtils.reset(call.exchange);
      return failover(
          call, chain, routed, f.detail(), f.kind() == Failure.Kind.TIMEOUT ? 504 : 502);
    }
    call.log("failed", 0, f);
    metrics.request(routed.resolvedModel(), "failed", call.elapsedNanos());
    return Mono.error(e);
  }

  private Mono<Void> failover(
      Call call, GatewayFilterChain chain, Routed failed, String why, int status) {
    RouteDecision next = failed.lease().failover();
    if (next instanceof Routed r) {
      metrics.failover(failed.resolvedModel());
      return attempt(call, chain, r);
    }
    Rejected rej = (Rejected) next;
    metrics.request(failed.resolvedModel(), "failed", call.elapsedNanos());
    call.log("failed", status, null);
    return OpenAiErrors.write(
        call.exchange.getResponse(),
        status,
        "server_error",
        status == 504 ? "backend_timeout" : "backend_failed",
        null,
        "backend '" + failed.backendId() + "' " + why + "; no failover: " + rej.message());
  }

  static Failure classify(Throwable e) {
    if (e instanceof IdleTimeout.ClientStalledException) {
      return new Failure(Failure.Kind.CANCELLED, "client stalled: " + e.getMessage());
    }
    if (e instanceof TimeoutException) {
      return new Failure(Failure.Kind.TIMEOUT, "timed out: " + e.getMessage());
    }
    if (e instanceof ResponseStatusException s && s.getStatusCode().value() == 504) {
      return new Failure(Failure.Kind.TIMEOUT, "no response in time");
    }
    if (e instanceof ConnectException || e instanceof UnknownHostException) {
      return new Failure(Failure.Kind.CONNECT, "connect failed: " + e.getMessage());
    }
    if (e instanceof IOException) {
      return new Failure(Failure.Kind.SERVER_ERROR, "connection failed: " + e.getMessage());
    }
    return new Failure(Failure.Kind.ENGINE_ERROR, String.valueOf(e));
  }

  private ServerHttpRequest forwardRequest(Call call, byte[] body) {
    ServerHttpRequest original = call.exchange.getRequest();
    HttpHeaders headers = new HttpHeaders();
    headers.putAll(original.getHeaders());
    headers.setContentLength(body.length);
    headers.remove(HttpHeaders.TRANSFER_ENCODING);
    headers.set(REQUEST_ID_HEADER, call.upstreamRequestId);
    headers.set(Trace.TRACEPARENT, Trace.traceparent(call.traceId));
    if (keys.enabled()) {
      headers.remove(HttpHeaders.AUTHORIZATION); // the gateway's key is not the backend's
    }
    return new ServerHttpRequestDecorator(original) {
      @Override
      public HttpHeaders getHeaders() {
        return headers;
      }

      @Override
      public Flux<DataBuffer> getBody() {
        return Flux.defer(
            () -> {
              LatencyProbe.mark(call.probe, LatencyProbe.Stage.UPSTREAM_WRITE);
              return Flux.just(DefaultDataBufferFactory.sharedInstance.wrap(body));
            });
      }
    };
  }

  /** The client's request id if it is one (1..128 visible ASCII chars), else null. */
  private static @Nullable String clientRequestId(@Nullable String given) {
    if (given != null && !given.isEmpty() && given.length() <= MAX_REQUEST_ID) {
      for (int i = 0; i < given.length(); i++) {
        char c = given.charAt(i);
        if (c <= 0x20 || c >= 0x7f) {
          return null;
        }
      }
      return given;
    }
    return null;
  }

  /** A new request id: 128 random bits, 32 hex digits. */
  private static String newRequestId() {
    return Trace.hex(ThreadLocalRandom.current().nextLong())
        + Trace.hex(ThreadLocalRandom.current().nextLong());
  }

  /** Signals, without a stack trace, that an attempt's 5xx is failed over. */
  private static final class FailoverSignal extends RuntimeException {
    private static final long serialVersionUID = 1L;
    static final FailoverSignal INSTANCE = new FailoverSignal();

    private FailoverSignal() {
      super("fail over", null, false, false);
    }
  }

  /**
   * What the backend produced for {@code routed}, as the response tap saw it: the engine's usage;
   * without one, the prompt as routed and one token per streamed event; the reserved output when a
   * JSON body was longer than the tap keeps and had no readable top-level usage object (so that a
   * large answer is never charged as none; the request's log line then says {@code usage_lost}).
   */
  static Usage used(Routed routed, @Nullable ResponseTap tap) {
    Usage u = tap == null ? null : tap.usage();
    if (u != null) {
      return u;
    }
    if (tap != null && tap.usageLost()) {
      return reserved(routed);
    }
    return Usage.of(routed.promptTokens(), tap == null ? 0 : Math.max(0, tap.dataEvents()));
  }

  /**
   * What a JSON answer that the client left after its first byte is charged: the engine's usage
   * when the tap has read it, else the reserved output. An engine sends a non-streamed answer only
   * once it has generated all of it, and its usage comes at the body's end, which the gateway does
   * not read once the client is gone; the events counted for a stream are none here, so {@link
   * #used} would charge no output at all.
   */
  static Usage usedByLeftJson(Routed routed, ResponseTap tap) {
    Usage u = tap.usage();
    return u != null ? u : reserved(routed);
  }

  /** The prompt as routed and the output reserved for the request. */
  private static Usage reserved(Routed routed) {
    return Usage.of(routed.promptTokens(), routed.request().maxOutputTokens());
  }

  /** One client request across its attempts. */
  private final class Call {
    final ServerWebExchange exchange;
    final String requestId;

    /** The id the engines get: the gateway's own, unique per request (see {@link #filter}). */
    final String upstreamRequestId;

    final String traceId;
    final long startNanos;
    @Nullable OpenAiRequest parsed;
    @Nullable ServerHttpRequest forward;
    boolean usageInjected;
    volatile @Nullable Routed current;
    volatile @Nullable Attempt attempt;

    /**
     * Set first thing when the client goes away. A lease made after it (a failover on a timer's or
     * the upstream's thread, which a cancel does not stop) is failed by its maker ({@link
     * #leftBefore}): volatile on both sides, so the cancel sees the new lease or its maker sees the
     * flag.
     */
    volatile boolean gone;

    /** Whether the request was counted and logged as cancelled. */
    final java.util.concurrent.atomic.AtomicBoolean cancelSeen =
        new java.util.concurrent.atomic.AtomicBoolean();

    /** Whether the lease was charged its reservation for want of the engine's usage. */
    boolean reservationCharged;

    /** {@link LatencyProbe} timestamps, null when the probe is off. */
    final long @Nullable [] probe = LatencyProbe.start();

    Call(
        ServerWebExchange exchange,
        String requestId,
        String upstreamRequestId,
        String traceId,
        long startNanos) {
      this.exchange = exchange;
      this.requestId = requestId;
      this.upstreamRequestId = upstreamRequestId;
      this.traceId = traceId;
      this.startNanos = startNanos;
      LatencyProbe.mark(probe, LatencyProbe.Stage.RECEIVED);
    }

    long elapsedNanos() {
      return System.nanoTime() - startNanos;
    }

    void cancelled() {
      gone = true;
      Routed r = current;
      // both the exchange's cancel and the response's end without its body call this, at times
      // at once: the lease ends once (its own CAS) and the request is counted once
      if (r != null && !r.lease().isEnded()) {
        Attempt a = attempt;
        ResponseTap t = a != null && a.routed == r ? a.tap : null;
        if (t != null && !t.isStream() && t.bytesSeen()) {
          // a JSON answer starts only once it is generated: the backend's work is done, so the
          // lease completes and is charged the answer, its usage if read, else its reservation (a
          // stream's lease is charged what was streamed below)
          Usage u = usedByLeftJson(r, t);
          reservationCharged = t.usage() == null;
          r.lease().complete(u);
        } else if (a == null || a.routed != r) {
          r.lease().fail(Failure.of(Failure.Kind.CANCELLED)); // not sent yet: nothing charged
        } else {
          r.lease().fail(Failure.of(Failure.Kind.CANCELLED), used(r, t));
        }
        countCancelled(r);
      }
      // a failover lease made for a 5xx and not attempted yet: its attempt may never come
      Attempt a = attempt;
      Routed n = a == null ? null : a.next;
      if (n != null && n != r && !n.lease().isEnded()) {
        n.lease().fail(Failure.of(Failure.Kind.CANCELLED)); // not sent: nothing charged
        countCancelled(n);
      }
    }

    /**
     * Called by whoever made {@code r} the call's next lease, after publishing it: if the client
     * has gone, {@code r} is failed as {@code CANCELLED} (never sent, so nothing is charged), the
     * request counted as cancelled, and true returned; else false.
     */
    boolean leftBefore(Routed r) {
      if (!gone) {
        return false;
      }
      r.lease().fail(Failure.of(Failure.Kind.CANCELLED));
      countCancelled(r);
      return true;
    }

    /** Counts and logs the request as cancelled, once. */
    void countCancelled(Routed r) {
      if (cancelSeen.compareAndSet(false, true)) {
        metrics.request(r.resolvedModel(), "cancelled", elapsedNanos());
        log("cancelled", 0, null);
      }
    }

    void log(String outcome, int status, @Nullable Failure failure) {
      if (!LOG.isInfoEnabled()) {
        return;
      }
      Routed r = current;
      OpenAiRequest p = parsed;
      var e =
          LOG.atInfo()
              .setMessage("request {}")
              .addArgument(outcome)
              .addKeyValue("request_id", requestId)
              .addKeyValue("upstream_request_id", upstreamRequestId)
              .addKeyValue("trace_id", traceId)
              .addKeyValue("outcome", outcome)
              .addKeyValue("duration_ms", elapsedNanos() / 1_000_000);
      if (status > 0) {
        e = e.addKeyValue("status", status);
      }
      if (p != null) {
        e =
            e.addKeyValue("tenant", p.routeRequest().tenant())
                .addKeyValue("endpoint", p.endpoint().name().toLowerCase(Locale.ROOT))
                .addKeyValue("stream", p.stream());
      }
      if (r != null) {
        e =
            e.addKeyValue("model", r.resolvedModel())
                .addKeyValue("backend", r.backendId())
                .addKeyValue("attempt", r.attempt())
                .addKeyValue("prompt_tokens", r.promptTokens())
                // the index's match, as prefixrouter.matched.ratio: not a scorer's discount
                .addKeyValue("matched_tokens", r.indexMatchedTokens());
      }
      if (failure != null) {
        e = e.addKeyValue("failure", failure.kind().name()).addKeyValue("detail", failure.detail());
      }
      Attempt a = attempt;
      ResponseTap t = a == null ? null : a.tap;
      if (reservationCharged || (t != null && t.usageLost())) {
        e = e.addKeyValue("usage_lost", true); // charged the reservation, not the engine's count
      }
      e.log();
    }
  }

  /** One backend attempt of a call. */
  private final class Attempt {
    final Call call;
    final Routed routed;
    @Nullable ResponseTap tap;

    /** The failover lease for a 5xx, made on the upstream's thread; volatile for {@link Call}. */
    volatile @Nullable Routed next;

    /** Whether the backend's body was read to its end (not cut off by the client going away). */
    volatile boolean bodyEnded;

    /** Whether the backend failed mid-stream and the client was sent an error event instead. */
    volatile boolean failedMidstream;

    /** Whether the backend's response headers have come. */
    volatile boolean headersSeen;

    Attempt(Call call, Routed routed) {
      this.call = call;
      this.routed = routed;
    }

    /** Null to go on writing, or an error that ends this attempt (to fail over). */
    @Nullable Mono<Void> beforeBody(ServerHttpResponse response) {
      headersSeen = true;
      LatencyProbe.mark(call.probe, LatencyProbe.Stage.UPSTREAM_HEADERS);
      MediaType type = null;
      try {
        type = response.getHeaders().getContentType();
      } catch (RuntimeException e) {
        // an invalid content type is passed through as is; the body is then not an event stream
      }
      boolean stream = type != null && MediaType.TEXT_EVENT_STREAM.isCompatibleWith(type);
      tap = new ResponseTap(stream, maxBodyBytes, call.usageInjected, this::firstContent);
      if (stream) {
        // the gateway may drop the usage chunk or add an error event: the length is not known
        response.getHeaders().remove(HttpHeaders.CONTENT_LENGTH);
      }
      HttpStatusCode status = response.getStatusCode();
      if (status != null && status.is5xxServerError()) {
        routed.lease().fail(Failure.httpStatus(status.value()));
        RouteDecision d = routed.lease().failover();
        if (d instanceof Routed r) {
          next = r;
          if (call.leftBefore(r)) {
            return Mono.empty(); // the client left: its cancel may stop the signal below
          }
          return Mono.error(FailoverSignal.INSTANCE);
        }
        // nowhere else to go: the backend's own answer goes to the client
      }
      return null;
    }

    Flux<DataBuffer> watch(Flux<DataBuffer> body, DataBufferFactory factory) {
      ResponseTap t = Objects.requireNonNull(tap);
      IdleTimeout idle = new IdleTimeout(idleTimeout, Schedulers.parallel());
      Flux<DataBuffer> out =
          idle.watch(body)
              .<DataBuffer>handle(
                  (b, sink) -> {
                    idle.touch();
                    DataBuffer o = t.onChunk(b, factory);
                    if (o != null) {
                      sink.next(o);
                      if (LatencyProbe.ON && t.sawContent()) {
                        LatencyProbe.mark(call.probe, LatencyProbe.Stage.FIRST_CONTENT_SENT);
                      }
                    }
                  })
              .transform(idle::demandOf)
              .concatWith(
                  Mono.fromCallable(
                      () -> {
                        byte[] rest = t.onEnd();
                        bodyEnded = true;
                        if (LatencyProbe.ON) {
                          LatencyProbe.mark(call.probe, LatencyProbe.Stage.END);
                          LatencyProbe.record(call.requestId, call.upstreamRequestId, call.probe);
                        }
                        return rest == null ? null : factory.wrap(rest);
                      }))
              // here, before the writes: the writer that the client stopped takes no signal
              .doOnError(IdleTimeout.ClientStalledException.class, e -> clientStalled());
      if (!t.isStream()) {
        return out;
      }
      // an event stream that dies after its first byte ends with an error event, not a cut (a
      // client that stopped reading would not read it: its connection is closed instead)
      return out.onErrorResume(
          e -> t.bytesSeen() && !(e instanceof IdleTimeout.ClientStalledException),
          e -> Mono.just(factory.wrap(failMidstream(e))));
    }

    /**
     * The client read nothing for the idle timeout while the backend's chunks waited on it: the
     * lease ends as if it had gone ({@link Call#cancelled}), and its connection is closed (the
     * writes queued to it would never end).
     */
    private void clientStalled() {
      call.cancelled();
      Object connection =
          ServerHttpResponseDecorator.getNativeResponse(call.exchange.getResponse());
      if (connection instanceof reactor.netty.Connection c) {
        c.dispose();
      }
    }

    private byte[] failMidstream(Throwable e) {
      Failure f = classify(e);
      failedMidstream = true;
      routed.lease().fail(f, used(routed, tap));
      metrics.request(routed.resolvedModel(), "failed", call.elapsedNanos());
      call.log("failed_midstream", 0, f);
      boolean timeout = f.kind() == Failure.Kind.TIMEOUT;
      return Objects.requireNonNull(tap)
          .errorEvent(
              timeout ? "backend_timeout" : "backend_failed",
              "backend '" + routed.backendId() + "' failed mid-stream: " + f.detail());
    }

    void firstContent() {
      LatencyProbe.mark(call.probe, LatencyProbe.Stage.FIRST_CONTENT);
      routed.lease().firstToken();
      metrics.ttft(routed.resolvedModel(), call.elapsedNanos());
    }

    void finish() {
      if (failedMidstream) {
        return; // the lease failed and the request was counted when the error event was made
      }
      if (tap != null && !bodyEnded) {
        // the write ended without the body's end: the client went away mid-response
        call.cancelled();
        return;
      }
      HttpStatusCode status = call.exchange.getResponse().getStatusCode();
      int code = status == null ? 200 : status.value();
      if (code >= 400) {
        Failure f = Failure.httpStatus(code);
        routed.lease().fail(f);
        metrics.request(
            routed.resolvedModel(), code >= 500 ? "failed" : "client_error", call.elapsedNanos());
        call.log(code >= 500 ? "failed" : "client_error", code, f);
        return;
      }
      Usage u = used(routed, tap);
      routed.lease().complete(u);
      metrics.request(routed.resolvedModel(), "ok", call.elapsedNanos());
      if (tap == null || !tap.usageLost()) { // a charged reservation is not produced output
        metrics.tokens(routed.resolvedModel(), u);
      }
      call.log("ok", code, null);
    }

    /** The response as the gateway's write filter sees it, watched on the way to the client. */
    final class TapResponse extends ServerHttpResponseDecorator {
      TapResponse(ServerHttpResponse delegate) {
        super(delegate);
      }

      @Override
      public Mono<Void> writeWith(Publisher<? extends DataBuffer> body) {
        Mono<Void> stop = beforeBody(getDelegate());
        if (stop != null) {
          return stop;
        }
        return super.writeWith(watch(Flux.from(body), bufferFactory()));
      }

      @Override
      public Mono<Void> writeAndFlushWith(
          Publisher<? extends Publisher<? extends DataBuffer>> body) {
        Mono<Void> stop = beforeBody(getDelegate());
        if (stop != null) {
          return stop;
        }
        Flux<DataBuffer> chunks = Flux.from(body).concatMap(p -> Flux.from(p));
        return super.writeAndFlushWith(watch(chunks, bufferFactory()).map(Flux::just));
      }
    }
  }
}
