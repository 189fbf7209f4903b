package dev.prefixrouter.radix;

import com.carrotsearch.hppc.LongIntHashMap;
import com.carrotsearch.hppc.LongLongHashMap;
import java.util.Arrays;

/**
 * The LRU mirror of one backend's KV cache: the (block key → entry) map and two intrusive recency
 * lists over entries, one for predicted and one for confirmed blocks. Eviction takes the older of
 * the two tails, so together they form one LRU order; TTL expiry of predictions sweeps only the
 * predicted list. Entries live in parallel primitive arrays that grow by doubling up to the
 * capacity. Also holds the engine-hash → router-key map for KV events.
 *
 * <p>Not thread-safe: every access holds {@link #lock}.
 */
final class BackendCache {
  static final int PREDICTED = 0;
  static final int CONFIRMED = 1;
  private static final int NONE = -1;

  final Object lock = new Object();
  final int slot;

  /**
   * Seqlock version for readers: odd while a writer (holding {@link #lock}) changes this backend's
   * bits, even otherwise. Only written under the lock ({@link #markChanging}, {@link #endWrite}).
   */
  volatile long version;

  /** {@link #lruStamp} while an insert would evict nothing. */
  static final long ROOM = Long.MIN_VALUE;

  /**
   * Stamp of the entry eviction would take next, or {@link #ROOM} while the mirror is below its
   * capacity: published at the end of every write ({@link #publishLru}), read without the lock.
   */
  volatile long lruStamp = ROOM;

  /** Keeps the flush's prefetching loads alive (never read). Lock held. */
  long prefetchSink;

  /** Evictions of the current write, added to the index's counter by its flush. Lock held. */
  int evictedSinceFlush;

  /** Set under the lock when the slot was removed; writers that raced the removal do nothing. */
  boolean dead;

  long capacity;
  boolean eventsSeen;

  /**
   * Whether every held block's ancestors are held too (true while only routing decisions wrote this
   * mirror). Written under the lock inside a write (version odd), read by match.
   */
  volatile boolean prefixClosed = true;

  final KeyIndex index = new KeyIndex();
  long[] key = new long[0];
  long[] stamp = new long[0];
  int[] prev = new int[0];
  int[] next = new int[0];
  byte[] list = new byte[0];
  int[] copies = new int[0]; // engine blocks (incl. duplicates) confirming this entry
  int allocated;
  int freeHead = NONE;
  private long lastStamp = Long.MIN_VALUE;
  final int[] head = {NONE, NONE}; // most recent
  final int[] tail = {NONE, NONE}; // least recent
  final long[] listSize = new long[2];

  /** Engine hash → router key, and engine hash → number of live copies. */
  final LongLongHashMap engineToRouter = new LongLongHashMap();

  final LongIntHashMap engineCopies = new LongIntHashMap();

  private int[] pathScratch = new int[0];

  static final byte SET = 1;
  static final byte CLEAR = 2;

  /** Most bit changes a write defers before it flushes them early. */
  static final int MAX_PENDING = 4096;

  /** Bit changes of the current write not yet applied to the node table (lock held). */
  long[] pendingKeys = new long[0];

  byte[] pendingOps = new byte[0];
  int pendingCount;

  private int[] pendingOrder = new int[0];
  private int[] stripeStarts = new int[0];

  /** Scratch for the flush's order of pending changes (lock held). */
  int[] pendingOrder(int n) {
    if (pendingOrder.length < n) {
      pendingOrder = new int[Math.max(n, pendingKeys.length)];
    }
    return pendingOrder;
  }

  /** Scratch for the flush's per-stripe counts (lock held). */
  int[] stripeStarts(int n) {
    if (stripeStarts.length < n) {
      stripeStarts = new int[n];
    }
    return stripeStarts;
  }

  void addPending(long k, byte op) {
    if (pendingCount == pendingKeys.length) {
      int n = Math.min(MAX_PENDING, Math.max(64, pendingKeys.length * 2));
      pendingKeys = Arrays.copyOf(pendingKeys, n);
      pendingOps = Arrays.copyOf(pendingOps, n);
    }
    pendingKeys[pendingCount] = k;
    pendingOps[pendingCount++] = op;
  }

  /** A scratch array of at least {@code n} entries for one path write (reused; lock held). */
  int[] pathScratch(int n) {
    if (pathScratch.length < n) {
      pathScratch = new int[Math.max(n, pathScratch.length * 2)];
    }
    return pathScratch;
  }

  BackendCache(int slot, long capacity) {
    this.slot = slot;
    this.capacity = capacity;
  }

  private boolean changing; // guarded by lock

  /**
   * Called before the first change visible to match (a bit in the node table, the prefix-closed
   * flag) within a write: makes the version odd. Writes that only reorder the LRU (a routed path
   * that is already held) never call it, so they never fail a concurrent match. Lock held.
   */
  void markChanging() {
    if (!changing) {
      version = version + 1;
      changing = true;
    }
  }

  /** Ends a write: makes the version even again if it changed anything. Lock held. */
  void endWrite() {
    if (changing) {
      version = version + 1;
      changing = false;
    }
  }

  int size() {
    return index.size();
  }

  /** Entry of {@code k}, or -1. */
  int find(long k) {
    int i = index.indexOf(k);
    return index.indexExists(i) ? index.indexGet(i) : NONE;
  }

  /** Allocates a new entry for {@code k} in {@code which} list at the MRU end; caller evicted. */
  int add(long k, int which, long now) {
    int e;
    if (freeHead != NONE) {
      e = freeHead;
      freeHead = next[e];
    } else {
      if (allocated == key.length) {
        grow();
      }
      e = allocated++;
    }
    key[e] = k;
    stamp[e] = nextStamp(now);
    copies[e] = 0;
    list[e] = (byte) which;
    linkHead(e, which);
    index.put(k, e);
    return e;
  }

  /**
   * Stamps are the clock reading made strictly increasing per backend (+1 ns on ties), so the two
   * lists merge into one exact recency order for eviction.
   */
  private long nextStamp(long now) {
    long s = now > lastStamp ? now : lastStamp + 1;
    lastStamp = s;
    return s;
  }

  /** Moves an existing entry to the MRU end of {@code which}. */
  void touch(int e, int which, long now) {
    unlink(e);
    stamp[e] = nextStamp(now);
    list[e] = (byte) which;
    linkHead(e, which);
  }

  /** Most runs {@link #touchRuns} splices; a more fragmented path takes the per-block touch. */
  static final int MAX_RUNS = 16;

  /**
   * Fast path for re-touching a held path. A path touched together stays one contiguous run of its
   * LRU list, in path order (block 0 most recent), until another path touches part of it: a shared
   * system prompt, say, splits a path into two runs. If every block of {@code keys[0..n)} is held
   * and the path is at most {@link #MAX_RUNS} such runs, moves each run to the head of its list,
   * deepest run first, and restamps the path leaf first — exactly what touching each block leaf
   * first does — at the cost of one map lookup per run and a sequential walk. Otherwise returns
   * false and changes nothing.
   *
   * <p>Reads only until it commits: a key repeated in the path (a hash collision, or a hasher that
   * does not chain) would put one entry in two runs, and splicing both would corrupt the list. Such
   * runs overlap, and since stamps strictly decrease from head to tail within a list (every entry
   * enters at the head with a fresh stamp), two runs of one list overlap exactly when their stamp
   * ranges do — checked pairwise instead of marking entries, so the walk writes nothing another
   * thread would have to fetch back. {@code entries} (at least {@code n}) and {@code runs} (at
   * least {@code 2 * MAX_RUNS}) are the caller's per-thread scratch.
   */
  boolean touchRuns(long[] keys, int n, int[] entries, int[] runs, long now) {
    int count = 0;
    int i = 0;
    while (i < n) {
      int e = count == MAX_RUNS ? NONE : find(RadixPrefixIndex.norm(keys[i]));
      if (e < 0) {
        return false; // missing, or too fragmented
      }
      int which = list[e];
      int first = e;
      int last;
      do {
        last = e;
        entries[i++] = e;
        e = next[e];
      } while (i < n && e != NONE && list[e] == which && key[e] == RadixPrefixIndex.norm(keys[i]));
      for (int r = 0; r < count; r++) {
        int f = runs[2 * r];
        int l = runs[2 * r + 1];
        if (list[f] == which && stamp[first] >= stamp[l] && stamp[f] >= stamp[last]) {
          return false; // shares entries with an earlier run: a repeated key
        }
      }
      runs[2 * count] = first;
      runs[2 * count + 1] = last;
      count++;
    }
    for (int r = count - 1; r >= 0; r--) {
      spliceToHead(runs[2 * r], runs[2 * r + 1]);
    }
    // the stamps n calls of nextStamp(now) would hand out, leaf first: independent stores
    long base = now > lastStamp ? now : lastStamp + 1;
    lastStamp = base + n - 1;
    for (int j = 0; j < n; j++) {
      stamp[entries[j]] = base + (n - 1 - j);
    }
    return true;
  }

  /** Moves the contiguous run {@code first .. last} (head side first) to the head of its list. */
  private void spliceToHead(int first, int last) {
    int which = list[first];
    if (head[which] == first) {
      return;
    }
    int p = prev[first]; // exists: the run is not at the head
    int after = next[last];
    next[p] = after;
    if (after != NONE) {
      prev[after] = p;
    } else {
      tail[which] = p;
    }
    prev[head[which]] = last;
    next[last] = head[which];
    prev[first] = NONE;
    head[which] = first;
  }

  /**
   * Whether both lists are well formed: linked both ways, sizes as counted, stamps strictly
   * decreasing from head to tail and none above the last one handed out (for tests; lock held).
   */
  boolean listsConsistent() {
    for (int which = 0; which < 2; which++) {
      long size = 0;
      long above = lastStamp + 1;
      int before = NONE;
      for (int e = head[which]; e != NONE; e = next[e]) {
        if (prev[e] != before
            || list[e] != which
            || stamp[e] >= above
            || ++size > listSize[which]) {
          return false;
        }
        above = stamp[e];
        before = e;
      }
      if (tail[which] != before || size != listSize[which]) {
        return false;
      }
    }
    return true;
  }

  /**
   * Publishes {@link #lruStamp} after a write; writes the field only when it changed. Lock held.
   */
  void publishLru() {
    int v = size() < capacity ? NONE : victim();
    long s = v < 0 ? ROOM : stamp[v];
    if (s != lruStamp) {
      lruStamp = s;
    }
  }

  /** The entry eviction would take next (older of the two LRU tails), or -1 if empty. */
  int victim() {
    int p = tail[PREDICTED];
    int c = tail[CONFIRMED];
    if (p == NONE) {
      return c;
    }
    if (c == NONE) {
      return p;
    }
    return stamp[p] < stamp[c] ? p : c;
  }

  /** Removes an entry; returns its key. */
  long remove(int e) {
    long k = key[e];
    unlink(e);
    index.remove(k);
    next[e] = freeHead;
    freeHead = e;
    return k;
  }

  /** Drops everything and releases memory. */
  void reset() {
    index.release();
    pathScratch = new int[0];
    pendingKeys = new long[0];
    pendingOps = new byte[0];
    pendingOrder = new int[0];
    pendingCount = 0;
    engineToRouter.release();
    engineCopies.release();
    key = new long[0];
    stamp = new long[0];
    prev = new int[0];
    next = new int[0];
    list = new byte[0];
    copies = new int[0];
    allocated = 0;
    freeHead = NONE;
    Arrays.fill(head, NONE);
    Arrays.fill(tail, NONE);
    Arrays.fill(listSize, 0);
  }

  long approximateBytes() {
    return 128L
        + key.length * (8L + 8 + 4 + 4 + 1 + 4)
        + pathScratch.length * 4L
        + pendingKeys.length * 13L
        + stripeStarts.length * 4L
        + hppcBytes(index.keys.length, 4)
        + hppcBytes(engineToRouter.keys.length, 8)
        + hppcBytes(engineCopies.keys.length, 4);
  }

  private static long hppcBytes(int keySlots, int valueBytes) {
    return keySlots * (8L + valueBytes);
  }

  private void grow() {
    long cap = Math.max(16, Math.min(Math.max(capacity, 16), (long) key.length * 2));
    if (cap <= key.length) {
      cap = key.length + 16L; // capacity raised at runtime; keep going
    }
    int n = (int) Math.min(Integer.MAX_VALUE - 8, cap);
    key = Arrays.copyOf(key, n);
    stamp = Arrays.copyOf(stamp, n);
    prev = Arrays.copyOf(prev, n);
    next = Arrays.copyOf(next, n);
    list = Arrays.copyOf(list, n);
    copies = Arrays.copyOf(copies, n);
  }

  private void linkHead(int e, int which) {
    prev[e] = NONE;
    next[e] = head[which];
    if (head[which] != NONE) {
      prev[head[which]] = e;
    } else {
      tail[which] = e;
    }
    head[which] = e;
    listSize[which]++;
  }

  private void unlink(int e) {
    int which = list[e];
    int p = prev[e];
    int n = next[e];
    if (p != NONE) {
      next[p] = n;
    } else {
      head[which] = n;
    }
    if (n != NONE) {
      prev[n] = p;
    } else {
      tail[which] = p;
    }
    listSize[which]--;
  }
}
