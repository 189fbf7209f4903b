package dev.prefixrouter.redis;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BackendSnapshot;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.spi.RoutingListener;
import io.lettuce.core.Limit;
import io.lettuce.core.Range;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.StreamMessage;
import io.lettuce.core.XReadArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes a backend added, updated, removed, drained or undrained through one router replica (its API
 * or actuator) reach every replica of the fleet, as a gateway's cluster mode propagates its
 * configuration. Register it as the engine's listener and attach it:
 *
 * <pre>{@code
 * RedisMembershipSync sync = RedisMembershipSync.builder("redis://127.0.0.1:6379")
 *     .keyPrefix("gw-prod:").build();
 * RoutingEngine engine = RoutingEngine.builder().listener(sync)...build();
 * sync.attach(engine);
 * engine.backends().drain("b3");   // every replica drains b3
 * }</pre>
 *
 * <p><b>Model.</b> One Redis hash holds the fleet's state per backend id (descriptor and draining,
 * or a tombstone for a removed backend); a capped stream announces which id changed. A change
 * through this replica is queued by the listener (no Redis call on the caller's thread) and written
 * by a worker thread in one script call (hash and announcement together, the announcement naming
 * the writing replica); every other replica's worker reads the announcements and makes its engine
 * match the hash's current value of the id. The last write wins, and every replica converges to it.
 * Changes the worker makes itself are not sent again, and a replica skips its own announcements:
 * applying the echo of its own earlier write could undo a local change made since, in the moment
 * before the engine's listener has queued it (a lost drain, seen under load). Replica ids must
 * therefore differ between replicas (the default is a random UUID).
 *
 * <p><b>Join and re-sync.</b> On {@link #attach}, and whenever Redis answers again after an outage,
 * the worker first writes the changes this replica made meanwhile, then applies the whole hash:
 * backends the fleet removed are removed here too (also one this replica was configured with), the
 * fleet's descriptors and draining replace local ones, and backends the fleet does not know are
 * published unless another replica wrote them meanwhile (then theirs apply). Tombstones older than
 * {@link Builder#tombstoneTtl} are deleted then, and by every replica's worker every quarter of
 * {@link Builder#tombstoneTtl} while Redis answers (one {@code HGETALL} of the hash), so none is
 * kept much past 1.25 times the TTL.
 *
 * <p><b>Redis down.</b> Membership changes stay local (routing never waits on Redis); the ids
 * changed are remembered (at most 65,536; more are counted and dropped, and re-sync then takes the
 * fleet's state for them) and written when Redis answers. One log line per transition.
 *
 * <p><b>Bounds.</b> The hash holds one field per backend id the fleet knows plus the tombstones of
 * the last 1.25 {@link Builder#tombstoneTtl}; the stream is capped at 1,024 entries. Thread-safe;
 * one worker thread.
 */
public final class RedisMembershipSync implements RoutingListener, AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(RedisMembershipSync.class);
  private static final int MAX_PENDING = 65_536;
  private static final Duration READ_BLOCK = Duration.ofMillis(100);
  private static final byte[] ID_FIELD = {'i', 'd'};
  private static final byte[] REPLICA_FIELD = {'r'};
  private static final String PUBLISH =
      "redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) "
          + "return redis.call('XADD', KEYS[2], 'MAXLEN', '~', '1024', '*', 'id', ARGV[1],"
          + " 'r', ARGV[3])";
  private static final String SEED =
      "if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 1 then "
          + "redis.call('XADD', KEYS[2], 'MAXLEN', '~', '1024', '*', 'id', ARGV[1], 'r', ARGV[3])"
          + " return 1 end return 0";
  private static final String PRUNE =
      "if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then "
          + "return redis.call('HDEL', KEYS[1], ARGV[1]) end return 0";

  /**
   * Counters since {@link Builder#build}; {@code pending} is the ids changed here, not yet written;
   * {@code undecodable} the fleet states this replica could not read; {@code unencodable} the local
   * backends not shared because their descriptor exceeds what a replica decodes (more than 4,096
   * models, capabilities or labels, or a string over 65,535 bytes): each logged once per attempt as
   * a WARN and kept local, never retried and never holding up the changes after it.
   */
  public record Stats(
      boolean redisUp,
      long transitions,
      long published,
      long applied,
      long rejected,
      long pending,
      long droppedPending,
      long undecodable,
      long unencodable) {}

  private final RedisLink link;
  private final byte[] hashKey;
  private final byte[] streamKey;
  private final byte[] urlsKey; // backend id -> base URL, beside the states (which stay version 1)
  private final String replicaId;
  private final byte[] replicaIdBytes;
  private final Duration commandTimeout;
  private final long retryIntervalNanos;
  private final long tombstoneTtlMillis;
  private final LongSupplier wallMillis;
  private final Function<String, @Nullable String> urlOf;
  private final BiConsumer<String, @Nullable String> urlSink;
  private final LinkState state;
  private final Set<String> pending = new LinkedHashSet<>(); // guarded by itself

  private final LongAdder published = new LongAdder();
  private final LongAdder applied = new LongAdder();
  private final LongAdder rejected = new LongAdder();
  private final LongAdder droppedPending = new LongAdder();
  private final LongAdder undecodable = new LongAdder();
  private final LongAdder unencodable = new LongAdder();

  private volatile boolean closed;
  private volatile @Nullable Thread worker;
  private long nextPruneMillis; // worker only
  private @Nullable RoutingEngine engine;

  private RedisMembershipSync(Builder b) {
    this.link = new RedisLink(b.uri, b.retryInterval);
    this.hashKey = (b.keyPrefix + "backends").getBytes(StandardCharsets.UTF_8);
    this.streamKey = (b.keyPrefix + "backends:changes").getBytes(StandardCharsets.UTF_8);
    this.urlsKey = (b.keyPrefix + "backends:urls").getBytes(StandardCharsets.UTF_8);
    this.replicaId = b.replicaId;
    this.replicaIdBytes = b.replicaId.getBytes(StandardCharsets.UTF_8);
    this.commandTimeout = b.commandTimeout;
    this.retryIntervalNanos = b.retryInterval.toNanos();
    this.tombstoneTtlMillis = b.tombstoneTtl.toMillis();
    this.wallMillis = b.wallMillis;
    this.urlOf = b.urlOf;
    this.urlSink = b.urlSink;
    this.state =
        new LinkState(
            log,
            link.address(),
            "replica " + b.replicaId + " shares membership and drain changes again",
            "replica " + b.replicaId + " keeps membership changes local until it returns");
  }

  /** A builder for the Redis at {@code uri} (e.g. {@code redis://127.0.0.1:6379}). */
  public static Builder builder(String uri) {
    return new Builder(uri);
  }

  /**
   * Starts the worker: it connects in the background, joins the fleet's membership (see the class
   * documentation) and follows it. {@code engine} must have this sync as a listener. Once.
   *
   * @throws IllegalStateException if already attached or closed
   */
  public synchronized void attach(RoutingEngine engine) {
    Objects.requireNonNull(engine, "engine");
    if (this.engine != null || closed) {
      throw new IllegalStateException(closed ? "closed" : "already attached");
    }
    this.engine = engine;
    worker = Workers.start("prefixrouter-redis-membership", () -> loop(engine));
  }

  // ---------------------------------------------------------------- listener (caller's thread)

  @Override
  public void onBackendAdded(Backend backend) {
    changed(backend.id());
  }

  @Override
  public void onBackendRemoved(Backend backend) {
    changed(backend.id());
  }

  @Override
  public void onDrainChanged(Backend backend, boolean draining) {
    changed(backend.id());
  }

  /**
   * Queues a local change for the worker, unless the worker made it (a fleet change applied) or the
   * sync is not attached yet (the engine's initial backends: joining reconciles them).
   */
  private void changed(String id) {
    Thread w = worker;
    if (w != null && Thread.currentThread() != w) {
      queue(id);
    }
  }

  /** Remembers that {@code id} changed here and wakes the worker. */
  private void queue(String id) {
    synchronized (pending) {
      if (pending.size() >= MAX_PENDING && !pending.contains(id)) {
        droppedPending.increment();
        return;
      }
      pending.add(id);
    }
    Thread w = worker;
    if (w != null) {
      LockSupport.unpark(w);
    }
  }

  // ---------------------------------------------------------------- worker

  private void loop(RoutingEngine target) {
    StatefulRedisConnection<byte[], byte[]> conn = null;
    String lastId = null;
    while (!closed) {
      try {
        if (conn == null) {
          conn = link.connect(ByteArrayCodec.INSTANCE, commandTimeout.plus(READ_BLOCK));
        }
        RedisCommands<byte[], byte[]> c = conn.sync();
        if (!state.up()) {
          c.ping();
          publishPending(c, target);
          lastId = newestId(c);
          resync(c, target);
          if (!closed) {
            state.markUp();
          }
        }
        publishPending(c, target);
        if (wallMillis.getAsLong() - nextPruneMillis >= 0) {
          prune(c);
        }
        List<StreamMessage<byte[], byte[]>> messages =
            c.xread(
                XReadArgs.Builder.count(256).block(READ_BLOCK),
                XReadArgs.StreamOffset.from(streamKey, lastId));
        if (!messages.isEmpty()) {
          Map<String, Boolean> draining = drainingById(target);
          for (StreamMessage<byte[], byte[]> m : messages) {
            lastId = m.getId();
            byte[] id = field(m, ID_FIELD);
            if (id == null || Arrays.equals(field(m, REPLICA_FIELD), replicaIdBytes)) {
              continue; // this replica's own announcement: its local state is already as new
            }
            byte[] value = c.hget(hashKey, id);
            if (value != null) {
              apply(target, value, draining, c.hget(urlsKey, id));
            }
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
   * The value of {@code name} in a stream entry, or null. Announcements carry the backend id and
   * the writing replica's id; entries without the replica field (older writers) count as another
   * replica's.
   */
  private static byte @Nullable [] field(StreamMessage<byte[], byte[]> m, byte[] name) {
    for (Map.Entry<byte[], byte[]> e : m.getBody().entrySet()) {
      if (Arrays.equals(e.getKey(), name)) {
        return e.getValue();
      }
    }
    return null;
  }

  /** The id of the stream's newest entry, or {@code 0-0}. */
  private String newestId(RedisCommands<byte[], byte[]> c) {
    List<StreamMessage<byte[], byte[]>> newest =
        c.xrevrange(streamKey, Range.create("-", "+"), Limit.from(1));
    return newest.isEmpty() ? "0-0" : newest.get(0).getId();
  }

  /**
   * Writes the current local state of every id changed here since the last call. The ids are taken
   * out of the pending set before their state is read: a change made after that read queues its id
   * again and is written on the next call. (Removing an id only after its write lost such a change:
   * its re-queue found the id still pending and the removal then dropped it, so a drain made on
   * this replica right after an earlier change of the same backend never reached the fleet.) If a
   * write fails, the ids not written yet are pending again, for when Redis answers.
   */
  private void publishPending(RedisCommands<byte[], byte[]> c, RoutingEngine target) {
    List<String> ids;
    synchronized (pending) {
      if (pending.isEmpty()) {
        return;
      }
      ids = new ArrayList<>(pending);
      pending.clear();
    }
    int written = 0;
    try {
      Map<String, Boolean> draining = drainingById(target);
      for (String id : ids) {
        Optional<Backend> b = target.backends().get(id);
        BackendState s =
            new BackendState(
                id,
                b.orElse(null),
                b.isPresent() && draining.getOrDefault(id, false),
                wallMillis.getAsLong());
        byte[] encoded = encodable(s);
        if (encoded == null) {
          written++; // skipped for good: retrying cannot help, and it must not block the rest
          continue;
        }
        byte[] idBytes = id.getBytes(StandardCharsets.UTF_8);
        shareUrl(c, idBytes, b.isPresent() ? urlOf.apply(id) : null, b.isPresent());
        c.eval(
            PUBLISH,
            ScriptOutputType.VALUE,
            new byte[][] {hashKey, streamKey},
            idBytes,
            encoded,
            replicaIdBytes);
        written++;
        published.increment();
      }
    } finally {
      if (written < ids.size()) {
        requeue(ids.subList(written, ids.size()));
      }
    }
  }

  /**
   * {@code s} encoded, or null (counted, one WARN) if it exceeds what a replica can decode: such a
   * backend stays local to this replica, and the fleet keeps what it held for the id.
   */
  private byte @Nullable [] encodable(BackendState s) {
    try {
      return s.encode();
    } catch (IllegalArgumentException e) {
      unencodable.increment();
      log.warn(
          "backend {} not shared with the fleet by replica {} ({}): it stays local here",
          s.id(),
          replicaId,
          e.getMessage());
      return null;
    }
  }

  /** Makes {@code ids} pending again after a failed write (bounded as {@link #queue} is). */
  private void requeue(List<String> ids) {
    synchronized (pending) {
      for (String id : ids) {
        if (pending.size() >= MAX_PENDING && !pending.contains(id)) {
          droppedPending.increment();
        } else {
          pending.add(id);
        }
      }
    }
  }

  /** Makes the engine match the whole hash; publishes local backends the fleet does not know. */
  private void resync(RedisCommands<byte[], byte[]> c, RoutingEngine target) {
    Map<byte[], byte[]> all = c.hgetall(hashKey);
    Map<String, byte[]> urls = new HashMap<>();
    c.hgetall(urlsKey).forEach((k, v) -> urls.put(new String(k, StandardCharsets.UTF_8), v));
    Map<String, Boolean> draining = drainingById(target);
    Set<String> known = new java.util.HashSet<>();
    long now = wallMillis.getAsLong();
    for (Map.Entry<byte[], byte[]> e : all.entrySet()) {
      BackendState s =
          apply(
              target,
              e.getValue(),
              draining,
              urls.get(new String(e.getKey(), StandardCharsets.UTF_8)));
      if (s == null) {
        continue;
      }
      known.add(s.id());
      pruneIfOld(c, s, e.getKey(), e.getValue(), now);
    }
    nextPruneMillis = now + pruneIntervalMillis();
    for (Backend b : target.backends().all()) {
      if (!known.contains(b.id())) {
        seed(c, target, b, draining);
      }
    }
  }

  /**
   * Deletes the tombstones older than {@link Builder#tombstoneTtl} (the worker's regular cycle,
   * every quarter of it, besides each re-sync); a value another replica changed meanwhile stays.
   */
  private void prune(RedisCommands<byte[], byte[]> c) {
    long now = wallMillis.getAsLong();
    nextPruneMillis = now + pruneIntervalMillis(); // a failure below waits for the next re-sync
    for (Map.Entry<byte[], byte[]> e : c.hgetall(hashKey).entrySet()) {
      BackendState s;
      try {
        s = BackendState.decode(e.getValue());
      } catch (IllegalArgumentException ex) {
        continue; // counted when applied
      }
      pruneIfOld(c, s, e.getKey(), e.getValue(), now);
    }
  }

  private void pruneIfOld(
      RedisCommands<byte[], byte[]> c, BackendState s, byte[] field, byte[] value, long now) {
    if (s.removed() && now - s.changedAtMillis() > tombstoneTtlMillis) {
      c.eval(PRUNE, ScriptOutputType.INTEGER, new byte[][] {hashKey}, field, value);
    }
  }

  private long pruneIntervalMillis() {
    return tombstoneTtlMillis / 4;
  }

  /**
   * Publishes a local backend the fleet did not know, unless another replica wrote the id since the
   * hash was read: then its value is applied here instead (a stale local state never overwrites a
   * fleet change).
   */
  private void seed(
      RedisCommands<byte[], byte[]> c,
      RoutingEngine target,
      Backend b,
      Map<String, Boolean> draining) {
    BackendState s =
        new BackendState(b.id(), b, draining.getOrDefault(b.id(), false), wallMillis.getAsLong());
    byte[] encoded = encodable(s);
    if (encoded == null) {
      return;
    }
    byte[] idBytes = b.id().getBytes(StandardCharsets.UTF_8);
    Long written =
        c.eval(
            SEED,
            ScriptOutputType.INTEGER,
            new byte[][] {hashKey, streamKey},
            idBytes,
            encoded,
            replicaIdBytes);
    if (written != null && written == 1) {
      shareUrl(c, idBytes, urlOf.apply(b.id()), true);
      published.increment();
      return;
    }
    byte[] value = c.hget(hashKey, idBytes);
    if (value != null) {
      apply(target, value, draining, c.hget(urlsKey, idBytes));
    }
  }

  /**
   * Writes this replica's URL of a backend to the URL hash (before its state, so a replica that
   * reads the state finds the URL), or deletes it for a removed backend; a present backend whose
   * URL this replica does not know leaves the hash alone.
   */
  private void shareUrl(
      RedisCommands<byte[], byte[]> c, byte[] idBytes, @Nullable String url, boolean present) {
    if (!present) {
      c.hdel(urlsKey, idBytes);
    } else if (url != null) {
      c.hset(urlsKey, idBytes, url.getBytes(StandardCharsets.UTF_8));
    }
  }

  /**
   * Applies one hash value with the fleet's URL of the backend ({@code url}, or null); returns it
   * decoded, or null if it is malformed (counted).
   */
  private @Nullable BackendState apply(
      RoutingEngine target, byte[] value, Map<String, Boolean> draining, byte @Nullable [] url) {
    BackendState s;
    try {
      s = BackendState.decode(value);
    } catch (IllegalArgumentException e) {
      undecodable.increment();
      return null;
    }
    synchronized (pending) {
      if (pending.contains(s.id())) {
        return s; // changed here and not yet written: this replica's change wins when written
      }
    }
    try {
      if (applyState(
          target, s, draining, url == null ? null : new String(url, StandardCharsets.UTF_8))) {
        applied.increment();
      }
    } catch (RuntimeException e) { // the engine refused it: full, or a part rejects the descriptor
      rejected.increment();
      log.warn(
          "fleet backend change of {} not applied on replica {}: {}",
          s.id(),
          replicaId,
          e.toString());
    }
    return s;
  }

  /**
   * Whether anything changed locally. A state naming another URL than this replica's takes the
   * backend out and back in (after the new URL is set: the add's listeners, the KV-event subscriber
   * and the metrics poller, look it up); a tombstone clears the URL.
   */
  private boolean applyState(
      RoutingEngine target, BackendState s, Map<String, Boolean> draining, @Nullable String url) {
    Optional<Backend> local = target.backends().get(s.id());
    Backend wanted = s.backend();
    if (wanted == null) {
      boolean removed = local.isPresent() && target.backends().remove(s.id());
      if (removed) {
        urlSink.accept(s.id(), null);
      }
      return removed;
    }
    boolean changed = false;
    if (url != null && !url.equals(urlOf.apply(s.id()))) {
      if (local.isPresent()) {
        target.backends().remove(s.id()); // another server behind the id: nothing it held stays
        local = Optional.empty();
      }
      urlSink.accept(s.id(), url);
      changed = true;
    }
    if (local.isEmpty() || !local.get().equals(wanted)) {
      target.backends().add(wanted);
      changed = true;
    }
    boolean localDraining = local.isPresent() && draining.getOrDefault(s.id(), false);
    if (localDraining != s.draining()) {
      if (s.draining()) {
        target.backends().drain(s.id());
      } else {
        target.backends().undrain(s.id());
      }
      changed = true;
    }
    draining.put(s.id(), s.draining());
    return changed;
  }

  private static Map<String, Boolean> drainingById(RoutingEngine target) {
    Map<String, Boolean> out = new HashMap<>();
    for (BackendSnapshot b : target.inspect().backends()) {
      out.put(b.backend().id(), b.draining());
    }
    return out;
  }

  // ---------------------------------------------------------------- state

  /** True while Redis answers and this replica follows the fleet. */
  public boolean redisUp() {
    return state.up();
  }

  /** The counters. */
  public Stats stats() {
    int queued;
    synchronized (pending) {
      queued = pending.size();
    }
    return new Stats(
        state.up(),
        state.transitions(),
        published.sum(),
        applied.sum(),
        rejected.sum(),
        queued,
        droppedPending.sum(),
        undecodable.sum(),
        unencodable.sum());
  }

  /** Stops the worker (at most about a second) and closes the Redis client. */
  @Override
  public void close() {
    Thread w;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      w = worker;
    }
    state.close();
    Workers.stop(w);
    link.close();
  }

  @Override
  public String toString() {
    return "RedisMembershipSync[" + link.address() + ", replica=" + replicaId + "]";
  }

  /** Builder; setters validate at once. */
  public static final class Builder extends RedisPartBuilder<Builder> {
    private Duration tombstoneTtl = Duration.ofDays(1);
    private LongSupplier wallMillis = System::currentTimeMillis;
    private Function<String, @Nullable String> urlOf = id -> null;
    private BiConsumer<String, @Nullable String> urlSink = (id, url) -> {};

    private Builder(String uri) {
      super(uri);
    }

    @Override
    Builder self() {
      return this;
    }

    /** How long a removed backend's tombstone stays, in [1 min, 30 days]. Default 1 day. */
    public Builder tombstoneTtl(Duration ttl) {
      this.tombstoneTtl =
          Settings.within(
              ttl, "tombstoneTtl", Duration.ofMinutes(1), Duration.ofDays(30), "1 min, 30 days");
      return this;
    }

    /**
     * Shares backends' base URLs with the membership: {@code lookup} gives this replica's URL of a
     * backend id (or null) for what it publishes, and {@code apply} takes the URL another replica
     * published (null: the backend was removed) before the backend is added here, so a backend
     * added at runtime with a URL on one replica is polled and subscribed to at that URL on all.
     * Default: URLs are not shared.
     */
    public Builder urls(
        Function<String, @Nullable String> lookup, BiConsumer<String, @Nullable String> apply) {
      this.urlOf = Objects.requireNonNull(lookup, "lookup");
      this.urlSink = Objects.requireNonNull(apply, "apply");
      return this;
    }

    /** The wall clock stamping changes, for tombstone expiry (tests). */
    Builder wallMillis(LongSupplier millis) {
      this.wallMillis = Objects.requireNonNull(millis, "wallMillis");
      return this;
    }

    /** Builds the sync; nothing connects before {@link RedisMembershipSync#attach}. */
    public RedisMembershipSync build() {
      return new RedisMembershipSync(this);
    }
  }
}
