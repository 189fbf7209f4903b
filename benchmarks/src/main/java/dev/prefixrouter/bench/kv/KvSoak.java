package dev.prefixrouter.bench.kv;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BlockRemoved;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.KvEvent;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.RoutingEngineBuilder;
import dev.prefixrouter.radix.BlockHashers;
import dev.prefixrouter.radix.RadixPrefixIndex;
import dev.prefixrouter.vllm.KvEventStats;
import dev.prefixrouter.vllm.KvEventSubscriber;
import java.io.BufferedInputStream;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * KV events at a fixed rate through the real wire: {@code backends} {@link WirePublisher}s on
 * loopback (PUB + replay ROUTER) publish pre-encoded {@code EventBatch}es (even backends in the
 * array layout, odd ones in the map layout) to one {@link KvEventSubscriber}, which applies them to
 * a {@link RoutingEngine} with a {@link RadixPrefixIndex}. One batch = one engine step = {@code
 * eventsPerBatch} events: half {@code BlockStored} of a new 2-block sequence (32 token ids) each,
 * half {@code BlockRemoved} of the sequences stored 128 batches earlier, so each backend holds a
 * steady number of blocks. A share {@code dropRate} of batches is not sent (kept in the publisher's
 * replay buffer of 400 batches, 1.6 s at 100k events/s over 4 backends; vLLM keeps 10,000 engine
 * steps), so the subscriber sees gaps and replays them.
 *
 * <p>The publishers run in a child JVM ({@link KvPublish}, the default of the command) or on a
 * thread of this one ({@code inproc}, and {@code KvSoakTest}). With the child, the measuring
 * process holds what a router holds: the subscriber's threads, JeroMQ's I/O thread and the index.
 *
 * <p><b>Lag</b> of a batch = the wall clock when the sink's {@code applyKvEvents} returned for it
 * in this process minus the wall clock when the publisher was about to send it (the instant before
 * {@code send}, or before keeping it for replay only, for a dropped batch; that time is also the
 * batch's {@code ts}). Both ends read {@link #wallNanos} ({@code Instant.now} calibrated against
 * {@code nanoTime} once per process), so the lag includes the publisher's ZMQ send, loopback TCP,
 * JeroMQ's receive, decode, the hand-off, the index, and any replay of a dropped batch. Measured
 * for the batches published from 0.5 s after the end of the 2 s warm-up (whose end forces GCs to
 * measure the heap) to the end: p50, p99, max. Also: the used heap after GC at the end of the
 * warm-up (the index and the replay buffers are full by then) and after the run; loss (every
 * published batch applied once, in order, checked by its first block hash) and the subscriber's
 * counters; the sink's own time, this process's collections and CPU time, a scheduling probe and
 * the host's CPU pressure during the measured part. The harness keeps its own load off the two
 * cores it measures on: the publisher sleeps until each batch is due and sends it from its ring
 * without a copy, its JVM runs Serial GC on a pre-touched heap, and this JVM's main thread blocks
 * on the child's output (the probe wakes 100 times a second).
 *
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar kv-soak [seconds] [events/s] [backends] [drop]
 *     [events/batch] [queue|io|bare] [apply|noapply] [process|inproc]
 * </pre>
 */
public final class KvSoak {
  static final int RING = 512;
  private static final int LIVE = 128;
  private static final int BLOCKS = 2;
  private static final int BLOCK = 16;
  private static final long WARMUP_NANOS = 2_000_000_000L;
  private static final long SETTLE_NANOS = 500_000_000L;
  // full before the warm-up ends (so the heap check sees it full); long enough that a stall of the
  // receiving JVM of up to 1.6 s (JIT, the warm-up's forced GCs on a loaded host) loses nothing:
  // with 200 (0.8 s) a clean-clone verify on 2 busy cores once saw a gap evicted before its replay
  static final int PUBLISHER_BUFFER = 400;

  /**
   * What one run measured.
   *
   * @param seconds the run's length (publishing)
   * @param eventsPerBatch events in one batch
   * @param published batches published or dropped
   * @param applied batches the sink applied (live and replayed)
   * @param outOfOrder applied batches that were not the next expected one of their backend
   * @param events events published per second, achieved
   * @param lagP50Millis publish-to-applied lag, median, ms
   * @param lagP99Millis the same, 99th percentile, ms
   * @param lagMaxMillis the same, maximum, ms
   * @param heapStartMiB used heap after GC at the end of the warm-up
   * @param heapEndMiB used heap after GC after the run
   * @param cpuSeconds CPU time of the whole process during the run (publishers included)
   * @param stats the subscriber's counters at the end (null in {@link Mode#BARE})
   * @param applyP99Millis of the lag, the sink's own time ({@code applyKvEvents}), 99th percentile
   * @param gcCount garbage collections during the measured part
   * @param gcMillis their accumulated time, ms
   * @param mode how the batches were received: the subscriber with its apply thread, applying on
   *     its I/O thread, or the bare wire ({@link BareReceiver}: no subscriber, no decode, no index)
   * @param probeP99Millis the host's scheduling delay meanwhile: how much later than asked a thread
   *     of this process woke from 10 ms sleeps, 99th percentile
   * @param probeMaxMillis the same, maximum
   * @param cpuPressure share of the run during which some task of the host waited for a CPU ({@code
   *     /proc/pressure/cpu} "some"), or NaN where not available
   * @param separatePublisher whether the publishers ran in a child JVM
   * @param measuredBatches batches whose lag was measured (published after the warm-up)
   * @param publisherCpuSeconds CPU time of the child JVM, s (NaN with in-process publishers)
   */
  public record Result(
      double seconds,
      int eventsPerBatch,
      long published,
      long applied,
      long outOfOrder,
      double events,
      double lagP50Millis,
      double lagP99Millis,
      double lagMaxMillis,
      double heapStartMiB,
      double heapEndMiB,
      double cpuSeconds,
      KvEventStats.@Nullable Snapshot stats,
      double applyP99Millis,
      long gcCount,
      double gcMillis,
      Mode mode,
      double probeP99Millis,
      double probeMaxMillis,
      double cpuPressure,
      boolean separatePublisher,
      long measuredBatches,
      double publisherCpuSeconds) {}

  /** What receives the batches in the measured JVM. */
  public enum Mode {
    /** {@link KvEventSubscriber} with an apply thread ({@code applyOnIoThread(false)}). */
    QUEUE,
    /** {@link KvEventSubscriber} applying on its I/O thread (its default; the command's too). */
    IO,
    /**
     * No subscriber: {@link BareReceiver}'s bare JeroMQ SUB sockets and one polling thread that
     * only reads each message's seq: the floor of the wire on this host. Batches the publisher
     * drops are never received and not measured; "applied" counts the batches received.
     */
    BARE
  }

  private KvSoak() {}

  /**
   * Command line: {@code [seconds] [events/s] [backends] [drop] [events/batch] [queue|io|bare]
   * [apply|noapply] [process|inproc]}, defaults 20, 100000, 4, 0.002, 100, io (the subscriber's
   * default, applying on its I/O thread; {@code queue}: with an apply thread; {@code bare}: {@link
   * Mode#BARE}, the wire alone), apply ({@code noapply}: the sink does not touch the index, to
   * measure the wire, decode and hand-off alone), process (the publishers in a child JVM; {@code
   * inproc}: in this one).
   */
  public static void main(String[] args) throws Exception {
    double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 20;
    int rate = args.length > 1 ? Integer.parseInt(args[1]) : 100_000;
    int backends = args.length > 2 ? Integer.parseInt(args[2]) : 4;
    double drop = args.length > 3 ? Double.parseDouble(args[3]) : 0.002;
    int perBatch = args.length > 4 ? Integer.parseInt(args[4]) : 100;
    Mode mode = args.length > 5 ? Mode.valueOf(args[5].toUpperCase(Locale.ROOT)) : Mode.IO;
    boolean apply = !(args.length > 6 && args[6].equals("noapply"));
    boolean separate = !(args.length > 7 && args[7].equals("inproc"));
    Result r = run(seconds, rate, backends, drop, perBatch, mode, apply, separate, System.out);
    System.out.println(r);
  }

  /**
   * Runs the soak with the subscriber as built by default (applying on its I/O thread) and the
   * publishers in this process; progress to {@code progress} if not null.
   */
  public static Result run(
      double seconds,
      int eventsPerSecond,
      int backendCount,
      double dropRate,
      int eventsPerBatch,
      PrintStream progress)
      throws Exception {
    return run(
        seconds,
        eventsPerSecond,
        backendCount,
        dropRate,
        eventsPerBatch,
        Mode.IO,
        true,
        false,
        progress);
  }

  /**
   * Runs the soak; progress every 5 s to {@code progress} if not null.
   *
   * @param separatePublisher whether the publishers run in a child JVM ({@link KvPublish}, started
   *     with this process's {@code java} and class path) instead of in this one
   */
  public static Result run(
      double seconds,
      int eventsPerSecond,
      int backendCount,
      double dropRate,
      int eventsPerBatch,
      Mode mode,
      boolean apply,
      boolean separatePublisher,
      PrintStream progress)
      throws Exception {
    checkArguments(seconds, eventsPerSecond, backendCount, eventsPerBatch);
    int stores = eventsPerBatch / 2;
    int perBatch = 2 * stores;
    int maxBatches = maxBatches(seconds, eventsPerSecond, backendCount, perBatch);
    long[][] sentAt = new long[backendCount][maxBatches]; // wall ns per seq, by the publisher
    long[][] appliedAt = new long[backendCount][maxBatches]; // wall ns per seq, sink returned
    long[][] applyTook = new long[backendCount][maxBatches]; // ns in applyKvEvents
    long[][] firstHash = new long[backendCount][RING];
    for (int b = 0; b < backendCount; b++) {
      encode(b, new byte[RING][], firstHash[b], stores);
    }
    RoutingEngineBuilder eb =
        RoutingEngine.builder()
            .maxBackends(Math.max(16, backendCount))
            .hasher(BlockHashers.tokens(BLOCK))
            .prefixIndex(
                RadixPrefixIndex.builder()
                    .maxBackends(Math.max(16, backendCount))
                    .predictionTtl(Duration.ZERO)
                    .build());
    for (int b = 0; b < backendCount; b++) {
      eb.backend(Backend.of("b" + b, "m").withCapacityBlocks(1_000_000));
    }
    RoutingEngine engine = eb.build();
    long[] applied = new long[backendCount]; // sink thread only
    AtomicLong appliedTotal = new AtomicLong();
    AtomicLong outOfOrder = new AtomicLong();
    KvEventSubscriber.Sink sink =
        (id, events) -> {
          int b = Integer.parseInt(id, 1, id.length(), 10);
          long k = applied[b]++;
          long before = System.nanoTime();
          boolean ok = !apply || engine.applyKvEvents(id, events); // noapply: the wire alone
          long after = System.nanoTime();
          if (k >= maxBatches
              || !(events.get(0) instanceof BlockStored s)
              || s.blockHash(0) != firstHash[b][(int) (k % RING)]) {
            outOfOrder.incrementAndGet();
          } else {
            appliedAt[b][(int) k] = after + WALL_OFFSET;
            applyTook[b][(int) k] = after - before;
          }
          appliedTotal.incrementAndGet();
          return ok;
        };
    Probe probe = new Probe(seconds);
    try (Receiver sub = receiver(mode, sink, appliedAt);
        Publishers pubs =
            separatePublisher
                ? new ChildPublishers(seconds, eventsPerSecond, backendCount, dropRate, perBatch)
                : new LocalPublishers(seconds, eventsPerSecond, backendCount, dropRate, perBatch)) {
      String[][] endpoints = pubs.endpoints();
      sub.subscribe(endpoints);
      long start = pubs.start(); // wall ns; publishing from now on for `seconds`
      sleepUntilWall(start + WARMUP_NANOS);
      double heapStart = heapAfterGc();
      long cpuStart = cpuNanos();
      long[] gcStart = gc();
      long pressureStart = cpuPressureMicros();
      long measureFrom = wallNanos() + SETTLE_NANOS; // the forced GC's backlog is not measured
      probe.measuring(true);
      long nextReport = start + 5_000_000_000L;
      while (!pubs.awaitDone(200)) {
        if (progress != null && wallNanos() >= nextReport) {
          nextReport += 5_000_000_000L;
          progress.printf(
              "  %.0f s: applied %d%n", (wallNanos() - start) / 1e9, sub.applied(appliedTotal));
        }
      }
      long end = wallNanos();
      double cpu = (cpuNanos() - cpuStart) / 1e9;
      long[] gcEnd = gc();
      probe.measuring(false);
      long pressureEnd = cpuPressureMicros();
      long total = pubs.published(sentAt);
      long waitUntil = System.nanoTime() + 20_000_000_000L;
      long seen = -1;
      long progressAt = System.nanoTime();
      while (sub.applied(appliedTotal) < total && System.nanoTime() < waitUntil) {
        Thread.sleep(10);
        long now = sub.applied(appliedTotal);
        if (now != seen) {
          seen = now;
          progressAt = System.nanoTime();
        } else if (mode == Mode.BARE && System.nanoTime() - progressAt > 1_000_000_000L) {
          break; // the dropped batches never come
        }
      }
      Thread.sleep(200); // anything extra (a duplicate, a clear) would show now
      double heapEnd = heapAfterGc();
      long[] lags = new long[(int) total];
      long[] applyTimes = new long[(int) total];
      int n = 0;
      for (int b = 0; b < backendCount; b++) {
        for (int k = 0; k < maxBatches && (mode == Mode.BARE || k < applied[b]); k++) {
          if (sentAt[b][k] >= measureFrom && appliedAt[b][k] != 0 && n < lags.length) {
            lags[n] = appliedAt[b][k] - sentAt[b][k];
            applyTimes[n++] = applyTook[b][k];
          }
        }
      }
      dumpLags(sentAt, appliedAt, applyTook, maxBatches, measureFrom);
      long[] sorted = Arrays.copyOf(lags, n);
      Arrays.sort(sorted);
      long[] applySorted = Arrays.copyOf(applyTimes, n);
      Arrays.sort(applySorted);
      long[] late = probe.sorted();
      double measuredSeconds = (end - start) / 1e9;
      double measuredFor = (end - measureFrom + SETTLE_NANOS) / 1e3; // µs, from the GCs' end
      return new Result(
          measuredSeconds,
          perBatch,
          total,
          sub.applied(appliedTotal),
          sub.outOfOrder(outOfOrder),
          total * perBatch / measuredSeconds,
          percentile(sorted, 0.50),
          percentile(sorted, 0.99),
          n == 0 ? Double.NaN : sorted[n - 1] / 1e6,
          heapStart,
          heapEnd,
          cpu,
          sub.stats(),
          percentile(applySorted, 0.99),
          gcEnd[0] - gcStart[0],
          (gcEnd[1] - gcStart[1]) / 1.0,
          mode,
          percentile(late, 0.99),
          late.length == 0 ? Double.NaN : late[late.length - 1] / 1e6,
          pressureStart < 0 || pressureEnd < 0
              ? Double.NaN
              : (pressureEnd - pressureStart) / measuredFor,
          separatePublisher,
          n,
          pubs.cpuSeconds());
    } finally {
      probe.stop();
    }
  }

  static void checkArguments(double seconds, int eventsPerSecond, int backends, int perBatch) {
    if (seconds <= 3 || seconds > 3600 || perBatch < 2 || perBatch > 10_000) {
      throw new IllegalArgumentException("seconds in (3, 3600], events/batch in [2, 10000]");
    }
    if (eventsPerSecond < perBatch || backends < 1 || backends > 64) {
      throw new IllegalArgumentException("events/s >= events/batch, backends in [1, 64]");
    }
  }

  /** Batches one backend publishes at most in the run, with room to spare. */
  static int maxBatches(double seconds, int eventsPerSecond, int backends, int perBatch) {
    double batchesPerSecond = (double) eventsPerSecond / perBatch;
    return (int) Math.ceil(batchesPerSecond * seconds / backends) + 16;
  }

  /**
   * Publishes for {@code seconds} from now at {@code eventsPerSecond} (batches round-robin over the
   * publishers, each sent when it is due: the thread sleeps until then), stamping each batch's wall
   * time ({@link #wallNanos}) just before it is sent (or dropped: kept for replay only) into {@code
   * sentAt[backend][seq]}; the batch's {@code ts} carries the same time, in seconds. Returns the
   * batches published per backend.
   */
  static long[] publish(
      List<WirePublisher> pubs,
      byte[][][] payloads,
      double seconds,
      int eventsPerSecond,
      double dropRate,
      int perBatch,
      long[][] sentAt) {
    int backends = pubs.size();
    double batchesPerSecond = (double) eventsPerSecond / perBatch;
    SplittableRandom drops = new SplittableRandom(17);
    long[] seqs = new long[backends];
    long total = 0;
    long start = System.nanoTime();
    long duration = (long) (seconds * 1e9);
    while (true) {
      long now = System.nanoTime();
      if (now - start >= duration) {
        return seqs;
      }
      long due = (long) ((now - start) / 1e9 * batchesPerSecond);
      while (total < due) {
        int b = (int) (total % backends);
        int k = (int) seqs[b]++;
        // in place, no copy: the slot is reused RING batches later, when the replay buffer
        // (PUBLISHER_BUFFER < RING) and the socket have long let go of it
        byte[] payload = payloads[b][k % RING];
        long wall = wallNanos();
        ByteBuffer.wrap(payload, 2, 8).putDouble(wall / 1e9);
        if (k < sentAt[b].length) {
          sentAt[b][k] = wall;
        }
        if (dropRate > 0 && drops.nextDouble() < dropRate) {
          pubs.get(b).drop(payload);
        } else {
          pubs.get(b).publish(payload);
        }
        total++;
      }
      // until the next batch is due (one wake-up per batch, like an engine's step); a late
      // wake-up sends what is due at once, each stamped when it is sent
      long nextAt = start + (long) Math.ceil((total + 1) / batchesPerSecond * 1e9);
      LockSupport.parkNanos(Math.max(1_000, nextAt - System.nanoTime()));
    }
  }

  /**
   * Epoch nanoseconds of this process's {@link System#nanoTime} origin: {@link Instant#now} read
   * between two {@code nanoTime} reads, the closest pair of 2,000 (calibrated once per process; on
   * Linux {@code Instant.now} is {@code clock_gettime(CLOCK_REALTIME)}, so two processes on one
   * host agree to a few microseconds, plus the clock's drift during a run).
   */
  static final long WALL_OFFSET = calibrate();

  /** The wall clock in epoch nanoseconds, as {@code nanoTime} plus {@link #WALL_OFFSET}. */
  static long wallNanos() {
    return System.nanoTime() + WALL_OFFSET;
  }

  private static long calibrate() {
    long bestGap = Long.MAX_VALUE;
    long offset = 0;
    for (int i = 0; i < 2_000; i++) {
      long t0 = System.nanoTime();
      Instant w = Instant.now();
      long t1 = System.nanoTime();
      if (t1 - t0 < bestGap) {
        bestGap = t1 - t0;
        offset = w.getEpochSecond() * 1_000_000_000L + w.getNano() - (t0 + (t1 - t0) / 2);
      }
    }
    return offset;
  }

  private static void sleepUntilWall(long wall) throws InterruptedException {
    long left = wall - wallNanos();
    if (left > 0) {
      Thread.sleep(left / 1_000_000, (int) (left % 1_000_000));
    }
  }

  /** What receives the batches in this process. */
  private interface Receiver extends AutoCloseable {
    /** Subscribes backend {@code b} to {@code endpoints[b]} (PUB, replay ROUTER). */
    void subscribe(String[][] endpoints);

    /** Batches applied (or received) so far; {@code sinkCount} is what the sink counted. */
    long applied(AtomicLong sinkCount);

    /** Batches applied (or received) out of order; {@code sinkCount} is what the sink counted. */
    long outOfOrder(AtomicLong sinkCount);

    KvEventStats.@Nullable Snapshot stats();

    @Override
    void close() throws Exception;
  }

  private static Receiver receiver(Mode mode, KvEventSubscriber.Sink sink, long[][] receivedAt) {
    if (mode == Mode.BARE) {
      return new Receiver() {
        private @Nullable BareReceiver bare;

        @Override
        public void subscribe(String[][] endpoints) {
          bare =
              new BareReceiver(
                  Arrays.stream(endpoints).map(e -> e[0]).toArray(String[]::new), receivedAt);
        }

        @Override
        public long applied(AtomicLong sinkCount) {
          return bare == null ? 0 : bare.received();
        }

        @Override
        public long outOfOrder(AtomicLong sinkCount) {
          return bare == null ? 0 : bare.outOfOrder();
        }

        @Override
        public KvEventStats.@Nullable Snapshot stats() {
          return null;
        }

        @Override
        public void close() throws InterruptedException {
          if (bare != null) {
            bare.close();
          }
        }
      };
    }
    KvEventSubscriber sub =
        KvEventSubscriber.builder(sink)
            // a fresh loopback connection JeroMQ leaves stalled (1-6 % of them on a loaded 2-core
            // host) is made again after 1 s, well inside the publishers' replay buffer; a silent
            // stream is never reopened (it would lose what is published meanwhile)
            .handshakeTimeout(Duration.ofSeconds(1))
            .idleReconnect(Duration.ofMinutes(10))
            .applyOnIoThread(mode == Mode.IO)
            .build();
    return new Receiver() {
      @Override
      public void subscribe(String[][] endpoints) {
        for (int b = 0; b < endpoints.length; b++) {
          sub.subscribe("b" + b, endpoints[b][0], endpoints[b][1]);
        }
      }

      @Override
      public long applied(AtomicLong sinkCount) {
        return sinkCount.get();
      }

      @Override
      public long outOfOrder(AtomicLong sinkCount) {
        return sinkCount.get();
      }

      @Override
      public KvEventStats.Snapshot stats() {
        return sub.stats();
      }

      @Override
      public void close() {
        sub.close();
      }
    };
  }

  /** Where the batches come from: publishers in this process or in a child JVM. */
  private interface Publishers extends AutoCloseable {
    /** Per backend, the PUB and the replay ROUTER endpoint. */
    String[][] endpoints();

    /** Waits for the subscriptions, starts publishing; returns the start, wall ns. */
    long start() throws Exception;

    /** Whether publishing has ended, waiting up to {@code millis}. */
    boolean awaitDone(long millis) throws Exception;

    /** Fills in the publish times ({@code sentAt[backend][seq]}); returns the batches published. */
    long published(long[][] sentAt) throws Exception;

    /** CPU time of the publishing process, s, or NaN when it is this process. */
    double cpuSeconds();

    @Override
    void close() throws Exception;
  }

  /** The publishers on a thread of this process (the soak's original set-up). */
  private static final class LocalPublishers implements Publishers {
    private final List<WirePublisher> pubs = new ArrayList<>();
    private final byte[][][] payloads;
    private final double seconds;
    private final int rate;
    private final double drop;
    private final int perBatch;
    private final long[][] sentAt;
    private long[] counts;
    private Thread thread;

    LocalPublishers(double seconds, int rate, int backends, double drop, int perBatch) {
      this.seconds = seconds;
      this.rate = rate;
      this.drop = drop;
      this.perBatch = perBatch;
      this.payloads = new byte[backends][RING][];
      this.sentAt = new long[backends][maxBatches(seconds, rate, backends, perBatch)];
      for (int b = 0; b < backends; b++) {
        encode(b, payloads[b], new long[RING], perBatch / 2);
        pubs.add(new WirePublisher("", PUBLISHER_BUFFER));
      }
    }

    @Override
    public String[][] endpoints() {
      return pubs.stream()
          .map(p -> new String[] {p.endpoint(), p.replayEndpoint()})
          .toArray(String[][]::new);
    }

    @Override
    public long start() {
      for (WirePublisher p : pubs) {
        p.awaitSubscriber(Duration.ofSeconds(20));
      }
      long start = wallNanos();
      thread =
          new Thread(
              () -> counts = publish(pubs, payloads, seconds, rate, drop, perBatch, sentAt),
              "kv-soak-publisher");
      thread.start();
      return start;
    }

    @Override
    public boolean awaitDone(long millis) throws InterruptedException {
      thread.join(millis);
      return !thread.isAlive();
    }

    @Override
    public long published(long[][] out) {
      long total = 0;
      for (int b = 0; b < counts.length; b++) {
        System.arraycopy(sentAt[b], 0, out[b], 0, sentAt[b].length);
        total += counts[b];
      }
      return total;
    }

    @Override
    public double cpuSeconds() {
      return Double.NaN;
    }

    @Override
    public void close() {
      pubs.forEach(WirePublisher::close);
    }
  }

  /**
   * The publishers in a child JVM ({@link KvPublish}), so that the router's process runs only the
   * subscriber, the index and JeroMQ's I/O thread, as in production, where the engines are other
   * processes (usually on other hosts). The child reports its endpoints, its start and at the end
   * its publish times (a file); it keeps serving replays until closed.
   */
  private static final class ChildPublishers implements Publishers {
    private final Process child;
    private final BufferedReader out;
    private final BufferedWriter in;
    private final Path times;
    private final int backends;
    private final String[][] endpoints;
    private double cpuSeconds = Double.NaN;

    ChildPublishers(double seconds, int rate, int backends, double drop, int perBatch)
        throws IOException {
      this.backends = backends;
      this.times = Files.createTempFile("kv-soak-times", ".bin");
      String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
      // Serial: no GC worker threads to compete for the host's cores; pre-touched: no page faults
      // in a collection's copy (a pause between a batch's stamp and its send counts as lag)
      List<String> command =
          new ArrayList<>(
              List.of(javaBin, "-Xms256m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:+AlwaysPreTouch"));
      String extra = System.getProperty("kvsoak.childJvmArgs", "").trim(); // e.g. a GC log
      if (!extra.isEmpty()) {
        command.addAll(List.of(extra.split("\\s+")));
      }
      command.addAll(
          List.of(
              "-cp",
              System.getProperty("java.class.path"),
              KvPublish.class.getName(),
              Double.toString(seconds),
              Integer.toString(rate),
              Integer.toString(backends),
              Double.toString(drop),
              Integer.toString(perBatch),
              times.toString()));
      child = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
      out =
          new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
      in =
          new BufferedWriter(
              new OutputStreamWriter(child.getOutputStream(), StandardCharsets.UTF_8));
      endpoints = new String[backends][];
      for (int b = 0; b < backends; b++) {
        String[] f = expect("ENDPOINT").split(" ");
        endpoints[Integer.parseInt(f[1])] = new String[] {f[2], f[3]};
      }
    }

    /** The child's next line, which must start with {@code word}. */
    private String expect(String word) throws IOException {
      String line = out.readLine();
      if (line == null || !line.startsWith(word)) {
        throw new IllegalStateException("kv-publish said '" + line + "', expected " + word);
      }
      return line;
    }

    @Override
    public String[][] endpoints() {
      return endpoints;
    }

    @Override
    public long start() throws IOException {
      return Long.parseLong(expect("START").split(" ")[1]);
    }

    private @Nullable Thread doneReader;
    private volatile @Nullable IOException doneFailed;

    @Override
    public boolean awaitDone(long millis) throws IOException, InterruptedException {
      if (doneReader == null) {
        // blocks on the child's output instead of polling it: no wake-ups in the measured JVM
        Thread t =
            new Thread(
                () -> {
                  try {
                    expect("DONE");
                  } catch (IOException | RuntimeException e) {
                    doneFailed = e instanceof IOException io ? io : new IOException(e);
                  }
                },
                "kv-soak-await-publishers");
        t.setDaemon(true);
        t.start();
        doneReader = t;
      }
      doneReader.join(millis);
      IOException failed = doneFailed;
      if (failed != null) {
        throw failed;
      }
      return !doneReader.isAlive();
    }

    @Override
    public long published(long[][] sentAt) throws IOException {
      cpuSeconds = Double.parseDouble(expect("CPU").split(" ")[1]);
      long total = 0;
      try (DataInputStream d =
          new DataInputStream(new BufferedInputStream(Files.newInputStream(times)))) {
        for (int b = 0; b < backends; b++) {
          int count = d.readInt();
          total += count;
          for (int k = 0; k < count; k++) {
            long t = d.readLong();
            if (k < sentAt[b].length) {
              sentAt[b][k] = t;
            }
          }
        }
      }
      return total;
    }

    @Override
    public double cpuSeconds() {
      return cpuSeconds;
    }

    @Override
    public void close() throws Exception {
      try {
        in.close(); // the child stops serving replays and exits
      } catch (IOException e) {
        // gone already
      }
      if (!child.waitFor(10, TimeUnit.SECONDS)) {
        child.destroyForcibly();
      }
      Files.deleteIfExists(times);
    }
  }

  /**
   * The host's scheduling delay: a thread of this process sleeping 10 ms over and over, recording
   * how much later than asked it wakes while measuring.
   */
  private static final class Probe {
    // 100 wake-ups/s: enough samples for a p99, little load on the cores the lag is measured on
    private static final long PROBE_SLEEP_NANOS = 10_000_000;
    private final long[] oversleep;
    private final AtomicLong probes = new AtomicLong();
    private final AtomicBoolean measuring = new AtomicBoolean();
    private final Thread thread;

    Probe(double seconds) {
      oversleep = new long[(int) Math.min(Integer.MAX_VALUE - 8, (long) (seconds * 110))];
      thread = new Thread(this::loop, "kv-soak-scheduling-probe");
      thread.setDaemon(true);
      thread.start();
    }

    private void loop() {
      while (!Thread.currentThread().isInterrupted()) {
        long t0 = System.nanoTime();
        LockSupport.parkNanos(PROBE_SLEEP_NANOS);
        long late = System.nanoTime() - t0 - PROBE_SLEEP_NANOS;
        if (measuring.get()) {
          long at = probes.getAndIncrement();
          if (at < oversleep.length) {
            oversleep[(int) at] = Math.max(0, late);
          }
        }
      }
    }

    void measuring(boolean on) {
      measuring.set(on);
    }

    long[] sorted() {
      long[] s = Arrays.copyOf(oversleep, (int) Math.min(oversleep.length, probes.get()));
      Arrays.sort(s);
      return s;
    }

    void stop() {
      thread.interrupt();
    }
  }

  /** The host's cumulative "some" CPU pressure stall time, µs, or -1 where not available. */
  private static long cpuPressureMicros() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/pressure/cpu"))) {
        if (line.startsWith("some")) {
          int at = line.indexOf("total=");
          return at < 0 ? -1 : Long.parseLong(line.substring(at + 6).trim());
        }
      }
    } catch (IOException | RuntimeException e) {
      return -1;
    }
    return -1;
  }

  /**
   * With {@code -Dkvsoak.lags=FILE}: one line per measured batch, {@code backend seq sentWallNanos
   * lagNanos applyNanos}, to line the tail up with a GC log ({@code -Xlog:gc:...:utctime}).
   */
  private static void dumpLags(
      long[][] sentAt, long[][] appliedAt, long[][] applyTook, int maxBatches, long measureFrom)
      throws IOException {
    String file = System.getProperty("kvsoak.lags");
    if (file == null) {
      return;
    }
    try (BufferedWriter w = Files.newBufferedWriter(Path.of(file), StandardCharsets.UTF_8)) {
      for (int b = 0; b < sentAt.length; b++) {
        for (int k = 0; k < maxBatches; k++) {
          if (sentAt[b][k] >= measureFrom && appliedAt[b][k] != 0) {
            w.write(
                b
                    + " "
                    + k
                    + " "
                    + sentAt[b][k]
                    + " "
                    + (appliedAt[b][k] - sentAt[b][k])
                    + " "
                    + applyTook[b][k]
                    + "\n");
          }
        }
      }
    }
  }

  /** Collections and their accumulated milliseconds, over every collector. */
  private static long[] gc() {
    long count = 0;
    long millis = 0;
    for (java.lang.management.GarbageCollectorMXBean g :
        ManagementFactory.getGarbageCollectorMXBeans()) {
      count += Math.max(0, g.getCollectionCount());
      millis += Math.max(0, g.getCollectionTime());
    }
    return new long[] {count, millis};
  }

  static long cpuNanos() {
    java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
    if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
      return sun.getProcessCpuTime();
    }
    return 0;
  }

  private static double percentile(long[] sorted, double p) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    return sorted[(int) Math.min(sorted.length - 1, Math.floor(p * sorted.length))] / 1e6;
  }

  private static double heapAfterGc() {
    for (int i = 0; i < 3; i++) {
      System.gc();
    }
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed() / (1024.0 * 1024);
  }

  /** Backend {@code b}'s ring of payloads; {@code firstHash[i]} = batch i's first stored hash. */
  static void encode(int b, byte[][] payloads, long[] firstHash, int stores) {
    SplittableRandom rnd = new SplittableRandom(1_000 + b);
    long[][][] seqs = new long[RING][stores][BLOCKS];
    int[][][] tokens = new int[RING][stores][BLOCKS * BLOCK];
    for (int i = 0; i < RING; i++) {
      for (int j = 0; j < stores; j++) {
        for (int k = 0; k < BLOCKS; k++) {
          seqs[i][j][k] = rnd.nextLong();
        }
        for (int k = 0; k < BLOCKS * BLOCK; k++) {
          tokens[i][j][k] = rnd.nextInt(150_000);
        }
      }
    }
    KvWire.Encoding enc = b % 2 == 0 ? KvWire.Encoding.ARRAY : KvWire.Encoding.MAP;
    for (int i = 0; i < RING; i++) {
      List<KvEvent> events = new ArrayList<>(2 * stores);
      for (int j = 0; j < stores; j++) {
        events.add(new BlockStored(seqs[i][j], null, tokens[i][j], BLOCK, "GPU"));
      }
      int old = (i - LIVE + RING) % RING;
      for (int j = 0; j < stores; j++) {
        events.add(new BlockRemoved(seqs[old][j], "GPU"));
      }
      payloads[i] = KvWire.encode(0, events, enc);
      firstHash[i] = seqs[i][0][0];
    }
  }
}
