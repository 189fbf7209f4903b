package dev.prefixrouter.vllm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/**
 * Encodes EventBatch payloads as vLLM's msgspec definitions do (vllm/distributed/kv_events.py): the
 * batch as an array {@code [ts, events, dp_rank]}, events as tagged arrays in field order ({@code
 * array_like=True}, nothing omitted) or as {@code "type"}-tagged maps (fields equal to their
 * default omitted).
 */
final class Batches {
  private Batches() {}

  /** BlockStored, array form, every field present. */
  static void storedArray(MessageBufferPacker p, Object[] hashes, Object parent, int[] tokens)
      throws IOException {
    p.packArrayHeader(12).packString("BlockStored");
    hashes(p, hashes);
    value(p, parent);
    p.packArrayHeader(tokens.length);
    for (int t : tokens) {
      p.packInt(t);
    }
    p.packInt(tokens.length / hashes.length); // block_size
    p.packNil(); // lora_id
    p.packString("GPU"); // medium
    p.packNil(); // lora_name
    p.packArrayHeader(hashes.length); // extra_keys: one per block
    for (int i = 0; i < hashes.length; i++) {
      p.packNil();
    }
    p.packInt(0); // group_idx
    p.packString("full_attention");
    p.packNil(); // sliding window
  }

  /** BlockStored, map form, defaults omitted. */
  static void storedMap(MessageBufferPacker p, Object[] hashes, Object parent, int[] tokens)
      throws IOException {
    p.packMapHeader(8).packString("type").packString("BlockStored");
    p.packString("block_hashes");
    hashes(p, hashes);
    p.packString("parent_block_hash");
    value(p, parent);
    p.packString("token_ids").packArrayHeader(tokens.length);
    for (int t : tokens) {
      p.packInt(t);
    }
    p.packString("block_size").packInt(tokens.length / hashes.length);
    p.packString("lora_id").packNil();
    p.packString("medium").packString("GPU");
    p.packString("lora_name").packNil();
  }

  static void removedArray(MessageBufferPacker p, Object... hashes) throws IOException {
    p.packArrayHeader(4).packString("BlockRemoved");
    hashes(p, hashes);
    p.packString("GPU");
    p.packInt(0);
  }

  static void removedMap(MessageBufferPacker p, Object... hashes) throws IOException {
    p.packMapHeader(3).packString("type").packString("BlockRemoved");
    p.packString("block_hashes");
    hashes(p, hashes);
    p.packString("medium").packString("GPU");
  }

  private static void hashes(MessageBufferPacker p, Object[] hashes) throws IOException {
    p.packArrayHeader(hashes.length);
    for (Object h : hashes) {
      value(p, h);
    }
  }

  /** null, Long (int64), BigInteger (uint64) or byte[] (bin). */
  static void value(MessageBufferPacker p, Object v) throws IOException {
    if (v == null) {
      p.packNil();
    } else if (v instanceof Long l) {
      p.packLong(l);
    } else if (v instanceof BigInteger b) {
      p.packBigInteger(b);
    } else if (v instanceof byte[] bytes) {
      p.packBinaryHeader(bytes.length).writePayload(bytes);
    } else {
      throw new IllegalArgumentException(String.valueOf(v));
    }
  }

  /** An event written by the caller. */
  interface EventWriter {
    void write(MessageBufferPacker p) throws IOException;
  }

  /** {@code [ts, [events...], dp_rank]}. */
  static byte[] batch(double ts, EventWriter... events) {
    try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
      p.packArrayHeader(3).packDouble(ts).packArrayHeader(events.length);
      for (EventWriter e : events) {
        e.write(p);
      }
      p.packInt(0);
      return p.toByteArray();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static int[] tokens(int from, int count) {
    int[] t = new int[count];
    for (int i = 0; i < count; i++) {
      t[i] = from + i;
    }
    return t;
  }
}
