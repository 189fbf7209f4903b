package dev.prefixrouter.bench.jmh;

import com.dynatrace.hash4j.hashing.Hasher64;
import com.dynatrace.hash4j.hashing.Hashing;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.radix.BlockHashers;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import net.openhft.hashing.LongHashFunction;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Block hashing throughput: chained keys of a token prompt (16-token blocks) and of a text prompt
 * (64-char blocks), written into a reused buffer as the engine does.
 *
 * <p>The {@code chain*} benchmarks compare block hash functions side by side on the same token ids:
 * each 16-token block (64 bytes) hashed on its own and folded into the chain as the token hasher
 * does. {@code tokenBlocks} is {@code BlockHashers.tokens} itself: CityHash64 1.1 written in
 * router-radix, over the ids copied little-endian into a byte buffer in chunks of 256 (no {@code
 * Unsafe}); {@code chainZahCity} gives the same keys through zero-allocation-hashing (which reads
 * with {@code sun.misc.Unsafe}) straight from the ids; the hash4j variants first write the ids of a
 * block little-endian into a 64-byte buffer (hash4j hashes bytes), as a hasher built on it would.
 *
 * <pre>java -jar benchmarks/target/benchmarks.jar jmh HashBenchmark -prof gc</pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class HashBenchmark {
  @Param({"1024", "8192", "32768"})
  int tokens;

  private final BlockHasher tokenHasher = BlockHashers.tokens(16);
  private final BlockHasher charHasher = BlockHashers.chars(64);
  private Prompt tokenPrompt;
  private Prompt textPrompt;
  private long[] out;

  @Setup
  public void setup() {
    SplittableRandom rnd = new SplittableRandom(42);
    ids = new int[tokens];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = rnd.nextInt(150_000);
    }
    tokenPrompt = Prompt.ofTokens(ids);
    StringBuilder sb = new StringBuilder(tokens * 4);
    for (int i = 0; i < tokens * 4; i++) {
      sb.append((char) ('a' + rnd.nextInt(26)));
    }
    textPrompt = Prompt.ofText(sb.toString());
    out = new long[tokens]; // at least one slot per block of either hasher
  }

  @Benchmark
  public long tokenBlocks() {
    int n = tokenHasher.keys(tokenPrompt, 0, out);
    return out[n - 1];
  }

  private static final LongHashFunction ZAH_CITY = LongHashFunction.city_1_1();
  private static final LongHashFunction ZAH_XX3 = LongHashFunction.xx3();
  private static final Hasher64 H4J_FARM_NA = Hashing.farmHashNa();
  private static final Hasher64 H4J_XXH3 = Hashing.xxh3_64();
  private static final Hasher64 H4J_KOMI5 = Hashing.komihash5_0();
  private static final Hasher64 H4J_WY4 = Hashing.wyhashFinal4();
  private static final VarHandle INT_LE =
      MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
  private static final int BLOCK = 16;

  private int[] ids;
  private final byte[] blockBytes = new byte[4 * BLOCK];

  /** The token hasher's fold (a copy, to compare hash functions under the same chain). */
  private static long chain(long prev, long block) {
    long z = (prev ^ block) * 0x9E3779B97F4A7C15L + block;
    z = (z ^ (z >>> 32)) * 0xD6E8FEB86659FD93L;
    return z ^ (z >>> 32);
  }

  private long chainZah(LongHashFunction f) {
    long prev = 0;
    for (int b = 0, blocks = ids.length / BLOCK; b < blocks; b++) {
      prev = chain(prev, f.hashInts(ids, b * BLOCK, BLOCK));
      out[b] = prev;
    }
    return prev;
  }

  private long chainHash4j(Hasher64 f) {
    long prev = 0;
    byte[] bytes = blockBytes;
    for (int b = 0, blocks = ids.length / BLOCK; b < blocks; b++) {
      int base = b * BLOCK;
      for (int j = 0; j < BLOCK; j++) {
        INT_LE.set(bytes, 4 * j, ids[base + j]);
      }
      prev = chain(prev, f.hashBytesToLong(bytes, 0, bytes.length));
      out[b] = prev;
    }
    return prev;
  }

  @Benchmark
  public long chainZahCity() {
    return chainZah(ZAH_CITY);
  }

  @Benchmark
  public long chainZahXxh3() {
    return chainZah(ZAH_XX3);
  }

  @Benchmark
  public long chainHash4jFarmNa() {
    return chainHash4j(H4J_FARM_NA);
  }

  @Benchmark
  public long chainHash4jXxh3() {
    return chainHash4j(H4J_XXH3);
  }

  @Benchmark
  public long chainHash4jKomihash5() {
    return chainHash4j(H4J_KOMI5);
  }

  @Benchmark
  public long chainHash4jWyhashFinal4() {
    return chainHash4j(H4J_WY4);
  }

  @Benchmark
  public long textBlocks() {
    int n = charHasher.keys(textPrompt, 0, out);
    return out[n - 1];
  }
}
