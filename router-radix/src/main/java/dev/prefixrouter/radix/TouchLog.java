package dev.prefixrouter.radix;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * One backend's log of deferred recency refreshes: a held route ({@code recordRouted} of a path the
 * backend holds in full) appends the path's nodes and mirror entries here without taking the
 * mirror's lock, and whoever next holds that lock applies the log, in append order, before anything
 * else reads or changes the mirror ({@link LruMirror#lock()}). A bounded ring of {@value #RECORDS}
 * records of at most {@value #WIDTH} nodes each.
 *
 * <p><b>Appending</b> (any thread, no lock): {@link #claim} takes the next sequence number with one
 * compare-and-set on the ring's tail (or fails when the ring is full), {@link #write} fills the
 * record and publishes it with a volatile store of its sequence number. <b>Applying</b> ({@link
 * #drain}, the mirror's lock held): every record from the head up to the tail read at the start, in
 * sequence order, waiting for a claimed record whose writer has not published it yet (it is between
 * two stores and holds no lock); each record is checked against the mirror as a locked refresh
 * would check it ({@link LruMirror#holdsWhole}) and touched with {@link LruMirror#nextStamp} of the
 * route's own clock reading, so the stamps and the recency order are those the routes would have
 * given under the lock in that order. The outcome of each record (applied, or skipped because the
 * backend no longer held the path) is kept per ring position until the position is applied again
 * ({@link #outcome}).
 *
 * <p>Record layout: {@value #STRIDE} longs per record in one array (ready, clock, count, the entry
 * ids packed two per long, outcome, then padding), the nodes in a parallel array padded the same
 * way ({@value #NODE_STRIDE} cells per record), so a route writes one record's cache lines and no
 * line of a neighbouring record: 64 bytes at an array offset that is not a line boundary straddle
 * two lines, and with records 128 bytes apart those lines are the record's alone (two threads
 * appending adjacent records do not write each other's lines).
 */
final class TouchLog {
  /** Records in the ring (a power of two). */
  static final int RECORDS = 32;

  /** Nodes per record: a longer path is refreshed under the lock. */
  static final int WIDTH = 6;

  private static final int STRIDE = 16; // 8 used, 8 padding: 128 bytes
  private static final int NODE_STRIDE = 32; // WIDTH used: 128 bytes of compressed references
  private static final int READY = 0; // sequence + 1 once published
  private static final int NOW = 1;
  private static final int COUNT = 2;
  private static final int ENTRIES = 3; // WIDTH / 2 longs
  private static final int OUTCOME = 7; // +(sequence + 1) applied, -(sequence + 1) skipped

  private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);

  // the tail (next sequence to claim) and the head (next to apply), each in a cache line of its own
  private static final int TAIL = 8;
  private static final int HEAD = 24;
  private final long[] ends = new long[33];

  private final long[] records = new long[RECORDS * STRIDE];
  private final Node[] nodes = new Node[RECORDS * NODE_STRIDE];

  /**
   * The next sequence number, or -1 when the ring is full (the caller refreshes under the lock,
   * which applies the ring).
   */
  long claim() {
    for (; ; ) {
      long t = (long) LONGS.getVolatile(ends, TAIL);
      long h = (long) LONGS.getVolatile(ends, HEAD);
      if (t - h >= RECORDS) {
        return -1;
      }
      if (LONGS.compareAndSet(ends, TAIL, t, t + 1)) {
        return t;
      }
    }
  }

  /**
   * Fills and publishes record {@code seq} (claimed by this thread): {@code count <= WIDTH} nodes
   * and their entries, deepest last, and the route's clock reading.
   */
  void write(long seq, Node[] path, int[] entries, int count, long now) {
    int r = (int) (seq & (RECORDS - 1));
    int b = r * STRIDE;
    records[b + NOW] = now;
    records[b + COUNT] = count;
    for (int i = 0; i < count; i += 2) {
      long lo = entries[i] & 0xFFFF_FFFFL;
      long hi = i + 1 < count ? (long) entries[i + 1] << 32 : 0;
      records[b + ENTRIES + i / 2] = hi | lo;
    }
    System.arraycopy(path, 0, nodes, r * NODE_STRIDE, count);
    // publishes the record (release: the drainer reads it with acquire). No fence is needed for the
    // route's epoch check after it: that needs the claim's compare-and-set ordered before the
    // epoch read, and the compare-and-set is a volatile write (see RadixPrefixIndex.logTouch)
    LONGS.setRelease(records, b + READY, seq + 1);
  }

  /** Entry {@code i} of a record's packed entries starting at {@code from}. */
  static int entry(long[] packed, int from, int i) {
    long p = packed[from + i / 2];
    return (i & 1) == 0 ? (int) p : (int) (p >>> 32);
  }

  /**
   * Applies every record appended so far, in order, then frees their positions with one store of
   * the head (a store per record made each one a round trip for the head's cache line, which
   * appending threads on other cores read at every claim). Until then a claim sees the positions
   * taken: it takes one of the others, or finds the ring full and waits for the lock. The mirror's
   * lock held.
   */
  void drain(LruMirror m) {
    long h = (long) LONGS.getOpaque(ends, HEAD);
    long t = (long) LONGS.getVolatile(ends, TAIL);
    if (h == t) {
      return;
    }
    try {
      for (; h < t; h++) {
        int r = (int) (h & (RECORDS - 1));
        int b = r * STRIDE;
        while ((long) LONGS.getVolatile(records, b + READY) != h + 1) {
          Thread.onSpinWait(); // claimed, not yet published: its writer is between two stores
        }
        int count = (int) records[b + COUNT];
        boolean ok =
            m.touchLogged(nodes, r * NODE_STRIDE, records, b + ENTRIES, count, records[b + NOW]);
        records[b + OUTCOME] = ok ? h + 1 : -(h + 1);
        java.util.Arrays.fill(nodes, r * NODE_STRIDE, r * NODE_STRIDE + count, null);
      }
    } finally {
      LONGS.setVolatile(ends, HEAD, h); // frees the applied positions for the next claims
    }
  }

  /**
   * What became of record {@code seq} once applied: 1 applied, 0 skipped, -1 not known (not applied
   * yet, or its position was applied again since). The mirror's lock held.
   */
  int outcome(long seq) {
    if ((long) LONGS.getOpaque(ends, HEAD) <= seq) {
      return -1;
    }
    long o = records[(int) (seq & (RECORDS - 1)) * STRIDE + OUTCOME];
    return o == seq + 1 ? 1 : o == -(seq + 1) ? 0 : -1;
  }

  long approximateBytes() {
    return 64L + 8L * ends.length + 8L * records.length + 4L * nodes.length;
  }
}
