package dev.prefixrouter.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class PredictionCodecTest {
  private static final byte[] ORIGIN = "replica-1".getBytes(StandardCharsets.UTF_8);

  private static PredictionBuffer.Batch batch(int records, int keysEach) {
    PredictionBuffer buffer = new PredictionBuffer(records, records * keysEach);
    for (int r = 0; r < records; r++) {
      long[] keys = new long[keysEach];
      long base = 1000L * (records - r) - 7;
      Arrays.setAll(keys, k -> base + k);
      assertThat(buffer.offer("b" + r, keys, keysEach)).isTrue();
    }
    return buffer.take();
  }

  private static List<String> decode(List<PredictionCodec.Entry> entries) {
    List<String> out = new ArrayList<>();
    for (PredictionCodec.Entry e : entries) {
      PredictionCodec.Reader r = new PredictionCodec.Reader(e.bytes(), new long[1]);
      assertThat(r.origin()).isEqualTo("replica-1");
      int n = 0;
      while (r.next()) {
        out.add(r.backendId + KeyRecordingIndex.entry(0, r.keys, r.keyCount));
        n++;
      }
      assertThat(n).isEqualTo(e.records());
    }
    return out;
  }

  @Test
  void roundTripsEveryRecordInOrderAcrossEntries() {
    PredictionBuffer.Batch b = batch(10, 100);
    List<PredictionCodec.Entry> one = PredictionCodec.encode(ORIGIN, b, 1 << 20);
    List<PredictionCodec.Entry> split = PredictionCodec.encode(ORIGIN, b, 2_000);
    assertThat(one).hasSize(1);
    assertThat(split).hasSize(5); // 2 records of 806 bytes each per 2,000-byte entry
    assertThat(split).allMatch(e -> e.bytes().length <= 2_000);
    assertThat(decode(split)).isEqualTo(decode(one)).hasSize(10);
    assertThat(decode(one).get(3)).isEqualTo("b30:" + Arrays.toString(b.keysOf(3)));
  }

  @Test
  void refusesARecordLargerThanAnEntry() {
    assertThatThrownBy(() -> PredictionCodec.encode(ORIGIN, batch(1, 300), 1_000))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("over the entry bound 1000");
  }

  @Test
  void aFullBatchRefusesARecordAndCopiesNothing() {
    PredictionBuffer buffer = new PredictionBuffer(4, 10);
    assertThat(buffer.offer("b", new long[] {1, 2, 3, 4, 5, 6}, 6)).isTrue();
    assertThat(buffer.offer("b", new long[] {7, 8, 9, 10, 11}, 5)).isFalse(); // 11 keys > 10
    assertThat(buffer.offer("b", new long[] {7, 8, 9, 10, 11}, 4)).isTrue();
    PredictionBuffer.Batch b = buffer.take();
    assertThat(b.records).isEqualTo(2);
    assertThat(Arrays.copyOf(b.keys, b.used)).containsExactly(1, 2, 3, 4, 5, 6, 7, 8, 9, 10);
    assertThat(buffer.take().isEmpty()).isTrue(); // the spare batch
  }

  @Test
  void anyTruncationOrCorruptionIsRefusedWithIllegalArgumentOnly() {
    byte[] good = PredictionCodec.encode(ORIGIN, batch(3, 5), 1 << 16).get(0).bytes();
    qt().withExamples(2_000)
        .forAll(integers().between(0, good.length - 1), integers().between(-128, 127))
        .checkAssert(
            (cut, value) -> {
              byte[] corrupt = good.clone();
              corrupt[cut] = (byte) (int) value;
              for (byte[] bad : new byte[][] {Arrays.copyOf(good, cut), corrupt}) {
                try {
                  PredictionCodec.Reader r = new PredictionCodec.Reader(bad, new long[1]);
                  int records = 0;
                  while (r.next()) {
                    assertThat(r.keyCount).isBetween(0, PredictionCodec.MAX_KEYS_PER_RECORD);
                    records++;
                  }
                  assertThat(records).isLessThanOrEqualTo(3);
                } catch (IllegalArgumentException expected) {
                  // refused: the only allowed failure
                }
              }
            });
    PredictionCodec.Reader r = new PredictionCodec.Reader(good, new long[1]);
    assertThatThrownBy(() -> new PredictionCodec.Reader(Arrays.copyOf(good, 3), new long[1]))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(r.next()).isTrue();
  }
}
