package dev.prefixrouter.redis;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.prefixrouter.api.spi.SessionPins;
import io.lettuce.core.Limit;
import io.lettuce.core.Range;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SetArgs;
import io.lettuce.core.StreamMessage;
import io.lettuce.core.XAddArgs;
import io.lettuce.core.XReadArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.StringCodec;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Session pins (session key → backend id) shared by the replicas of a fleet, with the idle-TTL
 * semantics of the in-process pins: a pin lives {@link Builder#ttl} after its last use. Reads are
 * local: every replica keeps the pins in a Caffeine cache fed by its own pins and by the other
 * replicas' (a capped Redis stream), so {@link #backendOf} never waits on Redis.
 *
 * <p>Plug it into the scorer: {@code EstimatedTtftScorer.builder().sessionPins(pins)}; the scorer's
 * session keys are the keys here.
 *
 * <p><b>Model.</b> {@link #pin} writes the local cache at once and queues the pin; a worker thread
 * writes each as {@code SET <prefix>pin:<session> <backend> PX ttl} and announces it on the stream;
 * every replica's worker reads the announcements into its cache. A use of a pin ({@link #backendOf}
 * hit) refreshes the Redis TTL at most once per quarter TTL, conditionally (one Lua script): the
 * TTL is extended only if Redis still holds this replica's backend; if Redis holds another (a move
 * this replica missed), that pin replaces the local one (counted as {@code adopted}) and Redis is
 * left as it is; if Redis holds none (expired, or pinned here while Redis was down), it is written
 * and announced. A miss queues a Redis read and answers {@code null} now: the pin is local for the
 * next request. A first pin of a session this replica holds no pin for (the scorer saw a miss) is
 * written only if the fleet holds none ({@code SET NX}); otherwise the fleet's pin replaces it here
 * (counted as {@code adopted}), so a replica that had not seen a session yet does not move it. A
 * pin that moves (the scorer passed over the pinned backend) is written unconditionally: last write
 * wins. A pin that came from the fleet (read through or announced) and that no {@link #backendOf}
 * has returned yet counts as no pin: if it lands between the scorer's miss and its pin of another
 * backend, that pin is a first pin and yields to the fleet's, as it would have a moment earlier.
 *
 * <p><b>Redis down.</b> Pins stay local (one log line per transition); queued writes are bounded
 * ({@link Builder#maxPending}, more are counted and dropped), and none are queued while down. On
 * reconnect the worker resumes the stream after the last announcement it read when that entry is
 * still there (a blip: moves announced meanwhile are applied); otherwise (the capped stream was
 * trimmed past it, or Redis lost it) it reads on from the newest entry and every local pin is
 * checked against Redis on its next use (the conditional refresh above), so a stale pin serves at
 * most that one request. Thread-safe; one worker thread.
 */
public final class RedisSessionPins implements SessionPins, AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(RedisSessionPins.class);
  private static final Duration READ_BLOCK = Duration.ofMillis(50);

  /**
   * A local pin: its backend, when its Redis TTL was last refreshed (nanos), and whether {@link
   * #backendOf} has returned it since it came from the fleet (a pin made here is seen).
   */
  private record Pin(String backendId, long refreshedNanos, boolean seen) {}

  /**
   * A queued Redis operation: a read-through (backend null), a write, (ifAbsent) a write that
   * yields to a pin the fleet already holds, or (refresh) a TTL refresh that yields to a pin the
   * fleet moved.
   */
  private record Op(String session, @Nullable String backendId, boolean ifAbsent, boolean refresh) {
    Op(String session, @Nullable String backendId, boolean ifAbsent) {
      this(session, backendId, ifAbsent, false);
    }
  }

  /**
   * A pin's TTL refresh: extends it if Redis still holds this backend; writes it if Redis holds
   * none (returns 1: announce it); otherwise leaves the fleet's pin. Returns {written, the pin}.
   */
  static final String REFRESH_LUA =
      """
      local v = redis.call('GET', KEYS[1])
      if v == ARGV[1] then
        redis.call('PEXPIRE', KEYS[1], ARGV[2])
        return {0, v}
      end
      if not v then
        redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
        return {1, ARGV[1]}
      end
      return {0, v}
      """;

  /**
   * Counters since {@link Builder#build}.
   *
   * @param redisUp whether Redis answers now
   * @param transitions up/down transitions
   * @param written pins written to Redis and announced
   * @param received other replicas' pins applied from the stream
   * @param readThroughHits misses answered from Redis
   * @param droppedPending operations dropped because the queue was full
   * @param adopted first pins and TTL refreshes that found another fleet pin in Redis and took it
   *     instead
   */
  public record Stats(
      boolean redisUp,
      long transitions,
      long written,
      long received,
      long readThroughHits,
      long droppedPending,
      long adopted) {}

  private final RedisLink link;
  private final String keyPrefix;
  private final String streamKey;
  private final String replicaId;
  private final long ttlMillis;
  private final long refreshNanos;
  private final Duration commandTimeout;
  private final long retryIntervalNanos;
  private final Cache<String, Pin> local;
  private final BlockingQueue<Op> pending;
  private final LinkState state;
  private final LongAdder written = new LongAdder();
  private final LongAdder received = new LongAdder();
  private final LongAdder readThroughHits = new LongAdder();
  private final LongAdder droppedPending = new LongAdder();
  private final LongAdder adopted = new LongAdder();
  private final Thread worker;
  private volatile boolean closed;

  private RedisSessionPins(Builder b) {
    this.link = new RedisLink(b.uri, b.retryInterval);
    this.keyPrefix = b.keyPrefix;
    this.streamKey = b.keyPrefix + "pins";
    this.replicaId = b.replicaId;
    this.ttlMillis = b.ttl.toMillis();
    this.refreshNanos = b.ttl.toNanos() / 4;
    this.commandTimeout = b.commandTimeout;
    this.retryIntervalNanos = b.retryInterval.toNanos();
    this.local =
        Caffeine.newBuilder()
            .maximumSize(b.maxLocalSessions)
            .expireAfterAccess(b.ttl)
            .executor(Runnable::run)
            .build();
    this.pending = new ArrayBlockingQueue<>(b.maxPending);
    this.state =
        new LinkState(
            log,
            link.address(),
            "replica " + b.replicaId + " shares session pins again",
            "replica " + b.replicaId + " keeps session pins local");
    this.worker = Workers.start("prefixrouter-redis-pins", this::loop);
  }

  /** A builder for the Redis at {@code uri} (e.g. {@code redis://127.0.0.1:6379}). */
  public static Builder builder(String uri) {
    return new Builder(uri);
  }

  /**
   * The backend {@code session} is pinned to, or null (unknown here: a Redis read is queued so that
   * the next request finds it). One cache lookup; never waits on Redis.
   */
  @Override
  public @Nullable String backendOf(String session) {
    return backendOf(session, System.nanoTime());
  }

  /** {@link #backendOf(String)} at {@code nowNanos}. */
  @Nullable String backendOf(String session, long nowNanos) {
    Objects.requireNonNull(session, "session");
    Pin p = local.getIfPresent(session);
    if (p == null) {
      offer(new Op(session, null, false));
      return null;
    }
    // replace, not put: a pin the worker applied since the lookup is newer and stays
    if (nowNanos - p.refreshedNanos() > refreshNanos) {
      if (local.asMap().replace(session, p, new Pin(p.backendId(), nowNanos, true))) {
        offer(new Op(session, p.backendId(), false, true)); // refreshes the Redis TTL
      }
    } else if (!p.seen()) {
      local.asMap().replace(session, p, new Pin(p.backendId(), p.refreshedNanos(), true));
    }
    return p.backendId();
  }

  /** Pins {@code session} to {@code backendId} here at once, and in the fleet shortly. */
  @Override
  public void pin(String session, String backendId) {
    pin(session, backendId, System.nanoTime());
  }

  /**
   * Drops this replica's pins to {@code backendId}; the fleet's expire (each replica forgets a
   * backend when it leaves, e.g. through {@link RedisMembershipSync}).
   */
  @Override
  public void forgetBackend(String backendId) {
    Objects.requireNonNull(backendId, "backendId");
    local.asMap().values().removeIf(p -> p.backendId().equals(backendId));
  }

  /** Pins held locally (approximate). */
  @Override
  public long size() {
    return local.estimatedSize();
  }

  /** {@link #pin(String, String)} at {@code nowNanos}. */
  void pin(String session, String backendId, long nowNanos) {
    Objects.requireNonNull(session, "session");
    Objects.requireNonNull(backendId, "backendId");
    Pin before = local.getIfPresent(session);
    local.put(session, new Pin(backendId, nowNanos, true));
    if (before == null || !before.backendId().equals(backendId)) {
      // a first pin (none here, or a fleet pin the caller has not seen) yields to the fleet's
      offer(new Op(session, backendId, before == null || !before.seen()));
    }
  }

  private void offer(Op op) {
    if (state.up() && !pending.offer(op)) {
      droppedPending.increment();
    }
  }

  // ---------------------------------------------------------------- worker

  private void loop() {
    StatefulRedisConnection<String, String> conn = null;
    String lastId = "0-0";
    boolean wasUp = false;
    while (!closed) {
      try {
        if (conn == null) {
          conn = link.connect(StringCodec.UTF8, commandTimeout.plus(READ_BLOCK));
        }
        RedisCommands<String, String> c = conn.sync();
        if (!state.up()) {
          c.ping();
          lastId = wasUp ? resumeFrom(c, lastId) : newestId(c);
          wasUp = true;
          state.markUp();
        }
        Op op;
        while ((op = pending.poll()) != null) {
          run(c, op);
        }
        List<StreamMessage<String, String>> messages =
            c.xread(
                XReadArgs.Builder.count(256).block(READ_BLOCK),
                XReadArgs.StreamOffset.from(streamKey, lastId));
        for (StreamMessage<String, String> m : messages) {
          lastId = m.getId();
          Map<String, String> body = m.getBody();
          String session = body.get("s");
          String backend = body.get("b");
          if (session != null && backend != null && !replicaId.equals(body.get("r"))) {
            local.put(session, new Pin(backend, System.nanoTime(), false));
            received.increment();
          }
        }
      } catch (RuntimeException e) {
        if (closed) {
          return;
        }
        state.markDown(e);
        LockSupport.parkNanos(retryIntervalNanos);
      }
    }
  }

  /**
   * Where to read the stream after (re)connecting: from {@code lastId} when every entry after it is
   * still in the stream (a short blip: the pins announced meanwhile are applied); else from the
   * newest entry, and every local pin is refreshed on its next use (the conditional refresh adopts
   * the fleet's pin if it moved while this replica missed the announcement). On the first connect
   * (not here) there is nothing local to resume: pins are read through on use.
   */
  private String resumeFrom(RedisCommands<String, String> c, String lastId) {
    List<StreamMessage<String, String>> oldest =
        c.xrange(streamKey, Range.create("-", "+"), Limit.from(1));
    boolean first = lastId.equals("0-0"); // nothing read yet: intact only if nothing was added
    if (oldest.isEmpty()
        ? first
        : !first && RedisLink.compareStreamIds(oldest.get(0).getId(), lastId) <= 0) {
      return lastId;
    }
    log.info(
        "replica {} missed session pin announcements (stream trimmed or lost): its pins are"
            + " checked against Redis on their next use",
        replicaId);
    long now = System.nanoTime();
    long stale = now - refreshNanos - 1;
    local.asMap().replaceAll((k, p) -> new Pin(p.backendId(), stale, p.seen()));
    return newestId(c);
  }

  private String newestId(RedisCommands<String, String> c) {
    List<StreamMessage<String, String>> newest =
        c.xrevrange(streamKey, Range.create("-", "+"), Limit.from(1));
    return newest.isEmpty() ? "0-0" : newest.get(0).getId();
  }

  private void run(RedisCommands<String, String> c, Op op) {
    String key = keyPrefix + "pin:" + op.session();
    String backend = op.backendId();
    if (backend == null) {
      String found = c.get(key);
      // putIfAbsent: a pin made here while the read was in flight is newer and stays
      if (found != null
          && local.asMap().putIfAbsent(op.session(), new Pin(found, System.nanoTime(), false))
              == null) {
        readThroughHits.increment();
      }
      return;
    }
    if (op.refresh()) {
      List<Object> r =
          c.eval(
              REFRESH_LUA,
              ScriptOutputType.MULTI,
              new String[] {key},
              backend,
              Long.toString(ttlMillis));
      String fleet = (String) r.get(1);
      if (!fleet.equals(backend)) { // moved by another replica while this one missed it
        local
            .asMap()
            .computeIfPresent(
                op.session(),
                (k, v) ->
                    v.backendId().equals(backend)
                        ? new Pin(fleet, System.nanoTime(), v.seen())
                        : v);
        adopted.increment();
        return;
      }
      if ((Long) r.get(0) == 0L) {
        return; // extended: the fleet holds it already
      }
    } else if (op.ifAbsent()) {
      if (c.set(key, backend, SetArgs.Builder.nx().px(ttlMillis)) == null) {
        String fleet = c.get(key); // another replica pinned it first: adopt the fleet's pin
        if (fleet != null && !fleet.equals(backend)) {
          long now = System.nanoTime();
          local
              .asMap()
              .compute(
                  op.session(),
                  (k, v) ->
                      v == null || v.backendId().equals(backend) ? new Pin(fleet, now, false) : v);
          adopted.increment();
        }
        return;
      }
    } else {
      c.set(key, backend, SetArgs.Builder.px(ttlMillis));
    }
    c.xadd(
        streamKey,
        XAddArgs.Builder.maxlen(10_000).approximateTrimming(),
        Map.of("s", op.session(), "b", backend, "r", replicaId));
    written.increment();
  }

  // ---------------------------------------------------------------- state

  /** True while Redis answers and pins are shared. */
  public boolean redisUp() {
    return state.up();
  }

  /** The counters. */
  public Stats stats() {
    return new Stats(
        state.up(),
        state.transitions(),
        written.sum(),
        received.sum(),
        readThroughHits.sum(),
        droppedPending.sum(),
        adopted.sum());
  }

  /** Stops the worker (at most about a second) and closes the Redis client. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    state.close();
    Workers.stop(worker);
    link.close();
  }

  /** Builder; setters validate at once. */
  public static final class Builder extends RedisPartBuilder<Builder> {
    private Duration ttl = Duration.ofMinutes(30);
    private long maxLocalSessions = 100_000;
    private int maxPending = 4096;

    private Builder(String uri) {
      super(uri);
    }

    @Override
    Builder self() {
      return this;
    }

    /** Idle time after which a pin is dropped, in [1 s, 1 day]. Default 30 min. */
    public Builder ttl(Duration ttl) {
      this.ttl =
          Settings.within(ttl, "ttl", Duration.ofSeconds(1), Duration.ofDays(1), "1 s, 1 day");
      return this;
    }

    /** Most pins held locally, {@code [1, 100_000_000]}. Default 100,000. */
    public Builder maxLocalSessions(long max) {
      if (max < 1 || max > 100_000_000) {
        throw new IllegalArgumentException("maxLocalSessions must be in [1, 1e8], was " + max);
      }
      this.maxLocalSessions = max;
      return this;
    }

    /** Most queued Redis operations, {@code [1, 1_000_000]}. Default 4,096. */
    public Builder maxPending(int max) {
      if (max < 1 || max > 1_000_000) {
        throw new IllegalArgumentException("maxPending must be in [1, 1e6], was " + max);
      }
      this.maxPending = max;
      return this;
    }

    /** Builds the pins and starts the worker, which connects in the background. */
    public RedisSessionPins build() {
      return new RedisSessionPins(this);
    }
  }
}
