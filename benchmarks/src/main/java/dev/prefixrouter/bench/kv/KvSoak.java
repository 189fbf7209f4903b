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
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * KV events at a fixed rate through the real wire: {@code backends} {@link WirePublisher}s on
 * loopback (PUB + replay ROUTER) publish pre-encoded {@code EventBatch}es (even backends in the
 * array layout, odd ones in the map layout) to one {@link KvEventSubscriber}, which applies them to
 * a {@link RoutingEngine} with a {@link RadixPrefixIndex}. One batch = one engine step = {@code
 * eventsPerBatch} events: half {@code BlockStored} of a new 2-block sequence (32 token ids) each,
 * half {@code BlockRemoved} of the sequences stored 128 batches earlier, so each backend holds a
 * steady number of blocks. A share {@code dropRate} of batches is not sent (kept in the publisher's
 * replay buffer of 200 batches), so the subscriber sees gaps and replays them.
 *
 * <p>Measured: the lag of each batch from its publish (or drop) time to the return of the engine's
 * {@code applyKvEvents} on the subscriber's apply thread (p50, p99, max, after a 2 s warm-up); the
 * used heap after GC at the end of the warm-up (the index and the publishers' replay buffers are
 * full by then) and after the run; loss (every published batch applied once, in order, checked by
 * its first block hash) and the subscriber's counters.
 *
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar kv-soak [seconds] [events/s] [backends] [drop]
 *     [events/batch]
 * </pre>
 */
public final class KvSoak {
  private static final int RING = 512;
  private static final int LIVE = 128;
  private static final int BLOCKS = 2;
  private static final int BLOCK = 16;
  private static final long WARMUP_NANOS = 2_000_000_000L;
  private static final int PUBLISHER_BUFFER = 200;

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
   * @param stats the subscriber's counters at the end
   * @param applyP99Millis of the lag, the sink's own time ({@code applyKvEvents}), 99th percentile
   * @param gcCount garbage collections during the measured part
   * @param gcMillis their accumulated time, ms
   * @param applyOnIoThread whether the subscriber applied on its I/O thread
   * @param probeP99Millis the host's scheduling delay meanwhile: how much later than asked a thread
   *     of this process woke from 1 ms sleeps, 99th percentile
   * @param probeMaxMillis the same, maximum
   * @param cpuPressure share of the run during which some task of the host waited for a CPU ({@code
   *     /proc/pressure/cpu} "some"), or NaN where not available
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
      KvEventStats.Snapshot stats,
      double applyP99Millis,
      long gcCount,
      double gcMillis,
      boolean applyOnIoThread,
      double probeP99Millis,
      double probeMaxMillis,
      double cpuPressure) {}

  private KvSoak() {}

  /**
   * Command line: {@code [seconds] [events/s] [backends] [drop] [events/batch] [queue|io]
   * [apply|noapply]}, defaults 20, 100000, 4, 0.002, 100, queue ({@code io}: {@code
   * KvEventSubscriber.Builder.applyOnIoThread}), apply ({@code noapply}: the sink does not touch
   * the index, to measure the wire, decode and hand-off alone).
   */
  public static void main(String[] args) throws Exception {
    double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 20;
    int rate = args.length > 1 ? Integer.parseInt(args[1]) : 100_000;
    int backends = args.length > 2 ? Integer.parseInt(args[2]) : 4;
    double drop = args.length > 3 ? Double.parseDouble(args[3]) : 0.002;
    int perBatch = args.length > 4 ? Integer.parseInt(args[4]) : 100;
    boolean io = args.length > 5 && args[5].equals("io");
    boolean apply = !(args.length > 6 && args[6].equals("noapply"));
    Result r = run(seconds, rate, backends, drop, perBatch, io, apply, System.out);
    System.out.println(r);
  }

  /** Runs the soak with the subscriber's apply thread; progress to {@code progress} if not null. */
  public static Result run(
      double seconds,
      int eventsPerSecond,
      int backendCount,
      double dropRate,
      int eventsPerBatch,
      PrintStream progress)
      throws InterruptedException {
    return run(
        seconds, eventsPerSecond, backendCount, dropRate, eventsPerBatch, false, true, progress);
  }

  /** Runs the soak; progress every 5 s to {@code progress} if not null. */
  public static Result run(
      double seconds,
      int eventsPerSecond,
      int backendCount,
      double dropRate,
      int eventsPerBatch,
      boolean applyOnIoThread,
      boolean apply,
      PrintStream progress)
      throws InterruptedException {
    if (seconds <= 3 || seconds > 3600 || eventsPerBatch < 2 || eventsPerBatch > 10_000) {
      throw new IllegalArgumentException("seconds in (3, 3600], events/batch in [2, 10000]");
    }
    if (eventsPerSecond < eventsPerBatch || backendCount < 1 || backendCount > 64) {
      throw new IllegalArgumentException("events/s >= events/batch, backends in [1, 64]");
    }
    int stores = eventsPerBatch / 2;
    int perBatch = 2 * stores;
    double batchesPerSecond = (double) eventsPerSecond / perBatch;
    int maxBatches = (int) Math.ceil(batchesPerSecond * seconds / backendCount) + 16;
    long[][] published = new long[backendCount][maxBatches]; // nanoTime per seq
    long[][] firstHash = new long[backendCount][RING];
    byte[][][] payloads = new byte[backendCount][RING][];
    for (int b = 0; b < backendCount; b++) {
      encode(b, payloads[b], firstHash[b], stores);
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
    long[] applied = new long[backendCount]; // apply thread only
    long[] lags = new long[maxBatches * backendCount];
    long[] applyTimes = new long[maxBatches * backendCount];
    AtomicLong lagCount = new AtomicLong();
    AtomicLong appliedTotal = new AtomicLong();
    AtomicLong outOfOrder = new AtomicLong();
    AtomicLong measureFrom = new AtomicLong(Long.MAX_VALUE);
    KvEventSubscriber.Sink sink =
        (id, events) -> {
          int b = Integer.parseInt(id, 1, id.length(), 10);
          long k = applied[b]++;
          long before = System.nanoTime();
          boolean ok = !apply || engine.applyKvEvents(id, events); // noapply: the wire alone
          long now = System.nanoTime();
          if (k >= maxBatches
              || !(events.get(0) instanceof BlockStored s)
              || s.blockHash(0) != firstHash[b][(int) (k % RING)]) {
            outOfOrder.incrementAndGet();
          } else if (published[b][(int) k] >= measureFrom.get()) {
            int at = (int) lagCount.getAndIncrement();
            lags[at] = now - published[b][(int) k];
            applyTimes[at] = now - before;
          }
          appliedTotal.incrementAndGet();
          return ok;
        };
    List<WirePublisher> pubs = new ArrayList<>();
    SplittableRandom drops = new SplittableRandom(17);
    long total = 0;
    double heapStart = Double.NaN;
    long cpuStart = 0;
    long[] gcStart = {0, 0};
    long pressureStart = -1;
    long[] oversleep = new long[(int) Math.min(Integer.MAX_VALUE - 8, (long) (seconds * 1100))];
    AtomicLong probes = new AtomicLong();
    AtomicBoolean probing = new AtomicBoolean();
    Thread probe =
        new Thread(
            () -> {
              while (!Thread.currentThread().isInterrupted()) {
                long t0 = System.nanoTime();
                LockSupport.parkNanos(1_000_000);
                long late = System.nanoTime() - t0 - 1_000_000;
                if (probing.get()) {
                  long at = probes.getAndIncrement();
                  if (at < oversleep.length) {
                    oversleep[(int) at] = Math.max(0, late);
                  }
                }
              }
            },
            "kv-soak-scheduling-probe");
    probe.setDaemon(true);
    probe.start();
    try (KvEventSubscriber sub =
        KvEventSubscriber.builder(sink)
            .idleReconnect(Duration.ofMinutes(10))
            .applyOnIoThread(applyOnIoThread)
            .build()) {
      for (int b = 0; b < backendCount; b++) {
        WirePublisher p = new WirePublisher("", PUBLISHER_BUFFER);
        pubs.add(p);
        sub.subscribe("b" + b, p.endpoint(), p.replayEndpoint());
        p.awaitSubscriber(Duration.ofSeconds(20));
      }
      long start = System.nanoTime();
      long duration = (long) (seconds * 1e9);
      long nextReport = start + 5_000_000_000L;
      long[] seqs = new long[backendCount];
      while (true) {
        long now = System.nanoTime();
        if (now - start >= duration) {
          break;
        }
        if (Double.isNaN(heapStart) && now - start >= WARMUP_NANOS) {
          heapStart = heapAfterGc();
          cpuStart = cpuNanos();
          gcStart = gc();
          pressureStart = cpuPressureMicros();
          probing.set(true);
          measureFrom.set(System.nanoTime());
        }
        long due = (long) ((now - start) / 1e9 * batchesPerSecond);
        while (total < due) {
          int b = (int) (total % backendCount);
          int k = (int) seqs[b]++;
          byte[] payload = payloads[b][k % RING].clone();
          ByteBuffer.wrap(payload, 2, 8).putDouble(System.currentTimeMillis() / 1000.0);
          published[b][k] = System.nanoTime();
          if (dropRate > 0 && drops.nextDouble() < dropRate) {
            pubs.get(b).drop(payload);
          } else {
            pubs.get(b).publish(payload);
          }
          total++;
        }
        if (progress != null && now >= nextReport) {
          nextReport += 5_000_000_000L;
          progress.printf(
              "  %.0f s: published %d, applied %d%n",
              (now - start) / 1e9, total, appliedTotal.get());
        }
        LockSupport.parkNanos(500_000);
      }
      long end = System.nanoTime();
      double cpu = (cpuNanos() - cpuStart) / 1e9;
      long[] gcEnd = gc();
      probing.set(false);
      long pressureEnd = cpuPressureMicros();
      probe.interrupt();
      int probed = (int) Math.min(oversleep.length, probes.get());
      long[] lateSorted = Arrays.copyOf(oversleep, probed);
      Arrays.sort(lateSorted);
      double measuredFor = (end - measureFrom.get()) / 1e3; // µs
      long waitUntil = System.nanoTime() + 20_000_000_000L;
      while (appliedTotal.get() < total && System.nanoTime() < waitUntil) {
        Thread.sleep(10);
      }
      Thread.sleep(200); // anything extra (a duplicate, a clear) would show now
      double heapEnd = heapAfterGc();
      int n = (int) lagCount.get();
      long[] sorted = Arrays.copyOf(lags, n);
      Arrays.sort(sorted);
      long[] applySorted = Arrays.copyOf(applyTimes, n);
      Arrays.sort(applySorted);
      double measuredSeconds = (end - start) / 1e9;
      return new Result(
          measuredSeconds,
          perBatch,
          total,
          appliedTotal.get(),
          outOfOrder.get(),
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
          applyOnIoThread,
          percentile(lateSorted, 0.99),
          probed == 0 ? Double.NaN : lateSorted[probed - 1] / 1e6,
          pressureStart < 0 || pressureEnd < 0
              ? Double.NaN
              : (pressureEnd - pressureStart) / measuredFor);
    } finally {
      pubs.forEach(WirePublisher::close);
    }
  }

  /** The host's cumulative "some" CPU pressure stall time, µs, or -1 where not available. */
  private static long cpuPressureMicros() {
    try {
      for (String line :
          java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/pressure/cpu"))) {
        if (line.startsWith("some")) {
          int at = line.indexOf("total=");
          return at < 0 ? -1 : Long.parseLong(line.substring(at + 6).trim());
        }
      }
    } catch (java.io.IOException | RuntimeException e) {
      return -1;
    }
    return -1;
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

  private static long cpuNanos() {
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
  private static void encode(int b, byte[][] payloads, long[] firstHash, int stores) {
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
