package dev.prefixrouter.bench.kv;

import dev.prefixrouter.api.AllBlocksCleared;
import dev.prefixrouter.api.BlockRemoved;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.KvEvent;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/**
 * Encodes router-api {@link KvEvent}s as the msgpack {@code EventBatch} payload vLLM publishes
 * (written from vLLM's msgspec definitions in {@code vllm/distributed/kv_events.py}): the batch as
 * {@code [ts, events, data_parallel_rank]}; each event either as a tagged array in field order with
 * every field present ({@code array_like=True}, vLLM up to 0.23) or as a {@code "type"}-tagged map
 * with the fields that equal their default omitted (vLLM 0.26). Block hashes are written as msgpack
 * integers (uint64 when the bit pattern is negative as a Java long, as vLLM's default int hashes).
 * Stateless; thread-safe.
 */
public final class KvWire {
  private KvWire() {}

  /** The two event layouts. */
  public enum Encoding {
    /** Tagged arrays, every field present. */
    ARRAY,
    /** {@code "type"}-tagged maps, defaults omitted. */
    MAP
  }

  /** The payload of one batch. */
  public static byte[] encode(double ts, List<? extends KvEvent> events, Encoding encoding) {
    try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
      p.packArrayHeader(3).packDouble(ts).packArrayHeader(events.size());
      for (KvEvent e : events) {
        if (encoding == Encoding.ARRAY) {
          array(p, e);
        } else {
          map(p, e);
        }
      }
      p.packInt(0);
      return p.toByteArray();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void array(MessageBufferPacker p, KvEvent e) throws IOException {
    if (e instanceof BlockStored s) {
      p.packArrayHeader(12).packString("BlockStored");
      hashes(p, s.blockHashes());
      parent(p, s.parentBlockHash());
      tokens(p, s);
      p.packInt(s.blockSize());
      p.packNil(); // lora_id
      medium(p, s.medium());
      p.packNil(); // lora_name
      p.packArrayHeader(s.blockCount()); // extra_keys: one nil per block
      for (int i = 0; i < s.blockCount(); i++) {
        p.packNil();
      }
      p.packInt(0); // group_idx
      p.packString("full_attention");
      p.packNil(); // kv_cache_spec_sliding_window
    } else if (e instanceof BlockRemoved r) {
      p.packArrayHeader(4).packString("BlockRemoved");
      hashes(p, r.blockHashes());
      medium(p, r.medium());
      p.packInt(0); // group_idx
    } else if (e instanceof AllBlocksCleared) {
      p.packArrayHeader(1).packString("AllBlocksCleared");
    }
  }

  private static void map(MessageBufferPacker p, KvEvent e) throws IOException {
    if (e instanceof BlockStored s) {
      p.packMapHeader(8).packString("type").packString("BlockStored");
      p.packString("block_hashes");
      hashes(p, s.blockHashes());
      p.packString("parent_block_hash");
      parent(p, s.parentBlockHash());
      p.packString("token_ids");
      tokens(p, s);
      p.packString("block_size").packInt(s.blockSize());
      p.packString("lora_id").packNil();
      p.packString("medium");
      medium(p, s.medium());
      p.packString("lora_name").packNil();
    } else if (e instanceof BlockRemoved r) {
      p.packMapHeader(3).packString("type").packString("BlockRemoved");
      p.packString("block_hashes");
      hashes(p, r.blockHashes());
      p.packString("medium");
      medium(p, r.medium());
    } else if (e instanceof AllBlocksCleared) {
      p.packMapHeader(1).packString("type").packString("AllBlocksCleared");
    }
  }

  private static void hashes(MessageBufferPacker p, long[] hashes) throws IOException {
    p.packArrayHeader(hashes.length);
    for (long h : hashes) {
      hash(p, h);
    }
  }

  private static void hash(MessageBufferPacker p, long h) throws IOException {
    if (h >= 0) {
      p.packLong(h);
    } else { // uint64 above Long.MAX_VALUE, as Python's int
      p.packBigInteger(new java.math.BigInteger(Long.toUnsignedString(h)));
    }
  }

  private static void parent(MessageBufferPacker p, Long parent) throws IOException {
    if (parent == null) {
      p.packNil();
    } else {
      hash(p, parent);
    }
  }

  private static void tokens(MessageBufferPacker p, BlockStored s) throws IOException {
    p.packArrayHeader(s.tokenCount());
    for (int i = 0; i < s.tokenCount(); i++) {
      p.packInt(s.tokenId(i));
    }
  }

  private static void medium(MessageBufferPacker p, String medium) throws IOException {
    if (medium == null) {
      p.packNil();
    } else {
      p.packString(medium);
    }
  }
}
