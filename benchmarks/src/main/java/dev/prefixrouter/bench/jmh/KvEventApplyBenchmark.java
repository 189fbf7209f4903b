package dev.prefixrouter.bench.jmh;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BlockRemoved;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.KvEvent;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.bench.kv.KvWire;
import dev.prefixrouter.radix.BlockHashers;
import dev.prefixrouter.radix.RadixPrefixIndex;
import dev.prefixrouter.vllm.KvEventDecoder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * KV-event decode + apply on one thread, through the subscriber's own path: {@link
 * KvEventDecoder#decode} of a msgpack {@code EventBatch} payload (as vLLM publishes it, {@link
 * KvWire}), then {@code RoutingEngine::applyKvEvents} (the subscriber's sink) into a {@link
 * RadixPrefixIndex}. Throughput in <b>block events</b>: every block a {@code BlockStored} stores
 * and every hash a {@code BlockRemoved} removes counts one.
 *
 * <p>Each batch (one engine step) stores a new 16-block sequence (256 random token ids, re-hashed
 * by the index; random 64-bit engine hashes, half of them above {@code Long.MAX_VALUE}, so uint64
 * on the wire) in events of {@code blocksPerEvent} blocks chained by parent hash (16: a prefill; 1:
 * decode steps filling one block each), and removes the 16 blocks of the sequence stored 512
 * batches earlier: 32 block events per batch, 8,192 blocks resident, the index in steady state. A
 * ring of 2,048 pre-encoded payloads is replayed in order. {@code decodeOnly} is the decode alone.
 *
 * <pre>java -jar benchmarks/target/benchmarks.jar jmh KvEventApplyBenchmark -f 1 -wi 2 -i 3 -w 1
 * -r 1 -prof gc</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(
    value = 1,
    jvmArgs = {"-Xms1g", "-Xmx1g"})
public class KvEventApplyBenchmark {
  private static final int BLOCK = 16;
  private static final int SEQ_BLOCKS = 16;
  private static final int RING = 2048;
  private static final int LIVE = 512;
  private static final int BLOCK_EVENTS = 2 * SEQ_BLOCKS;

  /** Blocks per {@code BlockStored}: 16 (prefill) or 1 (decode). */
  @Param({"16", "1"})
  public int blocksPerEvent;

  /** The event layout: tagged arrays (vLLM up to 0.23) or tagged maps (0.26). */
  @Param({"ARRAY", "MAP"})
  public KvWire.Encoding encoding;

  private byte[][] payloads;
  private RoutingEngine engine;
  private int next;
  private long sink;

  @Setup
  public void setup() {
    SplittableRandom rnd = new SplittableRandom(11);
    long[][] hashes = new long[RING][SEQ_BLOCKS];
    int[][] tokens = new int[RING][SEQ_BLOCKS * BLOCK];
    for (int s = 0; s < RING; s++) {
      for (int i = 0; i < SEQ_BLOCKS; i++) {
        hashes[s][i] = rnd.nextLong();
      }
      for (int i = 0; i < tokens[s].length; i++) {
        tokens[s][i] = rnd.nextInt(150_000);
      }
    }
    payloads = new byte[RING][];
    for (int s = 0; s < RING; s++) {
      List<KvEvent> events = new ArrayList<>();
      for (int from = 0; from < SEQ_BLOCKS; from += blocksPerEvent) {
        long[] h = java.util.Arrays.copyOfRange(hashes[s], from, from + blocksPerEvent);
        int[] t =
            java.util.Arrays.copyOfRange(tokens[s], from * BLOCK, (from + blocksPerEvent) * BLOCK);
        Long parent = from == 0 ? null : hashes[s][from - 1];
        events.add(new BlockStored(h, parent, t, BLOCK, "GPU"));
      }
      events.add(new BlockRemoved(hashes[(s - LIVE + RING) % RING], "GPU"));
      payloads[s] = KvWire.encode(1.7e9 + s * 0.01, events, encoding);
    }
    RadixPrefixIndex index = RadixPrefixIndex.builder().predictionTtl(Duration.ZERO).build();
    engine =
        RoutingEngine.builder()
            .hasher(BlockHashers.tokens(BLOCK))
            .prefixIndex(index)
            .backend(Backend.of("b0", "m").withCapacityBlocks(100_000))
            .build();
    for (int i = 0; i < RING; i++) { // one pass: the ring's removals now find their blocks
      decodeAndApply();
    }
    long held = index.heldBlocks(0);
    if (held != (long) LIVE * SEQ_BLOCKS) { // the events must really land, not be skipped
      throw new IllegalStateException("held " + held + " blocks, expected " + LIVE * SEQ_BLOCKS);
    }
  }

  @TearDown(Level.Trial)
  public void check() {
    if (sink == 42) {
      System.out.println(); // keeps the decode-only result alive
    }
  }

  /** Decode + apply of one batch (32 block events). */
  @Benchmark
  @OperationsPerInvocation(BLOCK_EVENTS)
  public boolean decodeAndApply() {
    byte[] payload = payloads[next++ & (RING - 1)];
    try {
      return engine.applyKvEvents("b0", KvEventDecoder.decode(payload).events());
    } catch (KvEventDecoder.DecodeException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Decode alone of one batch (32 block events). */
  @Benchmark
  @OperationsPerInvocation(BLOCK_EVENTS)
  public int decodeOnly() {
    byte[] payload = payloads[next++ & (RING - 1)];
    try {
      return KvEventDecoder.decode(payload).events().size();
    } catch (KvEventDecoder.DecodeException e) {
      throw new IllegalStateException(e);
    }
  }
}
