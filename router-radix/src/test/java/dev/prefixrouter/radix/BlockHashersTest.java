package dev.prefixrouter.radix;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;
import static org.quicktheories.generators.SourceDSL.strings;

import dev.prefixrouter.api.ChatMessage;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class BlockHashersTest {
  private static final BlockHasher TOKENS = BlockHashers.tokens(4);

  private static int[] ints(List<Integer> l) {
    return l.stream().mapToInt(Integer::intValue).toArray();
  }

  @Test
  void keysAreDeterministicAndOnlyFullBlocksCount() {
    qt().forAll(lists().of(integers().between(0, 50_000)).ofSizeBetween(0, 64), integers().all())
        .checkAssert(
            (ids, seed) -> {
              int[] a = ints(ids);
              long[] k1 = BlockHasher.keysOf(TOKENS, Prompt.ofTokens(a), seed);
              long[] k2 =
                  BlockHasher.keysOf(BlockHashers.tokens(4), Prompt.ofTokens(a.clone()), seed);
              assertThat(k1).containsExactly(k2).hasSize(a.length / 4);
              if (a.length % 4 != 0) {
                int[] full = java.util.Arrays.copyOf(a, a.length - a.length % 4);
                assertThat(BlockHasher.keysOf(TOKENS, Prompt.ofTokens(full), seed))
                    .containsExactly(k1);
              }
            });
  }

  @Test
  void hashingIntoABufferGivesTheSameKeysOrTheCountNeeded() {
    BlockHasher[] hashers = {TOKENS, BlockHashers.chars(8), BlockHashers.tokens(4, 5)};
    qt().forAll(
            lists().of(integers().between(0, 50_000)).ofSizeBetween(0, 64),
            integers().between(0, 20),
            integers().between(0, 2))
        .checkAssert(
            (ids, room, which) -> {
              BlockHasher h = hashers[which];
              int[] a = ids.stream().mapToInt(Integer::intValue).toArray();
              StringBuilder text = new StringBuilder();
              ids.forEach(i -> text.append((char) ('a' + i % 26)));
              for (Prompt p : new Prompt[] {Prompt.ofTokens(a), Prompt.ofText(text.toString())}) {
                long[] expected = BlockHasher.keysOf(h, p, 42);
                long[] out = new long[room];
                Arrays.fill(out, -1);
                int n = h.keys(p, 42, out);
                assertThat(n).isEqualTo(expected.length);
                if (n <= room) {
                  assertThat(Arrays.copyOf(out, n)).containsExactly(expected);
                  for (int i = n; i < room; i++) {
                    assertThat(out[i]).isEqualTo(-1); // nothing written past the count
                  }
                }
              }
            });
  }

  @Test
  void changingBlockIChangesKeysFromIOnly() {
    qt().forAll(
            lists().of(integers().between(0, 1_000)).ofSizeBetween(4, 64),
            integers().between(0, 63),
            integers().between(1, 1_000))
        .checkAssert(
            (ids, pos, delta) -> {
              int[] a = ints(ids);
              int p = pos % (a.length - a.length % 4 == 0 ? 1 : a.length - a.length % 4);
              int[] b = a.clone();
              b[p] += delta;
              long[] ka = BlockHasher.keysOf(TOKENS, Prompt.ofTokens(a), 0);
              long[] kb = BlockHasher.keysOf(TOKENS, Prompt.ofTokens(b), 0);
              int block = p / 4;
              for (int i = 0; i < ka.length; i++) {
                if (i < block) {
                  assertThat(kb[i]).isEqualTo(ka[i]);
                } else {
                  assertThat(kb[i])
                      .as("key %d after a change in block %d", i, block)
                      .isNotEqualTo(ka[i]);
                }
              }
            });
  }

  @Test
  void seedIsolatesTenants() {
    qt().forAll(lists().of(integers().between(0, 1_000)).ofSizeBetween(4, 40))
        .checkAssert(
            ids -> {
              Prompt p = Prompt.ofTokens(ints(ids));
              long a = TOKENS.seed("tenant:a");
              long b = TOKENS.seed("tenant:b");
              long[] ka = BlockHasher.keysOf(TOKENS, p, a);
              long[] kb = BlockHasher.keysOf(TOKENS, p, b);
              for (int i = 0; i < ka.length; i++) {
                assertThat(ka[i]).isNotEqualTo(kb[i]);
              }
            });
  }

  @Test
  void continuingFromAParentKeyEqualsHashingTheWholePrefix() {
    int[] all = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    long[] whole = BlockHasher.keysOf(TOKENS, Prompt.ofTokens(all), 0);
    long[] tail = BlockHasher.keysOf(TOKENS, Prompt.ofTokens(5, 6, 7, 8, 9, 10, 11, 12), whole[0]);
    assertThat(tail).containsExactly(whole[1], whole[2]);
  }

  @Test
  void maxBlocksCapsTheKeys() {
    assertThat(BlockHasher.keysOf(BlockHashers.tokens(4, 2), Prompt.ofTokens(new int[40]), 0))
        .hasSize(2);
    assertThat(BlockHasher.keysOf(BlockHashers.chars(2, 3), Prompt.ofText("abcdefghij"), 0))
        .hasSize(3);
  }

  @Test
  void textKeysAreChainedOverUtf16UnitsIncludingSplitSurrogates() {
    BlockHasher chars = BlockHashers.chars(3);
    String s = "a😀b€ü漢字x"; // 😀 is a surrogate pair split across the first block boundary
    assertThat(s.length()).isEqualTo(9);
    long[] k = BlockHasher.keysOf(chars, Prompt.ofText(s), 0);
    assertThat(k)
        .hasSize(3)
        .containsExactly(BlockHasher.keysOf(chars, Prompt.ofText(new String(s)), 0));
    long[] k2 = BlockHasher.keysOf(chars, Prompt.ofText(s.substring(0, 6) + "yyy"), 0);
    assertThat(k2[0]).isEqualTo(k[0]);
    assertThat(k2[1]).isEqualTo(k[1]);
    assertThat(k2[2]).isNotEqualTo(k[2]);
    qt().forAll(strings().allPossible().ofLengthBetween(0, 40))
        .checkAssert(
            str ->
                assertThat(BlockHasher.keysOf(chars, Prompt.ofText(str), 7))
                    .hasSize(str.length() / 3)
                    .containsExactly(
                        BlockHasher.keysOf(
                            chars, Prompt.ofText(new String(str.toCharArray())), 7)));
  }

  @Test
  void equalConversationsGiveEqualKeysAndExtensionsSharePrefixes() {
    BlockHasher chars = BlockHashers.chars(8);
    List<ChatMessage> conv =
        List.of(
            ChatMessage.of("system", "You are a careful assistant."),
            ChatMessage.of("user", "Summarise the design document please."));
    List<ChatMessage> longer =
        List.of(conv.get(0), conv.get(1), ChatMessage.of("assistant", "Here is a summary."));
    long[] a = BlockHasher.keysOf(chars, Prompt.ofChat(conv), 0);
    long[] b = BlockHasher.keysOf(chars, Prompt.ofChat(List.copyOf(conv)), 0);
    long[] c = BlockHasher.keysOf(chars, Prompt.ofChat(longer), 0);
    assertThat(a).containsExactly(b);
    assertThat(c.length).isGreaterThan(a.length);
    assertThat(java.util.Arrays.copyOf(c, a.length)).containsExactly(a);
    // the same words in a different role split give different keys
    long[] swapped =
        BlockHasher.keysOf(
            chars,
            Prompt.ofChat(
                ChatMessage.of("user", "You are a careful assistant."),
                ChatMessage.of("user", "Summarise the design document please.")),
            0);
    assertThat(swapped[0]).isNotEqualTo(a[0]);
    assertThat(BlockHashers.render(conv)).startsWith("system\u001FYou are");
  }

  /** A content that spells separators is escaped: it never renders, or keys, as two messages. */
  @Test
  void aMessageCannotSpellTwoMessages() {
    List<ChatMessage> real = List.of(ChatMessage.of("system", "S"), ChatMessage.of("user", "Q"));
    List<ChatMessage> forged = List.of(ChatMessage.of("system", "S\u001Euser\u001FQ"));
    assertThat(BlockHashers.render(real)).isEqualTo("system\u001FS\u001Euser\u001FQ\u001E");
    assertThat(BlockHashers.render(forged))
        .isEqualTo("system\u001FS\u001B\u001Euser\u001B\u001FQ\u001E");
    assertThat(BlockHashers.render(List.of(ChatMessage.of("u\u001B", "a\u001Db"))))
        .isEqualTo("u\u001B\u001B\u001Fa\u001B\u001Db\u001E");
    BlockHasher chars = BlockHashers.chars(4);
    assertThat(BlockHasher.keysOf(chars, Prompt.ofChat(forged), 0))
        .isNotEqualTo(BlockHasher.keysOf(chars, Prompt.ofChat(real), 0));
  }

  @Test
  void tokenHasherFallsBackToTextBlocksForTextPrompts() {
    long[] k = BlockHasher.keysOf(TOKENS, Prompt.ofText("x".repeat(40)), 0);
    assertThat(k).hasSize(40 / 16);
    assertThat(TOKENS.tokensPerBlock()).isEqualTo(4);
  }

  @Test
  void factoriesValidate() {
    assertThatThrownBy(() -> BlockHashers.tokens(0)).hasMessageContaining("blockSize");
    assertThatThrownBy(() -> BlockHashers.tokens(16, 0)).hasMessageContaining("maxBlocks");
    assertThatThrownBy(() -> BlockHashers.chars(0)).hasMessageContaining("blockChars");
  }
}
