package dev.prefixrouter.radix;

import static org.assertj.core.api.Assertions.assertThat;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;
import static org.quicktheories.generators.SourceDSL.strings;

import dev.prefixrouter.api.ChatMessage;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import java.util.List;
import net.openhft.hashing.LongHashFunction;
import org.junit.jupiter.api.Test;

/**
 * The hashers give the keys and seeds they gave when built on zero-allocation-hashing (the
 * reference below is that earlier code, on the library): keys shared between replicas of two
 * versions, and namespace seeds the SPI promises never change, stay the same.
 */
class BlockHasherCompatibilityTest {
  private static final LongHashFunction CITY = LongHashFunction.city_1_1();
  private static final LongHashFunction XX3 = LongHashFunction.xx3();

  private static long[] referenceTokenKeys(int[] ids, int blockSize, long seed) {
    long[] keys = new long[ids.length / blockSize];
    long prev = seed;
    for (int i = 0; i < keys.length; i++) {
      prev = TokenBlockHasher.chain(prev, CITY.hashInts(ids, i * blockSize, blockSize));
      keys[i] = prev;
    }
    return keys;
  }

  private static long[] referenceTextKeys(String text, int blockChars, long seed) {
    long[] keys = new long[text.length() / blockChars];
    char[] buf = new char[blockChars + 4];
    long prev = seed;
    for (int i = 0; i < keys.length; i++) {
      buf[0] = (char) prev;
      buf[1] = (char) (prev >>> 16);
      buf[2] = (char) (prev >>> 32);
      buf[3] = (char) (prev >>> 48);
      text.getChars(i * blockChars, (i + 1) * blockChars, buf, 4);
      prev = XX3.hashChars(buf);
      keys[i] = prev;
    }
    return keys;
  }

  private static long[] referenceTokensAsText(int[] ids, int perBlock, long seed) {
    long[] keys = new long[ids.length / perBlock];
    int[] buf = new int[perBlock + 2];
    long prev = seed;
    for (int i = 0; i < keys.length; i++) {
      buf[0] = (int) prev;
      buf[1] = (int) (prev >>> 32);
      System.arraycopy(ids, i * perBlock, buf, 2, perBlock);
      prev = XX3.hashInts(buf);
      keys[i] = prev;
    }
    return keys;
  }

  private static int[] ints(List<Integer> l) {
    return l.stream().mapToInt(Integer::intValue).toArray();
  }

  @Test
  void tokenKeysAreTheLibrarys() {
    qt().forAll(
            lists().of(integers().all()).ofSizeBetween(0, 600),
            integers().between(1, 70),
            integers().all())
        .checkAssert(
            (l, blockSize, seed) -> {
              int[] ids = ints(l);
              assertThat(
                      BlockHasher.keysOf(
                          BlockHashers.tokens(blockSize), Prompt.ofTokens(ids), seed))
                  .isEqualTo(referenceTokenKeys(ids, blockSize, seed));
            });
  }

  @Test
  void textKeysAreTheLibrarys() {
    qt().forAll(
            strings().allPossible().ofLengthBetween(0, 400),
            integers().between(1, 90),
            integers().all())
        .checkAssert(
            (text, blockChars, seed) ->
                assertThat(
                        BlockHasher.keysOf(
                            BlockHashers.chars(blockChars), Prompt.ofText(text), seed))
                    .isEqualTo(referenceTextKeys(text, blockChars, seed)));
  }

  @Test
  void tokenPromptsUnderATextHasherAreTheLibrarys() {
    qt().forAll(
            lists().of(integers().all()).ofSizeBetween(0, 300),
            integers().between(4, 200),
            integers().all())
        .checkAssert(
            (l, blockChars, seed) -> {
              int[] ids = ints(l);
              BlockHasher h = BlockHashers.chars(blockChars);
              assertThat(BlockHasher.keysOf(h, Prompt.ofTokens(ids), seed))
                  .isEqualTo(referenceTokensAsText(ids, h.tokensPerBlock(), seed));
            });
  }

  @Test
  void textAndChatPromptsUnderATokenHasherAreTheLibrarys() {
    String text = "system: you are terse.\u001Euser: héllo wörld — 你好, 🌍 " + "x".repeat(500);
    long seed = 0x1234_5678_9ABC_DEF0L;
    assertThat(BlockHasher.keysOf(BlockHashers.tokens(16), Prompt.ofText(text), seed))
        .isEqualTo(referenceTextKeys(text, 64, seed));
    List<ChatMessage> chat = List.of(ChatMessage.of("system", text), ChatMessage.of("user", "hi"));
    assertThat(BlockHasher.keysOf(BlockHashers.tokens(16), Prompt.ofChat(chat), seed))
        .isEqualTo(referenceTextKeys(BlockHashers.render(chat), 64, seed));
  }

  @Test
  void namespaceSeedsAreTheLibrarys() {
    for (BlockHasher h : new BlockHasher[] {BlockHashers.tokens(16), BlockHashers.chars(64)}) {
      for (String ns :
          List.of("", "t", "tenant-a", "acme/prod", "é", "你好", "🌍", "x".repeat(1000))) {
        assertThat(h.seed(ns)).as(ns).isEqualTo(XX3.hashChars(ns));
      }
      qt().forAll(strings().allPossible().ofLengthBetween(0, 300))
          .checkAssert(ns -> assertThat(h.seed(ns)).isEqualTo(XX3.hashChars(ns)));
    }
  }
}
