package dev.prefixrouter.bench.jmh;

import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.radix.BlockHashers;
import dev.prefixrouter.radix.RadixPrefixIndex;
import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * {@code recordRouted} throughput in blocks per second on one thread, with the mirror full so that
 * every new block evicts one: paths of 256 new blocks (all inserts + evictions) and re-routing an
 * already held path (all touches). {@code applyStored16}: KV-event apply, a {@code BlockStored} of
 * 16 blocks (256 token ids, re-hashed by the index) with fresh engine hashes, each sequence of 16
 * events chained by parent hash; the translator's mappings reach their bound (2 x capacity + 1,024)
 * and then evict, so the figure shows whether apply stays flat as mappings accumulate.
 *
 * <pre>java -jar benchmarks/target/benchmarks.jar jmh IndexWriteBenchmark -prof gc</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
    value = 1,
    jvmArgs = {"-Xms2g", "-Xmx2g", "-XX:+AlwaysPreTouch"})
public class IndexWriteBenchmark {
  private static final int PATH = 256;
  private RadixPrefixIndex index;
  private long[][] fresh;
  private long[] held;
  private int next;
  private long now;

  @Setup
  public void setup() {
    index = RadixPrefixIndex.builder().predictionTtl(Duration.ZERO).build();
    for (int b = 0; b < 16; b++) {
      index.addBackend(b, 100_000);
    }
    SplittableRandom rnd = new SplittableRandom(3);
    fresh = new long[4096][PATH];
    for (long[] p : fresh) {
      for (int i = 0; i < PATH; i++) {
        p[i] = rnd.nextLong();
      }
    }
    held = fresh[0].clone();
    for (int i = 0; i < 100_000 / PATH + 1; i++) {
      index.recordRouted(fresh[i % fresh.length], fresh[i % fresh.length].length, 0, now++);
    }
    index.recordRouted(held, held.length, 1, now++);
    setupEvents();
  }

  private static final BlockHasher HASHER = BlockHashers.tokens(16);
  private static final int EVENT_SLOT = 16; // the routing benchmarks use slots 0 to 15
  private int[][] eventTokens;
  private long engineHash;
  private int event;

  private void setupEvents() {
    SplittableRandom rnd = new SplittableRandom(5);
    eventTokens = new int[1024][256];
    for (int[] t : eventTokens) {
      for (int i = 0; i < t.length; i++) {
        t[i] = rnd.nextInt(150_000);
      }
    }
    index.addBackend(EVENT_SLOT, 100_000);
  }

  /** One BlockStored of 16 blocks on an event-fed backend (throughput in blocks). */
  @Benchmark
  @OperationsPerInvocation(16)
  public void applyStored16() {
    long[] hashes = new long[16];
    Long parent = event % 16 == 0 ? null : engineHash;
    for (int i = 0; i < 16; i++) {
      hashes[i] = ++engineHash;
    }
    int[] tokens = eventTokens[event++ & 1023];
    index.apply(EVENT_SLOT, new BlockStored(hashes, parent, tokens, 16, null), HASHER, now++);
  }

  /** New paths on a full backend: each block is an insert plus an eviction. */
  @Benchmark
  @OperationsPerInvocation(PATH)
  public void insertAndEvict() {
    long[] p = fresh[next++ & 4095];
    p[0] ^= now; // make the path new every time
    index.recordRouted(p, p.length, 0, now++);
  }

  /** A path the backend already holds: each block is a recency touch. */
  @Benchmark
  @OperationsPerInvocation(PATH)
  public void touchHeld() {
    index.recordRouted(held, held.length, 1, now++);
  }
}
