package dev.prefixrouter.redis;

import dev.prefixrouter.api.Backend;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UTFDataFormatException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The fleet's state of one backend id as the membership hash holds it: present (the descriptor and
 * whether it drains) or removed (a tombstone, so that a replica that joins later removes it too),
 * with the Redis time of the change in milliseconds.
 *
 * @param id the backend id
 * @param backend the descriptor, or null for a tombstone
 * @param draining whether the fleet drains it (false for a tombstone)
 * @param changedAtMillis Redis time of the change
 */
record BackendState(String id, @Nullable Backend backend, boolean draining, long changedAtMillis) {
  private static final byte VERSION = 1;

  /** Most models, capabilities or labels one encoded descriptor may list. */
  static final int MAX_ENTRIES = 4096;

  /** Longest string (id, model, capability, label key or value) in modified UTF-8 bytes. */
  static final int MAX_STRING_BYTES = 65_535;

  boolean removed() {
    return backend == null;
  }

  /**
   * The bytes {@link #decode} reads back.
   *
   * @throws IllegalArgumentException if the descriptor exceeds what {@link #decode} accepts: more
   *     than {@link #MAX_ENTRIES} models, capabilities or labels, or a string longer than {@link
   *     #MAX_STRING_BYTES} bytes
   */
  byte[] encode() {
    Backend d = backend;
    if (d != null) {
      limit("models", d.models().size());
      limit("capabilities", d.capabilities().size());
      limit("labels", d.labels().size());
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(128);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeByte(VERSION);
      out.writeLong(changedAtMillis);
      out.writeUTF(id);
      Backend b = backend;
      out.writeBoolean(b != null);
      if (b != null) {
        out.writeBoolean(draining);
        strings(out, b.models());
        strings(out, b.capabilities());
        out.writeInt(b.labels().size());
        for (Map.Entry<String, String> e : b.labels().entrySet()) {
          out.writeUTF(e.getKey());
          out.writeUTF(e.getValue());
        }
        out.writeLong(b.capacityBlocks());
        out.writeDouble(b.weight());
      }
    } catch (UTFDataFormatException e) { // writeUTF: a string over 65,535 bytes
      throw new IllegalArgumentException(
          "backend " + id + " has a string longer than " + MAX_STRING_BYTES + " bytes", e);
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a byte array does not fail otherwise
    }
    return bytes.toByteArray();
  }

  private void limit(String what, int n) {
    if (n > MAX_ENTRIES) {
      throw new IllegalArgumentException(
          "backend " + id + " lists " + n + " " + what + ", more than " + MAX_ENTRIES);
    }
  }

  private static void strings(DataOutputStream out, Set<String> s) throws IOException {
    out.writeInt(s.size());
    for (String x : s) {
      out.writeUTF(x);
    }
  }

  /**
   * Decodes what {@link #encode} wrote.
   *
   * @throws IllegalArgumentException if the bytes are malformed, of another version, or describe an
   *     invalid backend (the descriptor's own checks)
   */
  static BackendState decode(byte[] value) {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(value))) {
      byte v = in.readByte();
      if (v != VERSION) {
        throw new IllegalArgumentException("backend state of version " + v + ", expected 1");
      }
      long at = in.readLong();
      String id = in.readUTF();
      if (!in.readBoolean()) {
        end(in);
        return new BackendState(id, null, false, at);
      }
      boolean draining = in.readBoolean();
      Set<String> models = strings(in);
      Set<String> capabilities = strings(in);
      int labels = count(in);
      Map<String, String> l = new HashMap<>();
      for (int i = 0; i < labels; i++) {
        l.put(in.readUTF(), in.readUTF());
      }
      long capacity = in.readLong();
      double weight = in.readDouble();
      end(in);
      return new BackendState(
          id, new Backend(id, models, capabilities, l, capacity, weight), draining, at);
    } catch (IOException e) {
      throw new IllegalArgumentException("malformed backend state: " + e, e);
    }
  }

  private static Set<String> strings(DataInputStream in) throws IOException {
    int n = count(in);
    Set<String> out = new HashSet<>();
    for (int i = 0; i < n; i++) {
      out.add(in.readUTF());
    }
    return out;
  }

  private static int count(DataInputStream in) throws IOException {
    int n = in.readInt();
    if (n < 0 || n > MAX_ENTRIES) {
      throw new IllegalArgumentException("a list of " + n + " entries in a backend state");
    }
    return n;
  }

  private static void end(DataInputStream in) throws IOException {
    if (in.available() > 0) {
      throw new IllegalArgumentException(in.available() + " bytes after a backend state");
    }
  }
}
