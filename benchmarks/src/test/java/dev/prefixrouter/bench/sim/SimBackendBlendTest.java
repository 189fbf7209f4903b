package dev.prefixrouter.bench.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The simulator's opt-in position-independent chunk reuse ({@link SimBackend#blend}): what a held
 * chunk saves, what it does not (KV, exact prefix hits), and when a chunk is not held.
 */
class SimBackendBlendTest {
  private static final int B = BackendProfile.BLOCK;
  private static final int CHUNK_BLOCKS = 4; // 64 tokens
  private static final int SYSTEM_BLOCKS = 2;
  private static final int QUESTION = 40; // 2.5 blocks: the last block is partial

  /** A prompt: system, the chunks in this order, a question of its own. */
  private static SimRequest rag(int id, int... chunks) {
    int[][] parts = new int[chunks.length + 2][];
    parts[0] = Workloads.segment(1, SYSTEM_BLOCKS * B);
    List<SimRequest.Chunk> spans = new ArrayList<>();
    for (int c = 0; c < chunks.length; c++) {
      parts[c + 1] = Workloads.segment(100 + chunks[c], CHUNK_BLOCKS * B);
      spans.add(new SimRequest.Chunk(chunks[c], SYSTEM_BLOCKS + c * CHUNK_BLOCKS, CHUNK_BLOCKS));
    }
    parts[parts.length - 1] = Workloads.segment(1_000 + id, QUESTION);
    return new SimRequest(id, 0, "t", null, Workloads.concat(parts), 2, -1, spans);
  }

  private static final class Recorder implements SimBackend.Listener {
    final List<SimBackend.Seq> finished = new ArrayList<>();

    @Override
    public void onFirstToken(SimBackend.Seq seq, long now) {}

    @Override
    public void onFinished(SimBackend.Seq seq, long now) {
      finished.add(seq);
    }

    @Override
    public void onStored(SimBackend backend, long[] keys, int from, int to, int[] tokens) {}

    @Override
    public void onRemoved(SimBackend backend, long key) {}
  }

  private static SimBackend.Seq seq(SimRequest r) {
    long[] keys = BlockHasher.keysOf(FleetSimulator.HASHER, Prompt.ofTokens(r.tokens()), 0);
    return new SimBackend.Seq(r, null, keys, 0);
  }

  /** Runs one request to completion alone; returns the prompt tokens computed for it. */
  private static long serve(SimBackend b, SimBackend.Seq s) {
    long before = b.prefillTokens;
    b.enqueue(s);
    long now = 0;
    for (long d = b.planStep(); d > 0; d = b.planStep()) {
      now += d;
      b.finishStep(now, d);
    }
    assertThat(s.generated).isEqualTo(s.request.outputTokens());
    return b.prefillTokens - before;
  }

  private static SimBackend backend(double blend, int capacityBlocks) {
    SimBackend b = new SimBackend("b", BackendProfile.h100(capacityBlocks), new Recorder());
    if (blend >= 0) {
      b.blend(blend);
    }
    return b;
  }

  @Test
  void offByDefaultAChunkAtAnotherPositionIsRecomputedWhole() {
    SimBackend b = backend(-1, 1_000);
    serve(b, seq(rag(0, 7, 8)));
    SimBackend.Seq second = seq(rag(1, 9, 7)); // chunk 7 moved from first to second place
    long computed = serve(b, second);
    assertThat(second.hitBlocks).isEqualTo(SYSTEM_BLOCKS); // only the system prompt
    assertThat(second.blendBlocks).isZero();
    assertThat(computed).isEqualTo(second.promptLength() - SYSTEM_BLOCKS * B);
  }

  @Test
  void aHeldChunkAtAnotherPositionCostsItsRecomputeFraction() {
    SimBackend b = backend(0.25, 1_000);
    serve(b, seq(rag(0, 7, 8)));
    SimBackend.Seq second = seq(rag(1, 9, 7));
    long computed = serve(b, second);
    int chunkTokens = CHUNK_BLOCKS * B;
    assertThat(second.hitBlocks).isEqualTo(SYSTEM_BLOCKS);
    assertThat(second.blendBlocks).isEqualTo(CHUNK_BLOCKS); // chunk 7; chunk 9 is new
    assertThat(computed)
        .isEqualTo(second.promptLength() - SYSTEM_BLOCKS * B - Math.round(0.75 * chunkTokens));
  }

  @Test
  void theSystemPromptAndALeadingChunkStayExactPrefixHits() {
    SimBackend b = backend(0.15, 1_000);
    serve(b, seq(rag(0, 7, 8)));
    SimBackend.Seq same = seq(rag(1, 7, 3)); // chunk 7 in the same place: a prefix hit, free
    long computed = serve(b, same);
    assertThat(same.hitBlocks).isEqualTo(SYSTEM_BLOCKS + CHUNK_BLOCKS);
    assertThat(same.blendBlocks).isZero();
    assertThat(computed).isEqualTo(same.promptLength() - (SYSTEM_BLOCKS + CHUNK_BLOCKS) * B);
  }

  @Test
  void reuseSavesComputeNotKv() {
    SimBackend off = backend(-1, 1_000);
    SimBackend on = backend(0.15, 1_000);
    for (SimBackend b : List.of(off, on)) {
      serve(b, seq(rag(0, 7, 8)));
      b.enqueue(seq(rag(1, 9, 7)));
      b.planStep(); // admits it: its blocks are allocated, none freed by the reuse
    }
    assertThat(on.usedBlocks()).isEqualTo(off.usedBlocks());
    assertThat(on.kvUsage()).isEqualTo(off.kvUsage());
  }

  @Test
  void aFullRecomputeFractionCostsWhatNoReuseCosts() {
    SimBackend off = backend(-1, 1_000);
    SimBackend full = backend(1.0, 1_000);
    serve(off, seq(rag(0, 7, 8)));
    serve(full, seq(rag(0, 7, 8)));
    assertThat(serve(full, seq(rag(1, 9, 7)))).isEqualTo(serve(off, seq(rag(1, 9, 7))));
  }

  @Test
  void aChunkWhoseCopyWasEvictedIsNotReused() {
    // room for about two prompts: the third evicts the first one's blocks (LRU, unpinned)
    int prompt = SYSTEM_BLOCKS + 2 * CHUNK_BLOCKS + 3;
    for (int capacity : new int[] {2 * prompt + 1, 1_000}) {
      SimBackend b = backend(0.15, capacity);
      serve(b, seq(rag(0, 7, 8)));
      serve(b, seq(rag(1, 20, 21)));
      serve(b, seq(rag(2, 22, 23)));
      SimBackend.Seq late = seq(rag(3, 9, 7));
      serve(b, late);
      // the same sequence with room for everything reuses chunk 7
      assertThat(late.blendBlocks).isEqualTo(capacity == 1_000 ? CHUNK_BLOCKS : 0);
    }
  }

  @Test
  void rejectsAFractionOutsideZeroToOne() {
    SimBackend b = backend(-1, 100);
    assertThatThrownBy(() -> b.blend(1.5)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> b.blend(Double.NaN)).isInstanceOf(IllegalArgumentException.class);
  }
}
