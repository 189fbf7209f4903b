package dev.prefixrouter.radix;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.SplittableRandom;
import net.openhft.hashing.LongHashFunction;
import org.junit.jupiter.api.Test;

/**
 * {@link CityHash64} returns zero-allocation-hashing's {@code city_1_1} values: the token keys must
 * not change when the library is dropped (replicas of two versions share keys through Redis).
 */
class CityHash64Test {
  private static final LongHashFunction REFERENCE = LongHashFunction.city_1_1();

  @Test
  void everyLengthUpTo4400BytesMatchesTheLibraryAtSeveralOffsets() {
    // the 0, 1-3, 4-7, 8-16, 17-32, 33-64 byte paths and 1 to 68 chunks of 64
    SplittableRandom rnd = new SplittableRandom(42);
    for (int len = 0; len <= 4400; len++) {
      for (int off = 0; off < 9; off += 3) {
        byte[] b = new byte[off + len + 5];
        rnd.nextBytes(b);
        assertThat(CityHash64.hash(b, off, len))
            .as("len=%d off=%d", len, off)
            .isEqualTo(REFERENCE.hashBytes(b, off, len));
      }
    }
  }

  private static byte[] littleEndian(int[] a) {
    byte[] b = new byte[4 * a.length];
    ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).asIntBuffer().put(a);
    return b;
  }

  @Test
  void blocksOfEveryAcceptedSizeMatchTheLibrary() {
    SplittableRandom rnd = new SplittableRandom(7);
    for (int n : new int[] {1, 2, 3, 4, 5, 8, 15, 16, 17, 31, 32, 33, 64, 256, 1024, 4095, 4096}) {
      int[] a = rnd.ints(n, 0, 200_000).toArray();
      assertThat(CityHash64.hash(littleEndian(a), 0, 4 * n))
          .as("n=%d", n)
          .isEqualTo(REFERENCE.hashInts(a));
    }
  }

  @Test
  void randomRunsMatchTheLibrary() {
    qt().forAll(lists().of(integers().all()).ofSizeBetween(0, 300), integers().between(0, 300))
        .checkAssert(
            (ids, cut) -> {
              int[] a = ids.stream().mapToInt(Integer::intValue).toArray();
              int off = Math.min(cut, a.length);
              int n = a.length - off;
              assertThat(CityHash64.hash(littleEndian(a), 4 * off, 4 * n))
                  .isEqualTo(REFERENCE.hashInts(a, off, n));
            });
  }

  @Test
  void extremeValuesMatchTheLibrary() {
    for (int v : new int[] {0, -1, Integer.MIN_VALUE, Integer.MAX_VALUE}) {
      for (int n : List.of(1, 4, 16, 40)) {
        int[] a = new int[n];
        java.util.Arrays.fill(a, v);
        assertThat(CityHash64.hash(littleEndian(a), 0, 4 * n)).isEqualTo(REFERENCE.hashInts(a));
      }
    }
  }

  @Test
  void aRunOutsideTheArrayIsRejected() {
    byte[] b = new byte[64];
    assertThatThrownBy(() -> CityHash64.hash(b, 1, 64))
        .isInstanceOf(IndexOutOfBoundsException.class)
        .hasMessageContaining("of 64");
    assertThatThrownBy(() -> CityHash64.hash(b, -1, 2))
        .isInstanceOf(IndexOutOfBoundsException.class);
    assertThatThrownBy(() -> CityHash64.hash(b, 0, -1))
        .isInstanceOf(IndexOutOfBoundsException.class);
  }
}
