package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ChunkOrderTest {

  @Test
  void equalSetsInAnyOrderGiveTheSameSequence() {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      ids.add("doc-" + i + "#chunk" + (i * 7 % 5));
    }
    List<String> first = ChunkOrder.canonicalById(ids, s -> s);
    Random rnd = new Random(3);
    for (int round = 0; round < 50; round++) {
      List<String> shuffled = new ArrayList<>(ids);
      Collections.shuffle(shuffled, rnd);
      assertThat(ChunkOrder.canonicalById(shuffled, s -> s)).containsExactlyElementsOf(first);
    }
    assertThat(first).containsExactlyInAnyOrderElementsOf(ids);
  }

  @Test
  void aRankKeyPutsPopularChunksFirstSoOverlappingSetsShareALeadingRun() {
    record Chunk(String id, int rank) {}
    Chunk a = new Chunk("a", 0);
    Chunk b = new Chunk("b", 1);
    Chunk x = new Chunk("x", 900);
    Chunk y = new Chunk("y", 901);
    assertThat(ChunkOrder.canonical(List.of(x, b, a), Chunk::rank)).containsExactly(a, b, x);
    assertThat(ChunkOrder.canonical(List.of(a, y, b), Chunk::rank)).containsExactly(a, b, y);
  }

  @Test
  void stableKeyIsFixed() {
    // pinned values (checked against an independent implementation): a change of the function
    // would silently change every host's canonical order and so its cached prefixes
    assertThat(ChunkOrder.stableKey("")).isEqualTo(-1166397803181037274L);
    assertThat(ChunkOrder.stableKey("doc-1")).isEqualTo(5220982376712735326L);
    assertThat(ChunkOrder.stableKey("chunk-0")).isEqualTo(1729000515429238001L);
  }

  @Test
  void rejectsDuplicatesNullsAndTooMany() {
    assertThatThrownBy(() -> ChunkOrder.canonicalById(List.of("a", "b", "a"), s -> s))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("same key");
    List<String> withNull = new ArrayList<>(List.of("a"));
    withNull.add(null);
    assertThatThrownBy(() -> ChunkOrder.canonicalById(withNull, s -> s))
        .isInstanceOf(NullPointerException.class);
    List<Integer> many = new ArrayList<>();
    for (int i = 0; i <= ChunkOrder.MAX_CHUNKS; i++) {
      many.add(i);
    }
    assertThatThrownBy(() -> ChunkOrder.canonical(many, i -> i))
        .hasMessageContaining("at most 4096");
    assertThat(ChunkOrder.canonical(List.<Integer>of(), i -> i)).isEmpty();
  }
}
