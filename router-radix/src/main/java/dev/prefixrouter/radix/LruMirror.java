package dev.prefixrouter.radix;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The LRU mirror of one backend's KV cache, run-granular: one <em>entry</em> per (node, backend)
 * holding, for the node's run, how many leading blocks the backend holds ({@code held}) and how
 * many of those are confirmed by KV events ({@code confirmed <= held}, always a prefix). Entries
 * live in parallel primitive arrays indexed by entry id, linked into two intrusive lists ordered by
 * the same stamps: the recency list of every entry, and the list of entries with predicted
 * (unconfirmed) blocks, which TTL expiry sweeps from its old end.
 *
 * <p>The capacity is exact in blocks: {@link #size()} is the sum of {@code held} over entries.
 * Eviction takes blocks from the tail of the least recently used entry (the engine frees a
 * sequence's tail before its head); the index shortens that entry's {@code held} and drops it at
 * zero.
 *
 * <p>Stamps are the clock made strictly increasing per mirror; all entries a write touches get the
 * same stamp, and the write touches them deepest first, so along a path ancestors are always more
 * recent than descendants.
 *
 * <p>Guarded by the mirror's lock ({@link #lock()} / {@link #unlock()}): every read or change of an
 * entry, a list or the stamps happens with it held (the index's structure writer takes it for each
 * mirror it touches and keeps it until the end of its write). A held route's recency refresh
 * usually takes no lock: it appends to the mirror's {@link TouchLog}, which {@link #lock()} applies
 * before its caller reads or changes anything, so the entries, lists and stamps are always those
 * the refreshes would have left had each taken the lock in log order. Every holder of the lock
 * makes the mirror's <em>epoch</em> odd on taking it and even on releasing it, after publishing the
 * LRU victim: a route that appended to the log checks the epoch did not move since before its walk
 * (else it settles under the lock, see {@code RadixPrefixIndex}). The totals ({@link #size}, {@link
 * #confirmedBlocks}) and the capacity change only under the index's structure lock as well, so
 * holders of that lock may read them without this one. {@link #lruAgeNanos} and {@link
 * #victimEntry} read the published victim without any lock: its stamp in a cell of an array the
 * index shares among its mirrors ({@link #publishedStamps}, eight backends to a cache line, so a
 * decision reading every candidate's age reads two lines for 16 backends, not a mirror, an array
 * and a line per backend), its entry in the mirror.
 */
final class LruMirror {
  private static final int NONE = IntLinks.NONE;

  /** The published stamp while an insert would evict nothing. */
  private static final long ROOM = Long.MIN_VALUE;

  final int slot;

  /** Guards the entries, lists and stamps (see the class comment). */
  private final ReentrantLock lock = new ReentrantLock();

  /** Held routes' deferred refreshes, applied by {@link #lock()}. */
  private final TouchLog log = new TouchLog();

  /** Element {@link #EPOCH}: odd while a thread holds {@link #lock}; alone in its cache line. */
  private final long[] epoch = new long[2 * EPOCH + 1];

  private static final int EPOCH = 8;

  /** Structure writer only: whether its current write holds {@link #lock}. */
  boolean ownedByWriter;

  private long capacity;

  /** The capacity the backend is configured with ({@link #capacity} may be learned below it). */
  long configured;

  private long size;
  private long confirmedTotal;
  private long lastStamp = Long.MIN_VALUE;

  /**
   * Whether the backend has sent a KV event (its predictions then expire). Volatile: a held route
   * reads it without lock to choose between the log and a locked refresh.
   */
  volatile boolean eventsSeen;

  /**
   * Blocks on a slower tier than the GPU (stored minus removed, per the events' {@code medium}; at
   * least 0), or -1 before the first such event. Guarded by the index lock.
   */
  long offloadedBlocks = -1;

  /**
   * Element {@link #VICTIM} is the entry id of the next victim while the mirror is full, else -1;
   * read without lock (volatile) by held routes of this backend. Alone in its cache line (the array
   * is padded).
   */
  private final long[] published = new long[2 * VICTIM + 1];

  private static final int VICTIM = 8;
  private static final VarHandle PUBLISHED_STAMP =
      MethodHandles.arrayElementVarHandle(long[].class);

  /**
   * The index's array of published stamps ({@link #publishedStamps}); cell {@link #STAMPS_PAD} +
   * {@link #slot} is this mirror's: the stamp of the next victim while the mirror is full, else
   * {@link #ROOM}.
   */
  private final long[] stamps;

  /**
   * Cells before the first slot's and after the last one, so no other object shares their lines.
   */
  private static final int STAMPS_PAD = 8;

  /**
   * Set (lock held) when the index forgets this mirror: from then on it publishes nothing, so a
   * late lock holder (a route that found the mirror before the backend was removed) cannot write
   * over the slot's cell, which a new mirror of the slot may own.
   */
  private boolean retired;

  private Node[] node = new Node[0];

  /**
   * Per entry two longs side by side: {@code meta[2 e]} its held blocks (high half) and confirmed
   * blocks (low half), {@code meta[2 e + 1]} its stamp. Checking a logged refresh, touching and
   * evicting an entry read or write all three, so they share a cache line instead of taking one
   * each (a cold entry was three misses, now one).
   */
  private long[] meta = new long[0];

  private int[] nextFree = new int[0];

  /**
   * The recency list of every entry and the list of entries with predicted blocks, side by side.
   */
  private final IntLinks lists = new IntLinks(2);

  private static final int RECENCY = 0;
  private static final int PREDICTED = 1;
  private int allocated;
  private int live;
  private int freeHead = NONE;

  /**
   * A mirror for {@code slot} publishing its victim's stamp into {@code stamps} (from {@link
   * #publishedStamps}, covering the slot).
   */
  LruMirror(int slot, long capacity, long[] stamps) {
    this.slot = slot;
    this.capacity = capacity;
    this.configured = capacity;
    this.stamps = stamps;
    PUBLISHED_STAMP.setVolatile(stamps, STAMPS_PAD + slot, ROOM);
    PUBLISHED_STAMP.setVolatile(published, VICTIM, (long) NONE);
  }

  /** The array of published stamps for {@code slots} mirrors, every cell {@link #ROOM}. */
  static long[] publishedStamps(int slots) {
    long[] a = new long[STAMPS_PAD + slots + STAMPS_PAD];
    Arrays.fill(a, ROOM);
    return a;
  }

  /**
   * Stops publishing (the index forgets this mirror) and clears its cell to {@link #ROOM}. Lock
   * held.
   */
  void retire() {
    retired = true;
    PUBLISHED_STAMP.setVolatile(stamps, STAMPS_PAD + slot, ROOM);
  }

  /**
   * Takes the mirror's lock: the epoch turns odd, then the held routes' logged refreshes are
   * applied in order ({@link TouchLog#drain}).
   */
  void lock() {
    lock.lock();
    PUBLISHED_STAMP.setVolatile(epoch, EPOCH, (long) epoch[EPOCH] + 1);
    log.drain(this);
  }

  /** Publishes the LRU victim, turns the epoch even and releases the lock. */
  void unlock() {
    publishLru();
    PUBLISHED_STAMP.setVolatile(epoch, EPOCH, (long) epoch[EPOCH] + 1);
    lock.unlock();
  }

  /** The epoch (odd while a thread holds the lock). Lock-free: one volatile read. */
  long epoch() {
    return (long) PUBLISHED_STAMP.getVolatile(epoch, EPOCH);
  }

  /** The refresh log, for a held route to append to (lock-free). */
  TouchLog log() {
    return log;
  }

  /**
   * Applies one logged refresh (from {@link TouchLog#drain}, lock held): if every entry is still
   * this mirror's entry of its node holding the whole run, touches them with one stamp, deepest
   * first, and returns true; else changes nothing.
   */
  boolean touchLogged(Node[] nodes, int from, long[] packed, int entriesFrom, int count, long now) {
    for (int i = 0; i < count; i++) {
      if (!holdsWhole(TouchLog.entry(packed, entriesFrom, i), nodes[from + i])) {
        return false;
      }
    }
    long s = nextStamp(now);
    for (int i = count - 1; i >= 0; i--) {
      touch(TouchLog.entry(packed, entriesFrom, i), s);
    }
    return true;
  }

  long capacity() {
    return capacity;
  }

  void capacity(long capacity) {
    this.capacity = capacity;
  }

  /** Blocks held (sum over entries). */
  long size() {
    return size;
  }

  long confirmedBlocks() {
    return confirmedTotal;
  }

  long predictedBlocks() {
    return size - confirmedTotal;
  }

  int entries() {
    return live;
  }

  /** The stamp for a write at {@code now}: the clock, made strictly increasing. */
  long nextStamp(long now) {
    lastStamp = now > lastStamp ? now : lastStamp + 1;
    return lastStamp;
  }

  Node node(int e) {
    return node[e];
  }

  int held(int e) {
    return (int) (meta[2 * e] >>> 32);
  }

  int confirmed(int e) {
    return (int) meta[2 * e];
  }

  long stamp(int e) {
    return meta[2 * e + 1];
  }

  private void counts(int e, int heldBlocks, int confirmedBlocks) {
    meta[2 * e] = ((long) heldBlocks << 32) | (confirmedBlocks & 0xFFFF_FFFFL);
  }

  private void stamp(int e, long s) {
    meta[2 * e + 1] = s;
  }

  /** Whether entry {@code e} holds predicted blocks (then it is on the predicted list). */
  private boolean hasPredicted(int e) {
    long c = meta[2 * e];
    return (int) (c >>> 32) > (int) c;
  }

  /** The least recently used entry, or -1. */
  int lruTail() {
    return lists.tail(RECENCY);
  }

  /** The least recently used entry with predicted blocks, or -1. */
  int predictedTail() {
    return lists.tail(PREDICTED);
  }

  /** A new entry at the most recent end (the caller keeps {@code size <= capacity}). */
  int add(Node n, int heldBlocks, int confirmedBlocks, long s) {
    int e = allocate(n, heldBlocks, confirmedBlocks, s);
    lists.linkHead(RECENCY, e);
    if (heldBlocks > confirmedBlocks) {
      lists.linkHead(PREDICTED, e);
    }
    return e;
  }

  /**
   * A new entry with {@code e}'s stamp placed just less recent than {@code e} in both lists (the
   * tail part of a split node, taken before the head part). Call before changing {@code e}.
   */
  int addBelow(int e, Node n, int heldBlocks, int confirmedBlocks) {
    int t = allocate(n, heldBlocks, confirmedBlocks, stamp(e));
    lists.linkAfter(RECENCY, e, t);
    if (heldBlocks > confirmedBlocks && lists.contains(PREDICTED, e)) {
      lists.linkAfter(PREDICTED, e, t);
    }
    return t;
  }

  private int allocate(Node n, int heldBlocks, int confirmedBlocks, long s) {
    int e;
    if (freeHead != NONE) {
      e = freeHead;
      freeHead = nextFree[e];
    } else {
      if (allocated == node.length) {
        grow();
      }
      e = allocated++;
    }
    node[e] = n;
    counts(e, heldBlocks, confirmedBlocks);
    stamp(e, s);
    size += heldBlocks;
    confirmedTotal += confirmedBlocks;
    live++;
    return e;
  }

  private void grow() {
    int n = Math.max(16, 2 * node.length);
    node = Arrays.copyOf(node, n);
    meta = Arrays.copyOf(meta, 2 * n);
    nextFree = Arrays.copyOf(nextFree, n);
    lists.grow(n);
  }

  /** Points an entry at another node (the head part after a split). */
  void repoint(int e, Node n) {
    node[e] = n;
  }

  /**
   * Sets an entry's held and confirmed blocks ({@code 1 <= held}, {@code confirmed <= held}). An
   * entry that gains predicted blocks joins the predicted list at its recent end: the caller
   * touches it in the same write.
   */
  void set(int e, int heldBlocks, int confirmedBlocks) {
    size += heldBlocks - held(e);
    confirmedTotal += confirmedBlocks - confirmed(e);
    counts(e, heldBlocks, confirmedBlocks);
    boolean hasPredicted = heldBlocks > confirmedBlocks;
    boolean listed = lists.contains(PREDICTED, e);
    if (hasPredicted && !listed) {
      lists.linkHead(PREDICTED, e);
    } else if (!hasPredicted && listed) {
      lists.unlink(PREDICTED, e);
    }
  }

  /** Makes an entry the most recent, with stamp {@code s}. */
  void touch(int e, long s) {
    stamp(e, s);
    lists.moveToHead(RECENCY, e);
    if (hasPredicted(e)) { // on the predicted list: read from the line just written
      lists.moveToHead(PREDICTED, e);
    }
  }

  /**
   * Moves entry {@code e} just less recent than {@code anchor}, with its stamp. {@code e} must hold
   * no predicted blocks (it is in the recency list only).
   */
  void placeBelow(int anchor, int e) {
    if (lists.contains(PREDICTED, e)) {
      throw new IllegalStateException("entry " + e + " holds predicted blocks");
    }
    stamp(e, stamp(anchor));
    lists.unlink(RECENCY, e);
    lists.linkAfter(RECENCY, anchor, e);
  }

  /** Forgets an entry. */
  void remove(int e) {
    lists.unlink(RECENCY, e);
    if (lists.contains(PREDICTED, e)) {
      lists.unlink(PREDICTED, e);
    }
    size -= held(e);
    confirmedTotal -= confirmed(e);
    node[e] = null;
    counts(e, 0, 0);
    nextFree[e] = freeHead;
    freeHead = e;
    live--;
  }

  /** Calls {@code action} for every entry, least recent first (entries may be removed). */
  void forEachEntry(java.util.function.IntConsumer action) {
    for (int e = lists.tail(RECENCY); e != NONE; ) {
      int p = lists.prev(RECENCY, e);
      action.accept(e);
      e = p;
    }
  }

  /**
   * Whether entry {@code e} is this mirror's entry of node {@code n} and holds its whole run.
   * Tolerates any {@code e} (an id read without lock from a holder record).
   */
  boolean holdsWhole(int e, Node n) {
    return e >= 0 && e < allocated && node[e] == n && held(e) == n.length();
  }

  /**
   * Publishes the next victim and its stamp (end of every write); no store if unchanged, none once
   * {@link #retire retired}. Lock held.
   */
  void publishLru() {
    if (retired) {
      return;
    }
    int tail = lists.tail(RECENCY);
    boolean full = size >= capacity && tail != NONE;
    long s = full ? stamp(tail) : ROOM;
    long v = full ? tail : NONE;
    if ((long) PUBLISHED_STAMP.getOpaque(published, VICTIM) != v) {
      PUBLISHED_STAMP.setVolatile(published, VICTIM, v);
    }
    int cell = STAMPS_PAD + slot;
    if ((long) PUBLISHED_STAMP.getOpaque(stamps, cell) != s) {
      PUBLISHED_STAMP.setVolatile(stamps, cell, s);
    }
  }

  /**
   * The entry an insert would evict next while the mirror is full, else -1. Lock-free: one volatile
   * read (a held route that touches it settles under the lock, so the published age stays exact).
   */
  int victimEntry() {
    return (int) (long) PUBLISHED_STAMP.getVolatile(published, VICTIM);
  }

  /**
   * How long before {@code now} the blocks the mirror of {@code slot} would evict next were last
   * touched (at least 0), or {@link Long#MAX_VALUE} while an insert would evict nothing or the slot
   * has no mirror. {@code stamps} is the index's array ({@link #publishedStamps}), {@code slot} in
   * its range. Lock-free: one volatile read.
   */
  static long lruAgeNanos(long[] stamps, int slot, long now) {
    long s = (long) PUBLISHED_STAMP.getVolatile(stamps, STAMPS_PAD + slot);
    return s == ROOM ? Long.MAX_VALUE : Math.max(0, now - s);
  }

  /** Whether the lists are well formed and the totals add up (tests). */
  boolean consistent() {
    long sum = 0;
    long conf = 0;
    int count = 0;
    long last = Long.MAX_VALUE;
    for (int e = lists.head(RECENCY), p = NONE; e != NONE; p = e, e = lists.next(RECENCY, e)) {
      if (lists.prev(RECENCY, e) != p || stamp(e) > last || held(e) < 1 || confirmed(e) > held(e)) {
        return false;
      }
      if ((held(e) > confirmed(e)) != lists.contains(PREDICTED, e)) {
        return false;
      }
      last = stamp(e);
      sum += held(e);
      conf += confirmed(e);
      if (++count > live) {
        return false;
      }
    }
    int listed = 0;
    last = Long.MAX_VALUE;
    for (int e = lists.head(PREDICTED), p = NONE; e != NONE; p = e, e = lists.next(PREDICTED, e)) {
      if (lists.prev(PREDICTED, e) != p
          || stamp(e) > last
          || held(e) <= confirmed(e)
          || ++listed > live) {
        return false;
      }
      last = stamp(e);
    }
    return count == live && sum == size && conf == confirmedTotal;
  }

  long approximateBytes() {
    return 96L
        + 8L * epoch.length
        + log.approximateBytes()
        + node.length * (4L + 4 + 4 + 8 + 4)
        + lists.approximateBytes();
  }
}
