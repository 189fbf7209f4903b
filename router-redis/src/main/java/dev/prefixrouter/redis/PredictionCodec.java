package dev.prefixrouter.redis;

import dev.prefixrouter.api.Backend;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The bytes of one stream entry: version 1, the publishing replica's id, then records (backend id,
 * key count, the keys), big-endian. Lengths are checked on reading: a malformed entry is refused
 * with an {@link IllegalArgumentException}, never applied in part. Stateless.
 */
final class PredictionCodec {
  static final byte VERSION = 1;

  /** Longest replica id, in UTF-8 bytes. */
  static final int MAX_ORIGIN_BYTES = 256;

  /** Most keys one decoded record may carry. */
  static final int MAX_KEYS_PER_RECORD = 65_536;

  private PredictionCodec() {}

  /** One encoded stream entry and how many records it carries. */
  record Entry(byte[] bytes, int records) {}

  /** Bytes of one record of {@code idBytes} and {@code keyCount} keys. */
  static int recordBytes(int idBytes, int keyCount) {
    return 2 + idBytes + 4 + 8 * keyCount;
  }

  /**
   * Encodes the batch into payloads of at most {@code maxBytes} each (a record never spans two).
   *
   * @throws IllegalArgumentException if one record alone exceeds {@code maxBytes}
   */
  static List<Entry> encode(byte[] origin, PredictionBuffer.Batch b, int maxBytes) {
    int header = 1 + 2 + origin.length + 4;
    List<Entry> out = new ArrayList<>();
    byte[][] ids = new byte[b.records][];
    int first = 0;
    int size = header;
    for (int i = 0; i <= b.records; i++) {
      int rec = 0;
      if (i < b.records) {
        ids[i] = b.backends[i].getBytes(StandardCharsets.UTF_8);
        rec = recordBytes(ids[i].length, b.counts[i]);
        if (header + rec > maxBytes) {
          throw new IllegalArgumentException(
              "one record needs " + (header + rec) + " bytes, over the entry bound " + maxBytes);
        }
      }
      if (i == b.records || size + rec > maxBytes) {
        if (i > first) {
          out.add(new Entry(write(origin, b, ids, first, i, size), i - first));
        }
        first = i;
        size = header;
      }
      size += rec;
    }
    return out;
  }

  private static byte[] write(
      byte[] origin, PredictionBuffer.Batch b, byte[][] ids, int from, int to, int size) {
    int offset = 0;
    for (int i = 0; i < from; i++) {
      offset += b.counts[i];
    }
    ByteBuffer buf = ByteBuffer.allocate(size);
    buf.put(VERSION).putShort((short) origin.length).put(origin).putInt(to - from);
    for (int i = from; i < to; i++) {
      buf.putShort((short) ids[i].length).put(ids[i]).putInt(b.counts[i]);
      for (int k = 0; k < b.counts[i]; k++) {
        buf.putLong(b.keys[offset + k]);
      }
      offset += b.counts[i];
    }
    return buf.array();
  }

  /** Reads one payload record by record. Not thread-safe; reuses its key buffer. */
  static final class Reader {
    private final ByteBuffer buf;
    private final String origin;
    private int left;
    String backendId = "";
    long[] keys;
    int keyCount;

    /**
     * @throws IllegalArgumentException if the header is malformed or of another version
     */
    Reader(byte[] payload, long[] keyBuffer) {
      this.buf = ByteBuffer.wrap(payload);
      this.keys = keyBuffer;
      try {
        byte v = buf.get();
        if (v != VERSION) {
          throw new IllegalArgumentException("prediction entry of version " + v + ", expected 1");
        }
        this.origin = string(MAX_ORIGIN_BYTES, "origin");
        this.left = buf.getInt();
        if (left < 0) {
          throw new IllegalArgumentException("negative record count " + left);
        }
      } catch (BufferUnderflowException e) {
        throw new IllegalArgumentException("prediction entry truncated in its header", e);
      }
    }

    /** The id of the replica that published the entry. */
    String origin() {
      return origin;
    }

    /**
     * Reads the next record into {@link #backendId}, {@link #keys} and {@link #keyCount}; false at
     * the end.
     *
     * @throws IllegalArgumentException if the record is malformed
     */
    boolean next() {
      if (left == 0) {
        if (buf.hasRemaining()) {
          throw new IllegalArgumentException(buf.remaining() + " bytes after the last record");
        }
        return false;
      }
      try {
        backendId = string(Backend.MAX_ID_LENGTH * 4, "backend id");
        int n = buf.getInt();
        if (n < 0 || n > MAX_KEYS_PER_RECORD || (long) n * 8 > buf.remaining()) {
          throw new IllegalArgumentException(
              "record of " + n + " keys with " + buf.remaining() + " bytes left");
        }
        if (n > keys.length) {
          keys = new long[Math.max(n, 2 * keys.length)];
        }
        for (int k = 0; k < n; k++) {
          keys[k] = buf.getLong();
        }
        keyCount = n;
        left--;
        return true;
      } catch (BufferUnderflowException e) {
        throw new IllegalArgumentException("prediction record truncated", e);
      }
    }

    private String string(int maxBytes, String what) {
      int len = Short.toUnsignedInt(buf.getShort());
      if (len == 0 || len > maxBytes || len > buf.remaining()) {
        throw new IllegalArgumentException(what + " of " + len + " bytes");
      }
      byte[] b = new byte[len];
      buf.get(b);
      return new String(b, StandardCharsets.UTF_8);
    }
  }
}
