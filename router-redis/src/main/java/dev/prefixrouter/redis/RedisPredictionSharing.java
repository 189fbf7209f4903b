package dev.prefixrouter.redis;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.spi.PredictionSink;
import io.lettuce.core.Limit;
import io.lettuce.core.Range;
import io.lettuce.core.StreamMessage;
import io.lettuce.core.XAddArgs;
import io.lettuce.core.XReadArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Shares predicted blocks between the router replicas of a fleet through one capped Redis Stream:
 * each replica publishes the block keys it routed, and applies the other replicas' records to its
 * own index ({@link RoutingEngine#applyPredicted}), so N replicas route as one.
 *
 * <pre>{@code
 * RedisPredictionSharing sharing = RedisPredictionSharing.builder("redis://127.0.0.1:6379")
 *     .keyPrefix("gw-prod:").build();
 * RoutingEngine engine = RoutingEngine.builder().predictionSink(sharing)...build();
 * sharing.attach(engine);   // starts publishing and applying
 * ...
 * sharing.close();
 * }</pre>
 *
 * <p><b>Why a stream.</b> Pub/Sub forgets what a subscriber missed; a stream keeps a bounded
 * history, so a replica that joins late or reconnects reads what it missed (up to {@link
 * Builder#catchUp} back, and within the stream's cap) instead of starting cold. The stream is
 * capped by {@code XADD MAXLEN ~} at {@link Builder#maxStreamEntries} entries of at most 64 KiB
 * each (about 10 s of a busy fleet's records with the defaults; a bound on Redis memory of entries
 * × 64 KiB).
 *
 * <p><b>Hot path.</b> {@link #onPredicted} runs on the routing thread: while Redis is up it copies
 * the keys (at most {@link Builder#maxKeysPerRecord}, the head of a longer prompt, itself a valid
 * prefix) into a preallocated batch under a lock held for that copy, and returns. No allocation, no
 * I/O, no waiting on Redis; a full batch or Redis down drops the record (counted). With {@link
 * Builder#shareOnlyNewBlocks} (for replicas that read engine KV events themselves) a route whose
 * whole prompt the index already believed held on the backend is not shared: every replica learns
 * confirmed blocks from the engines, so only blocks predicted beyond them are news.
 *
 * <p><b>Threads.</b> A publisher encodes each batch into stream entries every {@link
 * Builder#flushInterval}; a reader blocks on {@code XREAD} and applies records of other replicas
 * (its own, recognised by {@link Builder#replicaId}, are skipped). Records name backends by id:
 * every replica must hash alike (same block hasher and block size, same prefix isolation), and a
 * record for a backend this replica does not know is dropped (counted).
 *
 * <p><b>Redis down, slow or restarted.</b> A failed or timed-out command (250 ms by default) marks
 * Redis down: one WARN line, predictions are neither copied nor published (routing goes on with
 * local state only), the publisher pings every {@link Builder#retryInterval}. When Redis answers,
 * one INFO line, and the reader resumes after the last entry it applied, or from {@link
 * Builder#catchUp} back if the stream was lost (a restarted Redis without persistence) or its
 * entries are older than that. Memory stays at two batches whatever Redis does.
 *
 * <p>Thread-safe. {@link #stats()} reads counters.
 */
public final class RedisPredictionSharing implements PredictionSink, AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(RedisPredictionSharing.class);

  /** Largest stream entry, unless one record of {@link Builder#maxKeysPerRecord} needs more. */
  static final int MAX_ENTRY_BYTES = 64 * 1024;

  private static final byte[] FIELD = {'p'};
  private static final int READ_COUNT = 64;
  private static final Duration READ_BLOCK = Duration.ofMillis(100);

  /** Counters of one sharing instance; every count since {@link Builder#build}. */
  public record Stats(
      boolean redisUp,
      long transitions,
      long published,
      long applied,
      long droppedFull,
      long droppedDown,
      long droppedPublishFailed,
      long skippedHeld,
      long unknownBackend,
      long undecodable) {}

  private final RedisLink link;
  private final byte[] streamKey;
  private final String replicaId;
  private final byte[] origin;
  private final int maxKeysPerRecord;
  private final int maxEntryBytes;
  private final boolean onlyNewBlocks;
  private final long flushIntervalNanos;
  private final long maxStreamEntries;
  private final long catchUpMillis;
  private final Duration commandTimeout;
  private final long retryIntervalNanos;
  private final PredictionBuffer buffer;

  private final LongAdder published = new LongAdder();
  private final LongAdder applied = new LongAdder();
  private final LongAdder droppedFull = new LongAdder();
  private final LongAdder droppedDown = new LongAdder();
  private final LongAdder droppedPublishFailed = new LongAdder();
  private final LongAdder skippedHeld = new LongAdder();
  private final LongAdder unknownBackend = new LongAdder();
  private final LongAdder undecodable = new LongAdder();
  private final LinkState state;
  private volatile boolean closed;

  /** Set when Redis went down: the reader works out where to resume. */
  private volatile boolean resync = true;

  private @Nullable RoutingEngine engine;
  private @Nullable Thread publisher;
  private @Nullable Thread reader;

  private RedisPredictionSharing(Builder b) {
    this.link = new RedisLink(b.uri, b.retryInterval);
    this.streamKey = (b.keyPrefix + "predictions").getBytes(StandardCharsets.UTF_8);
    this.replicaId = b.replicaId;
    this.origin = b.replicaId.getBytes(StandardCharsets.UTF_8);
    this.maxKeysPerRecord = b.maxKeysPerRecord;
    this.maxEntryBytes =
        Math.max(
            MAX_ENTRY_BYTES,
            7
                + PredictionCodec.MAX_ORIGIN_BYTES
                + PredictionCodec.recordBytes(Backend.MAX_ID_LENGTH * 4, b.maxKeysPerRecord));
    this.onlyNewBlocks = b.onlyNewBlocks;
    this.flushIntervalNanos = b.flushInterval.toNanos();
    this.maxStreamEntries = b.maxStreamEntries;
    this.catchUpMillis = b.catchUp.toMillis();
    this.commandTimeout = b.commandTimeout;
    this.retryIntervalNanos = b.retryInterval.toNanos();
    this.buffer = new PredictionBuffer(b.bufferRecords, b.bufferKeys);
    this.state =
        new LinkState(
            log,
            link.address(),
            "replica " + b.replicaId + " shares predictions again",
            "replica " + b.replicaId + " routes on its own predictions only");
  }

  /** A builder for the Redis at {@code uri} (e.g. {@code redis://127.0.0.1:6379}). */
  public static Builder builder(String uri) {
    return new Builder(uri);
  }

  /**
   * Starts publishing this engine's predictions and applying the other replicas' to it: connects in
   * the background and catches up from the stream's recent history. Once per instance.
   *
   * @throws IllegalStateException if already attached or closed
   */
  public synchronized void attach(RoutingEngine engine) {
    Objects.requireNonNull(engine, "engine");
    if (this.engine != null || closed) {
      throw new IllegalStateException(closed ? "closed" : "already attached to " + this.engine);
    }
    this.engine = engine;
    publisher = Workers.start("prefixrouter-redis-predictions-publish", this::publishLoop);
    reader = Workers.start("prefixrouter-redis-predictions-read", () -> readLoop(engine));
  }

  @Override
  public void onPredicted(Backend backend, long[] keys, int keyCount, int heldBlocks) {
    if (!state.up()) {
      droppedDown.increment();
      return;
    }
    if (onlyNewBlocks && heldBlocks >= keyCount) {
      skippedHeld.increment();
      return;
    }
    if (!buffer.offer(backend.id(), keys, Math.min(keyCount, maxKeysPerRecord))) {
      droppedFull.increment();
    }
  }

  // ---------------------------------------------------------------- publisher

  private void publishLoop() {
    StatefulRedisConnection<byte[], byte[]> conn = null;
    while (!closed) {
      try {
        if (conn == null) {
          conn = link.connect(ByteArrayCodec.INSTANCE, commandTimeout);
        }
        RedisCommands<byte[], byte[]> c = conn.sync();
        if (!state.up()) {
          c.ping();
          markUp();
        }
        LockSupport.parkNanos(flushIntervalNanos);
        PredictionBuffer.Batch b = buffer.take();
        if (!b.isEmpty()) {
          try {
            publish(c, b);
          } finally {
            b.clear();
          }
        }
      } catch (RuntimeException e) {
        if (closed) {
          return;
        }
        markDown(e);
        LockSupport.parkNanos(retryIntervalNanos);
      }
    }
  }

  private void publish(RedisCommands<byte[], byte[]> c, PredictionBuffer.Batch b) {
    List<PredictionCodec.Entry> entries = PredictionCodec.encode(origin, b, maxEntryBytes);
    XAddArgs args = XAddArgs.Builder.maxlen(maxStreamEntries).approximateTrimming();
    int left = b.records;
    for (PredictionCodec.Entry e : entries) {
      try {
        c.xadd(streamKey, args, Map.of(FIELD, e.bytes()));
      } catch (RuntimeException x) {
        droppedPublishFailed.add(left);
        throw x;
      }
      published.add(e.records());
      left -= e.records();
    }
  }

  // ---------------------------------------------------------------- reader

  private void readLoop(RoutingEngine target) {
    StatefulRedisConnection<byte[], byte[]> conn = null;
    long[] keyBuffer = new long[256];
    String lastId = null;
    while (!closed) {
      try {
        if (!state.up()) {
          LockSupport.parkNanos(Math.min(retryIntervalNanos, flushIntervalNanos * 4));
          continue; // the publisher probes
        }
        if (conn == null) {
          conn = link.connect(ByteArrayCodec.INSTANCE, commandTimeout.plus(READ_BLOCK));
        }
        RedisCommands<byte[], byte[]> c = conn.sync();
        if (resync) {
          lastId = resumeFrom(c, lastId);
          resync = false;
        }
        List<StreamMessage<byte[], byte[]>> messages =
            c.xread(
                XReadArgs.Builder.count(READ_COUNT).block(READ_BLOCK),
                XReadArgs.StreamOffset.from(streamKey, lastId));
        for (StreamMessage<byte[], byte[]> m : messages) {
          lastId = m.getId();
          for (byte[] payload : m.getBody().values()) {
            keyBuffer = apply(target, payload, keyBuffer);
          }
        }
      } catch (RuntimeException e) {
        if (closed) {
          return;
        }
        resync = true;
        markDown(e);
      }
    }
  }

  /**
   * Where the reader goes on: after {@code lastId}, unless that is before the catch-up window or
   * ahead of the stream's newest entry (the stream was lost and started again); then from the
   * catch-up window's start, by Redis's clock.
   */
  private String resumeFrom(RedisCommands<byte[], byte[]> c, @Nullable String lastId) {
    List<byte[]> time = c.time();
    long nowMillis = Long.parseLong(new String(time.get(0), StandardCharsets.US_ASCII)) * 1000;
    String windowStart = Math.max(0, nowMillis - catchUpMillis) + "-0";
    if (lastId == null) {
      return windowStart;
    }
    List<StreamMessage<byte[], byte[]>> newest =
        c.xrevrange(streamKey, Range.create("-", "+"), Limit.from(1));
    boolean lost =
        newest.isEmpty() || RedisLink.compareStreamIds(newest.get(0).getId(), lastId) < 0;
    if (lost || RedisLink.compareStreamIds(lastId, windowStart) < 0) {
      return windowStart;
    }
    return lastId;
  }

  /** Applies one entry unless it is this replica's own; returns the (maybe grown) key buffer. */
  private long[] apply(RoutingEngine target, byte[] payload, long[] keyBuffer) {
    PredictionCodec.Reader r;
    try {
      r = new PredictionCodec.Reader(payload, keyBuffer);
      if (r.origin().equals(replicaId)) {
        return keyBuffer;
      }
      while (r.next()) {
        if (target.applyPredicted(r.backendId, r.keys, r.keyCount)) {
          applied.increment();
        } else {
          unknownBackend.increment();
        }
      }
      return r.keys;
    } catch (IllegalArgumentException e) {
      undecodable.increment();
      return keyBuffer;
    }
  }

  // ---------------------------------------------------------------- state

  private void markUp() {
    if (!closed) {
      state.markUp();
    }
  }

  private void markDown(RuntimeException e) {
    resync = true;
    state.markDown(e);
  }

  /** True while Redis answers: predictions are shared. */
  public boolean redisUp() {
    return state.up();
  }

  /** This replica's id in the stream. */
  public String replicaId() {
    return replicaId;
  }

  /** The counters. */
  public Stats stats() {
    return new Stats(
        state.up(),
        state.transitions(),
        published.sum(),
        applied.sum(),
        droppedFull.sum(),
        droppedDown.sum(),
        droppedPublishFailed.sum(),
        skippedHeld.sum(),
        unknownBackend.sum(),
        undecodable.sum());
  }

  /**
   * Stops both threads (at most about a second each) and closes the Redis client. Predictions not
   * yet published are dropped; routing goes on with local state.
   */
  @Override
  public void close() {
    Thread p;
    Thread r;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      p = publisher;
      r = reader;
    }
    state.close();
    Workers.stop(p, r);
    link.close();
  }

  @Override
  public String toString() {
    return "RedisPredictionSharing["
        + link.address()
        + ", replica="
        + replicaId
        + ", up="
        + state.up()
        + "]";
  }

  /** Builder; setters validate at once. */
  public static final class Builder extends RedisPartBuilder<Builder> {
    private boolean onlyNewBlocks;
    private int maxKeysPerRecord = 4096;
    private int bufferRecords = 4096;
    private int bufferKeys = 262_144;
    private Duration flushInterval = Duration.ofMillis(5);
    private long maxStreamEntries = 4096;
    private Duration catchUp = Duration.ofSeconds(60);

    private Builder(String uri) {
      super(uri);
    }

    @Override
    Builder self() {
      return this;
    }

    /**
     * This replica's id in the stream, 1 to 256 UTF-8 bytes, unique in the fleet (default: a random
     * UUID, so a restarted replica also catches up on what it published before).
     */
    @Override
    public Builder replicaId(String id) {
      Objects.requireNonNull(id, "replicaId");
      int bytes = id.getBytes(StandardCharsets.UTF_8).length;
      if (bytes == 0 || bytes > PredictionCodec.MAX_ORIGIN_BYTES) {
        throw new IllegalArgumentException("replicaId must be 1 to 256 UTF-8 bytes, was " + bytes);
      }
      this.replicaId = id;
      return this;
    }

    /**
     * Share only routes that predict blocks beyond what the index already held on the backend (turn
     * on when every replica reads the engines' KV events). Default off.
     */
    public Builder shareOnlyNewBlocks(boolean on) {
      this.onlyNewBlocks = on;
      return this;
    }

    /** Keys shared per route, {@code [1, 65536]} (the head of a longer prompt). Default 4,096. */
    public Builder maxKeysPerRecord(int max) {
      if (max < 1 || max > PredictionCodec.MAX_KEYS_PER_RECORD) {
        throw new IllegalArgumentException("maxKeysPerRecord must be in [1, 65536], was " + max);
      }
      this.maxKeysPerRecord = max;
      return this;
    }

    /**
     * Bound of one batch (there are two): {@code records} in {@code [1, 1_000_000]} and {@code
     * keys} in {@code [maxKeysPerRecord, 16_777_216]}. Default 4,096 records and 262,144 keys (2
     * MiB). A route that finds the batch full is not shared.
     */
    public Builder buffer(int records, int keys) {
      if (records < 1 || records > 1_000_000) {
        throw new IllegalArgumentException("buffer records must be in [1, 1e6], was " + records);
      }
      if (keys < 1 || keys > 16_777_216) {
        throw new IllegalArgumentException("buffer keys must be in [1, 16777216], was " + keys);
      }
      this.bufferRecords = records;
      this.bufferKeys = keys;
      return this;
    }

    /** How often the publisher sends a batch, in [1 ms, 1 s]. Default 5 ms. */
    public Builder flushInterval(Duration interval) {
      this.flushInterval =
          Settings.within(
              interval, "flushInterval", Duration.ofMillis(1), Duration.ofSeconds(1), "1 ms, 1 s");
      return this;
    }

    /** Cap of the stream, in {@code [16, 1_000_000]} entries (approximate trimming). */
    public Builder maxStreamEntries(long entries) {
      if (entries < 16 || entries > 1_000_000) {
        throw new IllegalArgumentException("maxStreamEntries must be in [16, 1e6], was " + entries);
      }
      this.maxStreamEntries = entries;
      return this;
    }

    /**
     * How far back a replica that starts, or whose stream position was lost, reads the history, in
     * [0, 1 h]. Default 60 s.
     */
    public Builder catchUp(Duration window) {
      this.catchUp =
          Settings.within(window, "catchUp", Duration.ZERO, Duration.ofHours(1), "0, 1 h");
      return this;
    }

    /**
     * Builds the sharing; nothing connects before {@link RedisPredictionSharing#attach}.
     *
     * @throws IllegalArgumentException if the buffer cannot hold one record of {@code
     *     maxKeysPerRecord} keys
     */
    public RedisPredictionSharing build() {
      if (bufferKeys < maxKeysPerRecord) {
        throw new IllegalArgumentException(
            "buffer keys ("
                + bufferKeys
                + ") must be >= maxKeysPerRecord ("
                + maxKeysPerRecord
                + ")");
      }
      return new RedisPredictionSharing(this);
    }
  }
}
