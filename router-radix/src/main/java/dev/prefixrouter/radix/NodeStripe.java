package dev.prefixrouter.radix;

import java.util.concurrent.locks.StampedLock;

/**
 * One stripe of the node table: an open-addressing hash table (linear probing, backward-shift
 * deletion, no tombstones) from block key to the bitset of backend slots believed to hold it.
 *
 * <p>Writers hold the stripe's write lock. Readers use an optimistic read and validate it, so they
 * never block while no writer touches this stripe; after two failed validations they take the read
 * lock. The arrays are published together in an immutable {@link Table}, so an optimistic reader
 * never indexes out of bounds, and its probe loop is bounded by the table size.
 *
 * <p>Key {@code 0} marks an empty cell; callers remap key 0 (see {@link RadixPrefixIndex}).
 */
final class NodeStripe {
  /** Keys and bitsets, published together. */
  private static final class Table {
    final long[] keys;
    final long[] bits; // `words` words per node, consecutive
    final int mask;
    final int words;

    Table(int capacity, int words) {
      keys = new long[capacity];
      bits = new long[capacity * words];
      mask = capacity - 1;
      this.words = words;
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

  private void readUnlocked(long key, long[] out) {
    Table t = table;
    int mask = t.mask;
    int words = Math.min(t.words, out.length);
    int i = spread(key) & mask;
    for (int probes = 0; probes <= mask; probes++) {
      long k = t.keys[i];
      if (k == key) {
        System.arraycopy(t.bits, i * t.words, out, 0, words);
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

  /** Sets {@code slot}'s bit on {@code key}, inserting the node if absent. */
  void set(long key, int slot) {
    long stamp = lock.writeLock();
    try {
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
        t.keys[i] = key;
        size++;
      }
      t.bits[i * t.words + (slot >>> 6)] |= 1L << slot;
    } finally {
      lock.unlockWrite(stamp);
    }
  }

  /** Clears {@code slot}'s bit on {@code key}; unlinks the node when no backend holds it. */
  void clear(long key, int slot) {
    long stamp = lock.writeLock();
    try {
      Table t = table;
      int i = find(t, key);
      if (i < 0 || (slot >>> 6) >= t.words) {
        return;
      }
      int words = t.words;
      int base = i * words;
      t.bits[base + (slot >>> 6)] &= ~(1L << slot);
      for (int w = 0; w < words; w++) {
        if (t.bits[base + w] != 0) {
          return;
        }
      }
      delete(t, i);
      size--;
      int capacity = t.mask + 1;
      if (capacity > minCapacity && size * 8L < capacity) {
        resize(capacity / 2, size == 0 ? 1 : t.words);
      }
    } finally {
      lock.unlockWrite(stamp);
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
    return 16L + t.keys.length * 8L + t.bits.length * 8L + 48;
  }

  private int find(Table t, long key) {
    int mask = t.mask;
    int i = spread(key) & mask;
    while (true) {
      long k = t.keys[i];
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
    while (t.keys[i] != 0) {
      i = (i + 1) & t.mask;
    }
    return i;
  }

  /** Backward-shift deletion of cell {@code i}. */
  private void delete(Table t, int i) {
    int mask = t.mask;
    int words = t.words;
    int hole = i;
    int j = i;
    while (true) {
      j = (j + 1) & mask;
      long k = t.keys[j];
      if (k == 0) {
        break;
      }
      int home = spread(k) & mask;
      // move k into the hole if its home is not cyclically in (hole, j]
      boolean stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (!stays) {
        t.keys[hole] = k;
        System.arraycopy(t.bits, j * words, t.bits, hole * words, words);
        hole = j;
      }
    }
    t.keys[hole] = 0;
    for (int w = 0; w < words; w++) {
      t.bits[hole * words + w] = 0;
    }
  }

  private Table resize(int capacity, int words) {
    Table old = table;
    Table t = new Table(capacity, words);
    int copy = Math.min(words, old.words);
    for (int i = 0; i <= old.mask; i++) {
      long k = old.keys[i];
      if (k != 0) {
        int j = insertionPoint(t, k);
        t.keys[j] = k;
        System.arraycopy(old.bits, i * old.words, t.bits, j * words, copy);
      }
    }
    table = t;
    return t;
  }
}
