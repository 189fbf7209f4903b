package dev.prefixrouter.radix;

import java.util.concurrent.locks.StampedLock;

/**
 * One stripe of the node table: an open-addressing hash table (linear probing, backward-shift
 * deletion, no tombstones) from block key to the bitset of backend slots believed to hold it. A
 * node is one cell of {@code 1 + words} longs — the key, then its bitset — so a probe touches one
 * cache line.
 *
 * <p>Writers hold the stripe's write lock. Readers use optimistic reads: either one per probe
 * ({@link #read}) or one stamp for a whole walk over many probes ({@link #stamp}, {@link
 * #readUnlocked}, {@link #validate}), which lets the CPU overlap the walk's cache misses. The cells
 * are published in an immutable {@link Table}, so an optimistic reader never indexes out of bounds,
 * and its probe loop is bounded by the table size.
 *
 * <p>Key {@code 0} marks an empty cell; callers remap key 0 (see {@link RadixPrefixIndex}).
 */
final class NodeStripe {
  /** Cells, published together with their geometry. */
  private static final class Table {
    final long[] cells; // per node: key, then `words` bitset words
    final int mask;
    final int words;
    final int stride;

    Table(int capacity, int words) {
      this.words = words;
      this.stride = words + 1;
      this.cells = new long[capacity * stride];
      this.mask = capacity - 1;
    }
  }

  private final StampedLock lock = new StampedLock();
  private final int minCapacity;
  private volatile Table table;
  private int size; // guarded by the write lock

  /**
   * Bitsets start one word wide (slots 0..63) and widen, by rebuilding the table, only when a
   * higher slot is first set: a fleet of at most 64 backends pays 8 bytes per node for the bitset.
   */
  NodeStripe(int minCapacity) {
    this.minCapacity = minCapacity;
    this.table = new Table(minCapacity, 1);
  }

  static int spread(long key) {
    long h = key * 0x9E3779B97F4A7C15L;
    return (int) (h ^ (h >>> 32));
  }

  /**
   * The key word of {@code key}'s home cell, read without any synchronization: a prefetch (the
   * value means nothing; a racing resize at worst makes it touch the old table).
   */
  long homeCell(long key) {
    Table t = table;
    int i = spread(key) & t.mask;
    return t.cells[i * t.stride] + t.cells[((i + 4) & t.mask) * t.stride];
  }

  /** An optimistic read stamp; 0 while a writer holds the stripe. */
  long stamp() {
    return lock.tryOptimisticRead();
  }

  /** Whether nothing was written since {@code stamp} (includes the load fence). */
  boolean validate(long stamp) {
    return lock.validate(stamp);
  }

  /**
   * Copies the holders of {@code key} into {@code out} (every word of it; words beyond the table's
   * width are zero); all zeros if absent. Lock-free unless a writer interferes twice in a row.
   */
  void read(long key, long[] out) {
    for (int attempt = 0; attempt < 2; attempt++) {
      long stamp = lock.tryOptimisticRead();
      if (stamp != 0) {
        readUnlocked(key, out);
        if (lock.validate(stamp)) {
          return;
        }
      }
    }
    long stamp = lock.readLock();
    try {
      readUnlocked(key, out);
    } finally {
      lock.unlockRead(stamp);
    }
  }

  /** The read without any synchronization: valid only if a stamp taken before validates after. */
  void readUnlocked(long key, long[] out) {
    Table t = table;
    long[] cells = t.cells;
    int mask = t.mask;
    int stride = t.stride;
    int words = Math.min(t.words, out.length);
    int i = spread(key) & mask;
    for (int probes = 0; probes <= mask; probes++) {
      int at = i * stride;
      long k = cells[at];
      if (k == key) {
        System.arraycopy(cells, at + 1, out, 0, words);
        for (int w = words; w < out.length; w++) {
          out[w] = 0;
        }
        return;
      }
      if (k == 0) {
        break;
      }
      i = (i + 1) & mask;
    }
    for (int w = 0; w < out.length; w++) {
      out[w] = 0;
    }
  }

  /**
   * Applies a batch of changes for one slot under one write lock: {@code keys[order[i]]} is set if
   * {@code ops[order[i]] == set} (inserting the node if absent), cleared otherwise (unlinking the
   * node when no backend holds it any more), for {@code i} in {@code [from, to)}, in that order.
   * One lock instead of one per change also lets the CPU overlap the changes' cache misses (a
   * locked CAS between them would serialize them).
   */
  void apply(long[] keys, byte[] ops, byte set, int[] order, int from, int to, int slot) {
    long stamp = lock.writeLock();
    try {
      for (int i = from; i < to; i++) {
        int j = order[i];
        if (ops[j] == set) {
          setLocked(keys[j], slot);
        } else {
          clearLocked(keys[j], slot);
        }
      }
    } finally {
      lock.unlockWrite(stamp);
    }
  }

  /** Write lock held. */
  private void setLocked(long key, int slot) {
    Table t = table;
    if ((slot >>> 6) >= t.words) {
      t = resize(t.mask + 1, (slot >>> 6) + 1);
    }
    int i = find(t, key);
    if (i < 0) {
      if ((size + 1) * 4L > (t.mask + 1) * 3L) {
        t = resize((t.mask + 1) * 2, t.words);
      }
      i = insertionPoint(t, key);
      t.cells[i * t.stride] = key;
      size++;
    }
    t.cells[i * t.stride + 1 + (slot >>> 6)] |= 1L << slot;
  }

  /** Write lock held. */
  private void clearLocked(long key, int slot) {
    Table t = table;
    int i = find(t, key);
    if (i < 0 || (slot >>> 6) >= t.words) {
      return;
    }
    int base = i * t.stride + 1;
    t.cells[base + (slot >>> 6)] &= ~(1L << slot);
    for (int w = 0; w < t.words; w++) {
      if (t.cells[base + w] != 0) {
        return;
      }
    }
    delete(t, i);
    size--;
    int capacity = t.mask + 1;
    if (capacity > minCapacity && size * 8L < capacity) {
      resize(capacity / 2, size == 0 ? 1 : t.words);
    }
  }

  int size() {
    long stamp = lock.readLock();
    try {
      return size;
    } finally {
      lock.unlockRead(stamp);
    }
  }

  long approximateBytes() {
    Table t = table;
    return 16L + t.cells.length * 8L + 48;
  }

  private static int find(Table t, long key) {
    int mask = t.mask;
    int i = spread(key) & mask;
    while (true) {
      long k = t.cells[i * t.stride];
      if (k == key) {
        return i;
      }
      if (k == 0) {
        return -1;
      }
      i = (i + 1) & mask;
    }
  }

  private static int insertionPoint(Table t, long key) {
    int i = spread(key) & t.mask;
    while (t.cells[i * t.stride] != 0) {
      i = (i + 1) & t.mask;
    }
    return i;
  }

  /** Backward-shift deletion of cell {@code i}. */
  private static void delete(Table t, int i) {
    int mask = t.mask;
    int stride = t.stride;
    int hole = i;
    int j = i;
    while (true) {
      j = (j + 1) & mask;
      long k = t.cells[j * stride];
      if (k == 0) {
        break;
      }
      int home = spread(k) & mask;
      // move k into the hole if its home is not cyclically in (hole, j]
      boolean stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (!stays) {
        System.arraycopy(t.cells, j * stride, t.cells, hole * stride, stride);
        hole = j;
      }
    }
    for (int w = 0; w < stride; w++) {
      t.cells[hole * stride + w] = 0;
    }
  }

  private Table resize(int capacity, int words) {
    Table old = table;
    Table t = new Table(capacity, words);
    int copy = Math.min(words, old.words);
    for (int i = 0; i <= old.mask; i++) {
      long k = old.cells[i * old.stride];
      if (k != 0) {
        int j = insertionPoint(t, k);
        t.cells[j * t.stride] = k;
        System.arraycopy(old.cells, i * old.stride + 1, t.cells, j * t.stride + 1, copy);
      }
    }
    table = t;
    return t;
  }
}
