package dev.prefixrouter.radix;

import dev.prefixrouter.api.AllBlocksCleared;
import dev.prefixrouter.api.BlockRemoved;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.IndexStats;
import dev.prefixrouter.api.KvEvent;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.api.spi.IndexSignal;
import dev.prefixrouter.api.spi.PrefixIndex;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * The default {@link PrefixIndex}: which backends are believed to hold which prompt prefixes,
 * bounded by each backend's KV capacity, fed by routing decisions and (optionally) engine KV
 * events.
 *
 * <pre>{@code
 * RoutingEngine engine = RoutingEngine.builder()
 *     .hasher(BlockHashers.tokens(16))
 *     .prefixIndex(RadixPrefixIndex.builder().predictionTtl(Duration.ofSeconds(30)).build())
 *     .backend(Backend.of("b0", "qwen").withCapacityBlocks(20_000))
 *     .build();
 * }</pre>
 *
 * <h2>Structure</h2>
 *
 * The tree of prefixes is keyed by chained block keys ({@link BlockHasher}): a key identifies its
 * whole prefix, so a node's parent is implied by its key and the tree needs no child pointers. It
 * is stored as a hash table from block key to a node holding a compact bitset over backend slots
 * (one 64-bit word per 64 slots in use: a table widens only when a slot above 63, 127, ... is first
 * set, so fleets of up to 64 backends pay 8 bytes per node). This is the design's radix tree with
 * each edge one block long; path compression would save memory only on unshared runs, and the
 * per-backend LRU needs one entry per block anyway (its cost is locality: see {@code
 * benchmarks/README.md}). {@link #match} resolves backends whose mirror only routing decisions
 * wrote by bisection — such a mirror is prefix-closed (paths are touched leaf first and eviction
 * takes the least recent entry, so no block outlives its ancestors), hence about log2(n) probes per
 * distinct answer — and walks the prompt's keys one probe per block, intersecting bitsets, for
 * backends fed KV events, whose removals can leave holes.
 *
 * <h2>Per-backend LRU mirror</h2>
 *
 * Each backend has a mirror of its KV cache with a capacity in blocks ({@code Backend
 * .capacityBlocks()}, or {@link Builder#defaultCapacityBlocks} when unknown; changeable at
 * runtime). Recording a path touches it leaf first, so ancestors are always more recent than their
 * descendants and eviction takes leaves before their ancestors, as the engine does. Over capacity
 * the least recently used block goes; a node that no backend holds any more is unlinked at once.
 * Index memory is therefore bounded by the sum of the capacities: at most one entry per (block,
 * backend) pair and one node per distinct block. At the end of every write a full mirror publishes
 * the stamp of the block it would evict next, so {@link #signal} of {@link
 * IndexSignal#LRU_AGE_NANOS} (the cache's turnover time, which the default scorer's cache pressure
 * reads) is one volatile read.
 *
 * <h2>Predicted and confirmed blocks</h2>
 *
 * {@link #recordRouted} adds <em>predicted</em> blocks. {@code BlockStored} events make blocks
 * <em>confirmed</em>: the router recomputes its own keys from the event's token ids, continuing
 * from the router key mapped to the event's parent engine hash, and remembers engine hash → router
 * key per backend (with copy counts, since engines emit duplicate blocks) so that {@code
 * BlockRemoved} can be applied. Once a backend has sent any event, its predicted blocks expire
 * after {@link Builder#predictionTtl} unless confirmed (expiry runs on that backend's next write).
 * Events that cannot be applied (unknown parent, removal of an unknown hash, a different block
 * size, no token ids, a non-GPU medium) change nothing and are counted in {@link #stats}.
 *
 * <h2>Concurrency</h2>
 *
 * The node table is split into stripes by key hash, each an open-addressing table under a {@link
 * java.util.concurrent.locks.StampedLock}; each backend's mirror is guarded by that backend's
 * monitor and carries a seqlock version. Writers of one backend serialize on its monitor; before
 * the first change a match could see (a bit, the prefix-closed flag) they bump its version to odd,
 * take one stripe's write lock per block whose bit changes, and bump the version back to even at
 * the end. A write that only refreshes recency (a held path routed again) leaves the version alone
 * and never disturbs a match. Writers of different backends run in parallel.
 *
 * <p>{@code match} takes no lock: it reads the candidates' versions, walks the keys with optimistic
 * stripe reads, and succeeds if no candidate's version moved, so its answer is the state of every
 * candidate at one instant (linearizable; checked with Lincheck). An attempt that finds a candidate
 * mid-flush waits (spinning, bounded) for that flush to end; after eight failed attempts it takes
 * the candidates' monitors (in slot order), which waits for at most one write per backend. Writes
 * to other backends never delay a match, and a write to a different stripe never fails an
 * optimistic read.
 *
 * <p>Thread-safe. Cost: {@code match} O(blocks matched) hash probes and no allocation (per-thread
 * scratch; only a fleet with slots at or above 64 allocates small bit sets while bisecting); {@code
 * recordRouted} O(blocks) with a stripe write only for blocks new to that backend.
 */
public final class RadixPrefixIndex implements PrefixIndex {

  /** Key 0 marks an empty cell in the node table, so block key 0 is stored as this value. */
  static final long ZERO_KEY = 0x9E3779B97F4A7C15L;

  private final int maxBackends;
  private final int words;
  private final long defaultCapacity;
  private final long ttlNanos;
  private final NodeStripe[] stripes;
  private final int stripeShift;
  private final AtomicReferenceArray<BackendCache> caches;

  private final LongAdder evictions = new LongAdder();
  private final LongAdder expired = new LongAdder();
  private final LongAdder stored = new LongAdder();
  private final LongAdder removed = new LongAdder();
  private final LongAdder cleared = new LongAdder();
  private final LongAdder unknownParent = new LongAdder();
  private final LongAdder duplicate = new LongAdder();
  private final LongAdder unknownRemoval = new LongAdder();
  private final LongAdder noTokens = new LongAdder();
  private final LongAdder blockSizeMismatch = new LongAdder();
  private final LongAdder otherMedium = new LongAdder();
  private final LongAdder unknownSlot = new LongAdder();
  private final LongAdder enginePrunes = new LongAdder();
  private final LongAdder retries = new LongAdder();
  private final LongAdder lockedMatches = new LongAdder();

  private RadixPrefixIndex(Builder b) {
    this.maxBackends = b.maxBackends;
    this.words = (b.maxBackends + 63) >>> 6;
    this.defaultCapacity = b.defaultCapacityBlocks;
    this.ttlNanos = b.predictionTtl.toNanos();
    int n = Integer.highestOneBit(b.stripes);
    this.stripes = new NodeStripe[n];
    for (int i = 0; i < n; i++) {
      stripes[i] = new NodeStripe(64);
    }
    this.stripeShift = 64 - Integer.numberOfTrailingZeros(n);
    this.caches = new AtomicReferenceArray<>(b.maxBackends);
  }

  /** An index with the defaults (256 backends, 100k blocks when unknown, 30 s prediction TTL). */
  public static RadixPrefixIndex create() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  private NodeStripe stripe(long key) {
    return stripes[stripeIndex(key)];
  }

  private int stripeIndex(long key) {
    return stripes.length == 1 ? 0 : (int) ((key * 0xC2B2AE3D27D4EB4FL) >>> stripeShift);
  }

  static long norm(long key) {
    return key == 0 ? ZERO_KEY : key;
  }

  private void checkSlot(int slot) {
    if (slot < 0 || slot >= maxBackends) {
      throw new IllegalArgumentException(
          "slot " + slot + " out of range [0, " + maxBackends + "): raise maxBackends");
    }
  }

  // ---------------------------------------------------------------- membership

  @Override
  public void addBackend(int slot, long capacityBlocks) {
    checkSlot(slot);
    checkCapacity(capacityBlocks);
    BackendCache c = new BackendCache(slot, capacityBlocks == 0 ? defaultCapacity : capacityBlocks);
    if (!caches.compareAndSet(slot, null, c)) {
      throw new IllegalStateException("slot " + slot + " is already in use");
    }
  }

  @Override
  public void setCapacity(int slot, long capacityBlocks) {
    checkCapacity(capacityBlocks);
    BackendCache c = cache(slot);
    if (c == null) {
      return;
    }
    synchronized (c.lock) {
      if (c.dead) {
        return;
      }
      try {
        c.capacity = capacityBlocks == 0 ? defaultCapacity : capacityBlocks;
        while (c.size() > c.capacity) {
          evictOne(c);
        }
      } finally {
        flush(c);
        c.publishLru();
        c.endWrite();
      }
    }
  }

  @Override
  public void removeBackend(int slot) {
    BackendCache c = cache(slot);
    if (c == null) {
      return;
    }
    synchronized (c.lock) {
      if (c.dead) {
        return;
      }
      c.markChanging();
      try {
        clearAll(c);
        c.dead = true;
        caches.compareAndSet(slot, c, null);
      } finally {
        c.publishLru();
        c.endWrite();
      }
    }
  }

  /** Clears every bit of the backend and resets its mirror. Lock held. */
  private void clearAll(BackendCache c) {
    c.markChanging();
    for (int e = 0; e < c.allocated; e++) {
      // entries on the free list were cleared already; the key map tells which are live
      long k = c.key[e];
      if (c.find(k) == e) {
        defer(c, k, BackendCache.CLEAR); // after any change deferred earlier in this write
      }
    }
    flush(c);
    c.reset();
  }

  private static void checkCapacity(long capacityBlocks) {
    if (capacityBlocks < 0 || capacityBlocks > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException(
          "capacityBlocks must be in [0, " + (Integer.MAX_VALUE - 8) + "], was " + capacityBlocks);
    }
  }

  private BackendCache cache(int slot) {
    checkSlot(slot);
    return caches.get(slot);
  }

  /** Whether a backend's recency lists are well formed (for tests; true for an unused slot). */
  boolean listsConsistent(int slot) {
    BackendCache c = cache(slot);
    if (c == null) {
      return true;
    }
    synchronized (c.lock) {
      return c.listsConsistent();
    }
  }

  // ---------------------------------------------------------------- match

  @Override
  public void match(long[] keys, int keyCount, int[] slots, int count, int[] matchedOut) {
    PrefixIndex.checkKeyCount(keys, keyCount);
    Scratch scratch = SCRATCH.get();
    if (scratch.seen.length < count) {
      scratch.seen = new BackendCache[Math.max(count, 2 * scratch.seen.length)];
      scratch.versions = new long[scratch.seen.length];
    }
    BackendCache[] seen = scratch.seen;
    long[] versions = scratch.versions;
    try {
      for (int attempt = 0; attempt < OPTIMISTIC_ATTEMPTS; attempt++) {
        int writing = readVersions(slots, count, seen, versions);
        if (writing < 0) {
          if (walk(keys, keyCount, slots, count, matchedOut, true)
              && unchanged(slots, count, seen, versions)) {
            return;
          }
        } else {
          awaitFlush(seen[writing]);
        }
        retries.increment();
      }
    } finally {
      Arrays.fill(seen, 0, count, null); // hold no removed backend's mirror
    }
    // Writers kept changing some candidate: take the monitors of the candidates, in slot order,
    // so the walk sees one consistent state. Each monitor is held by a writer for one write only.
    lockedMatches.increment();
    lockedMatch(keys, keyCount, slots, count, matchedOut);
  }

  /**
   * Optimistic attempts before a match takes the candidates' monitors. An attempt that finds a
   * candidate mid-flush first waits for that flush ({@link #awaitFlush}): a flush is the short tail
   * of a write, while a monitor is held for the whole write, so waiting for the flush costs a
   * reader far less than locking (two threads routing new prompts: see benchmarks/README).
   */
  static final int OPTIMISTIC_ATTEMPTS = 8;

  /** Spins before {@link #awaitFlush} gives up (about a millisecond; it yields every 64). */
  private static final int FLUSH_SPINS = 1 << 14;

  /** Waits, bounded, until {@code cache}'s version is even again (its flush is over). */
  private static void awaitFlush(BackendCache cache) {
    for (int i = 0; (cache.version & 1) != 0 && i < FLUSH_SPINS; i++) {
      if ((i & 63) == 63) {
        Thread.yield();
      } else {
        Thread.onSpinWait();
      }
    }
  }

  /**
   * Reads every candidate's mirror and version into the scratch; returns the position of a
   * candidate whose version is odd (a flush in progress), or -1 if none is.
   */
  private int readVersions(int[] slots, int count, BackendCache[] seen, long[] versions) {
    for (int c = 0; c < count; c++) {
      checkSlot(slots[c]);
      BackendCache cache = caches.get(slots[c]);
      seen[c] = cache;
      if (cache != null) {
        long v = cache.version;
        if ((v & 1) != 0) {
          return c;
        }
        versions[c] = v;
      }
    }
    return -1;
  }

  private boolean unchanged(int[] slots, int count, BackendCache[] seen, long[] versions) {
    for (int c = 0; c < count; c++) {
      BackendCache cache = caches.get(slots[c]);
      if (cache != seen[c] || (cache != null && cache.version != versions[c])) {
        return false;
      }
    }
    return true;
  }

  private void lockedMatch(long[] keys, int n, int[] slots, int count, int[] out) {
    int[] sorted = Arrays.copyOf(slots, count);
    Arrays.sort(sorted);
    lockChain(keys, n, slots, count, out, sorted, 0);
  }

  private void lockChain(
      long[] keys, int n, int[] slots, int count, int[] out, int[] sorted, int i) {
    if (i == sorted.length) {
      walk(keys, n, slots, count, out, false);
      return;
    }
    BackendCache cache = caches.get(sorted[i]);
    if (cache == null || (i > 0 && sorted[i] == sorted[i - 1])) {
      lockChain(keys, n, slots, count, out, sorted, i + 1);
      return;
    }
    synchronized (cache.lock) {
      lockChain(keys, n, slots, count, out, sorted, i + 1);
    }
  }

  /** Per-thread scratch for optimistic walks: one stamp per touched stripe. */
  private static final class Scratch {
    BackendCache[] seen = new BackendCache[16];
    long[] versions = new long[16];
    long[] stamps = new long[64];
    int[] touched = new int[64];
    int touchedCount;
    boolean ok;
    boolean optimistic;
    int[] candidateOf = new int[64]; // slot → candidate position, for this walk's slots
    long[] linear = new long[1]; // candidate bit sets of one walk, one word per 64 slots
    long[] closed = new long[1];
    long[] holders = new long[1];
    final int[] runs = new int[2 * BackendCache.MAX_RUNS]; // a held path's runs (touchRuns)
    private int[] entries = new int[256];

    /** A held path's entries (touchRuns): kept up to 4,096 (16 KB), longer paths get their own. */
    int[] entries(int n) {
      if (n <= entries.length) {
        return entries;
      }
      int[] a = new int[n];
      if (n <= 4096) {
        entries = a;
      }
      return a;
    }
  }

  private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

  /**
   * Finds every candidate's leading run of held blocks. Candidates whose mirror is
   * <em>prefix-closed</em> (only routing decisions ever wrote it: a held block's ancestors are
   * always held, because paths are touched leaf first and eviction takes the least recent entry)
   * are resolved by bisection — each probe at depth {@code d} splits them into those holding block
   * {@code d} (their run reaches past it) and the rest — so a 256-block prompt costs about eight
   * probes per distinct answer instead of 256. Candidates that received KV events (removals and
   * out-of-order stores can leave holes) get the exact linear walk.
   *
   * <p>Optimistic: each stripe's stamp is taken at its first probe and all are validated once at
   * the end, so probes carry no fence and their cache misses overlap; returns false if a writer
   * touched a stripe meanwhile. Otherwise every probe is its own (possibly locking) read and the
   * walk always succeeds.
   */
  private boolean walk(
      long[] keys, int n, int[] slots, int count, int[] matchedOut, boolean optimistic) {
    int maxSlot = 0;
    for (int c = 0; c < count; c++) {
      maxSlot = Math.max(maxSlot, slots[c]);
    }
    int words = (maxSlot >>> 6) + 1;
    Scratch scratch = SCRATCH.get();
    if (scratch.linear.length != words) { // exact length: the bit loops below run over .length
      scratch.linear = new long[words];
      scratch.closed = new long[words];
      scratch.holders = new long[words];
    }
    long[] linear = scratch.linear;
    long[] closed = scratch.closed;
    long[] holders = scratch.holders;
    Arrays.fill(linear, 0);
    Arrays.fill(closed, 0);
    for (int c = 0; c < count; c++) {
      int s = slots[c];
      BackendCache cache = caches.get(s);
      if (cache != null && cache.prefixClosed) {
        closed[s >>> 6] |= 1L << s;
      } else {
        linear[s >>> 6] |= 1L << s;
      }
      matchedOut[c] = 0;
    }
    if (n == 0 || count == 0) {
      return true;
    }
    scratch.touchedCount = 0;
    scratch.ok = true;
    scratch.optimistic = optimistic;
    if (scratch.stamps.length < stripes.length) {
      scratch.stamps = new long[stripes.length];
      scratch.touched = new int[stripes.length];
    }
    if (scratch.candidateOf.length <= maxSlot) {
      scratch.candidateOf = new int[Math.max(maxSlot + 1, 2 * scratch.candidateOf.length)];
    }
    int[] candidateOf = scratch.candidateOf;
    for (int c = 0; c < count; c++) {
      candidateOf[slots[c]] = c;
    }
    if (any(closed)) {
      bisect(keys, 0, n, closed, holders, scratch, matchedOut);
    }
    if (scratch.ok && any(linear)) {
      int depth = 0;
      boolean live = true;
      while (live && depth < n && scratch.ok) {
        probe(keys[depth], holders, scratch);
        live = false;
        for (int w = 0; w < words; w++) {
          long dropped = linear[w] & ~holders[w];
          if (dropped != 0) {
            recordDepth(dropped, w, depth, candidateOf, matchedOut);
            linear[w] &= holders[w];
          }
          live |= linear[w] != 0;
        }
        depth++;
      }
      if (live) {
        for (int w = 0; w < words; w++) {
          if (linear[w] != 0) {
            recordDepth(linear[w], w, n, candidateOf, matchedOut);
          }
        }
      }
    }
    if (optimistic) {
      for (int t = 0; t < scratch.touchedCount; t++) {
        int si = scratch.touched[t];
        scratch.ok &= stripes[si].validate(scratch.stamps[si]);
        scratch.stamps[si] = 0;
      }
    }
    return scratch.ok;
  }

  /**
   * Every slot in {@code set} holds exactly a leading run of length in {@code [lo, hi]}; assigns
   * each its length. {@code holders} is scratch.
   */
  private void bisect(
      long[] keys, int lo, int hi, long[] set, long[] holders, Scratch scratch, int[] matchedOut) {
    if (!scratch.ok || !any(set)) {
      return;
    }
    if (lo == hi) {
      for (int w = 0; w < set.length; w++) {
        if (set[w] != 0) {
          recordDepth(set[w], w, lo, scratch.candidateOf, matchedOut);
        }
      }
      return;
    }
    if (set.length == 1) {
      bisectWord(keys, lo, hi, set[0], holders, scratch, matchedOut);
      return;
    }
    int mid = (lo + hi + 1) >>> 1; // is block mid-1 held? then the run is at least mid long
    probe(keys[mid - 1], holders, scratch);
    long[] yes = new long[set.length];
    long[] no = new long[set.length];
    for (int w = 0; w < set.length; w++) {
      yes[w] = set[w] & holders[w];
      no[w] = set[w] & ~holders[w];
    }
    bisect(keys, mid, hi, yes, holders, scratch, matchedOut);
    bisect(keys, lo, mid - 1, no, holders, scratch, matchedOut);
  }

  /** {@link #bisect} for slots below 64: the sets are single words, nothing is allocated. */
  private void bisectWord(
      long[] keys, int lo, int hi, long set, long[] holders, Scratch scratch, int[] matchedOut) {
    if (!scratch.ok || set == 0) {
      return;
    }
    if (lo == hi) {
      recordDepth(set, 0, lo, scratch.candidateOf, matchedOut);
      return;
    }
    int mid = (lo + hi + 1) >>> 1;
    probe(keys[mid - 1], holders, scratch);
    long held = holders[0];
    bisectWord(keys, mid, hi, set & held, holders, scratch, matchedOut);
    bisectWord(keys, lo, mid - 1, set & ~held, holders, scratch, matchedOut);
  }

  /** Reads the holders of one key, optimistically (stamp per stripe) or with a locking read. */
  private void probe(long key, long[] holders, Scratch scratch) {
    long k = norm(key);
    int si = stripeIndex(k);
    NodeStripe stripe = stripes[si];
    if (!scratch.optimistic) {
      stripe.read(k, holders);
      return;
    }
    if (scratch.stamps[si] == 0) {
      long stamp = stripe.stamp();
      if (stamp == 0) {
        scratch.ok = false; // a writer holds the stripe now
        Arrays.fill(holders, 0);
        return;
      }
      scratch.stamps[si] = stamp;
      scratch.touched[scratch.touchedCount++] = si;
    }
    stripe.readUnlocked(k, holders);
  }

  private static boolean any(long[] bits) {
    for (long b : bits) {
      if (b != 0) {
        return true;
      }
    }
    return false;
  }

  private static void recordDepth(
      long bits, int word, int depth, int[] candidateOf, int[] matchedOut) {
    while (bits != 0) {
      int slot = (word << 6) + Long.numberOfTrailingZeros(bits);
      bits &= bits - 1;
      matchedOut[candidateOf[slot]] = depth;
    }
  }

  /**
   * {@link IndexSignal#LRU_AGE_NANOS}: the age of the stamp of the entry eviction would take next
   * from the slot's mirror, published at the end of its last write (a volatile read, no lock).
   * Stamps are the index's clock readings (made strictly increasing per backend), so with a real
   * clock this is how long ago that block was last touched; an engine whose ticker stands still
   * gets 0 for every slot. {@link IndexSignal#HELD_BLOCKS} and {@link IndexSignal#CONFIRMED_BLOCKS}
   * take the slot's lock briefly. {@link IndexSignal#OFFLOADED_BLOCKS} is not tracked.
   */
  @Override
  public long signal(int slot, IndexSignal signal, long nowNanos) {
    BackendCache c = slot < 0 || slot >= maxBackends ? null : caches.get(slot);
    if (c == null) {
      return IndexSignal.ABSENT;
    }
    return switch (signal) {
      case LRU_AGE_NANOS -> {
        long s = c.lruStamp;
        yield s == BackendCache.ROOM ? IndexSignal.ABSENT : Math.max(0, nowNanos - s);
      }
      case HELD_BLOCKS -> {
        synchronized (c.lock) {
          yield c.size();
        }
      }
      case CONFIRMED_BLOCKS -> {
        synchronized (c.lock) {
          yield c.listSize[BackendCache.CONFIRMED];
        }
      }
      case OFFLOADED_BLOCKS -> IndexSignal.ABSENT;
    };
  }

  // ---------------------------------------------------------------- writes

  @Override
  public void recordRouted(long[] keys, int keyCount, int slot, long nowNanos) {
    PrefixIndex.checkKeyCount(keys, keyCount);
    Scratch scratch = SCRATCH.get();
    int[] runs = scratch.runs;
    int[] entries = scratch.entries(keyCount);
    write(
        slot,
        c -> {
          expire(c, nowNanos);
          if (keyCount < 2 || !c.touchRuns(keys, keyCount, entries, runs, nowNanos)) {
            touchPath(c, keys, keyCount, BackendCache.PREDICTED, false, nowNanos);
          }
        });
  }

  /**
   * Runs a write on one backend's mirror: under its monitor, with its seqlock version odd, and not
   * at all (counted) if the slot is unused or was removed while the caller waited.
   */
  private void write(int slot, java.util.function.Consumer<BackendCache> body) {
    BackendCache c = cache(slot);
    if (c == null) {
      unknownSlot.increment();
      return;
    }
    synchronized (c.lock) {
      if (c.dead) {
        unknownSlot.increment();
        return;
      }
      try {
        body.accept(c);
      } finally {
        flush(c);
        c.publishLru();
        c.endWrite();
      }
    }
  }

  /**
   * Applies a write's deferred bit changes to the node table. A write first does all its LRU work
   * (which readers never see) and only then, in one burst, the changes match can see: the seqlock
   * version is odd for that burst only, not for the whole write, so concurrent matches retry far
   * less. The order of the changes is kept (one key may be set and cleared in the same write). Lock
   * held.
   */
  private void flush(BackendCache c) {
    if (c.evictedSinceFlush > 0) { // one shared-counter add per write, not one per block
      evictions.add(c.evictedSinceFlush);
      c.evictedSinceFlush = 0;
    }
    int n = c.pendingCount;
    if (n == 0) {
      return;
    }
    long[] keys = c.pendingKeys;
    // touch every change's home cell first: independent loads, so their cache misses overlap,
    // and the burst below (seqlock odd) then finds its cells in cache
    long touched = 0;
    for (int i = 0; i < n; i++) {
      touched += stripes[stripeIndex(keys[i])].homeCell(keys[i]);
    }
    c.prefetchSink = touched;
    c.markChanging();
    int[] order = c.pendingOrder(n);
    if (stripes.length == 1) {
      for (int i = 0; i < n; i++) {
        order[i] = i;
      }
      stripes[0].apply(keys, c.pendingOps, BackendCache.SET, order, 0, n, c.slot);
    } else {
      // stable counting sort by stripe: one write lock per stripe, a key's changes keep their order
      int[] start = c.stripeStarts(stripes.length + 1);
      Arrays.fill(start, 0);
      for (int i = 0; i < n; i++) {
        start[stripeIndex(keys[i]) + 1]++;
      }
      for (int s = 0; s < stripes.length; s++) {
        start[s + 1] += start[s];
      }
      for (int i = 0; i < n; i++) {
        order[start[stripeIndex(keys[i])]++] = i;
      }
      // start[s] is now the end of stripe s's run, and the start of stripe s + 1's
      int from = 0;
      for (int s = 0; s < stripes.length; s++) {
        int to = start[s];
        if (to > from) {
          stripes[s].apply(keys, c.pendingOps, BackendCache.SET, order, from, to, c.slot);
        }
        from = to;
      }
    }
    c.pendingCount = 0;
  }

  /** Defers a bit change to the end of the write, flushing early if the buffer is full. */
  private void defer(BackendCache c, long k, byte op) {
    if (c.pendingCount == BackendCache.MAX_PENDING) {
      flush(c);
    }
    c.addPending(k, op);
  }

  /**
   * Makes the first {@code n} blocks of a path most recent on one backend, the leaf least recent of
   * them so that eviction later takes leaves before ancestors. Blocks of the path already held are
   * touched before any eviction, so inserting the missing tail never evicts the held head of the
   * same path (the engine pins a request's cached prefix while it allocates the rest); only a path
   * longer than the capacity loses its own deepest blocks. Returns the entries, leaf last, in the
   * backend's scratch array (valid until its next touchPath). Lock held.
   */
  private int[] touchPath(
      BackendCache c, long[] keys, int n, int which, boolean confirm, long now) {
    int[] entries = c.pathScratch(n);
    long touched = 0; // first the home slots of every key: their cache misses overlap
    for (int i = 0; i < n; i++) {
      touched += c.index.homeSlot(norm(keys[i]));
    }
    int missing = 0;
    long firstPathStamp = Long.MAX_VALUE;
    for (int i = n - 1; i >= 0; i--) {
      long k = norm(keys[i]);
      int e = c.find(k);
      entries[i] = e;
      if (e >= 0) {
        c.touch(e, confirm ? which : c.list[e], now);
        firstPathStamp = Math.min(firstPathStamp, c.stamp[e]);
      } else {
        missing++;
      }
    }
    if (missing == 0) {
      return entries;
    }
    // the entries eviction will take next (mostly the predicted list's tail): their map slots too
    for (int v = c.tail[BackendCache.PREDICTED],
            j = (int) Math.min(missing, c.size() + missing - c.capacity);
        v >= 0 && j > 0;
        v = c.prev[v], j--) {
      touched += c.index.homeSlot(c.key[v]);
    }
    c.prefetchSink = touched;
    // make room with blocks outside the path
    while (c.size() + missing > c.capacity) {
      int v = c.victim();
      if (v < 0 || c.stamp[v] >= firstPathStamp) {
        break;
      }
      dropEntry(c, v);
      c.evictedSinceFlush++;
    }
    for (int i = n - 1; i >= 0; i--) {
      long k = norm(keys[i]);
      int e = entries[i];
      if (e >= 0 && c.find(k) == e) {
        c.touch(e, confirm ? which : c.list[e], now);
      } else {
        entries[i] = insert(c, k, which, now);
      }
    }
    return entries;
  }

  /** Adds a new entry (evicting first when full) and sets the backend's bit. Lock held. */
  private int insert(BackendCache c, long k, int which, long now) {
    while (c.size() >= c.capacity) {
      evictOne(c);
    }
    int e = c.add(k, which, now);
    defer(c, k, BackendCache.SET);
    return e;
  }

  private void evictOne(BackendCache c) {
    int v = c.victim();
    if (v < 0) {
      return;
    }
    dropEntry(c, v);
    c.evictedSinceFlush++;
  }

  private void dropEntry(BackendCache c, int e) {
    long k = c.remove(e);
    defer(c, k, BackendCache.CLEAR);
  }

  private void expire(BackendCache c, long now) {
    if (!c.eventsSeen || ttlNanos <= 0) {
      return;
    }
    int e;
    while ((e = c.tail[BackendCache.PREDICTED]) >= 0 && now - c.stamp[e] > ttlNanos) {
      dropEntry(c, e);
      expired.increment();
    }
  }

  @Override
  public void apply(int slot, KvEvent event, BlockHasher hasher, long nowNanos) {
    Objects.requireNonNull(event, "event");
    Objects.requireNonNull(hasher, "hasher");
    write(
        slot,
        c -> {
          c.eventsSeen = true;
          if (c.prefixClosed) {
            c.markChanging(); // events can leave holes (removals, stores without ancestors)
            c.prefixClosed = false;
          }
          if (event instanceof BlockStored s) {
            applyStored(c, s, hasher, nowNanos);
          } else if (event instanceof BlockRemoved r) {
            applyRemoved(c, r);
          } else if (event instanceof AllBlocksCleared) {
            clearAll(c);
            cleared.increment();
          }
          expire(c, nowNanos);
        });
  }

  private void applyStored(BackendCache c, BlockStored s, BlockHasher hasher, long now) {
    String medium = s.medium();
    if (medium != null && !medium.equalsIgnoreCase("GPU")) {
      otherMedium.increment();
      return;
    }
    if (s.tokenCount() == 0) {
      noTokens.increment();
      return;
    }
    if (s.blockSize() != hasher.tokensPerBlock()) {
      blockSizeMismatch.increment();
      return;
    }
    long parentKey = 0;
    Long parent = s.parentBlockHash();
    if (parent != null) {
      int pi = c.engineToRouter.indexOf(parent);
      if (!c.engineToRouter.indexExists(pi)) {
        unknownParent.increment();
        return;
      }
      parentKey = c.engineToRouter.indexGet(pi);
    }
    long[] routerKeys = BlockHasher.keysOf(hasher, Prompt.ofTokens(s.tokenIds()), parentKey);
    int n = Math.min(routerKeys.length, s.blockCount());
    for (int i = 0; i < n; i++) {
      long engineHash = s.blockHash(i);
      if (c.engineCopies.addTo(engineHash, 1) > 1) {
        duplicate.increment();
      } else {
        c.engineToRouter.put(engineHash, norm(routerKeys[i]));
      }
    }
    int[] entries = touchPath(c, routerKeys, n, BackendCache.CONFIRMED, true, now);
    for (int i = 0; i < n; i++) {
      int e = entries[i];
      if (e >= 0 && c.find(norm(routerKeys[i])) == e) {
        c.copies[e]++;
      }
      stored.increment();
    }
    pruneEngineMap(c);
  }

  /**
   * Keeps the engine-hash map bounded: mappings whose router key the mirror evicted on its own are
   * dropped once the map exceeds twice the capacity (amortized O(1) per stored block).
   */
  private void pruneEngineMap(BackendCache c) {
    if (c.engineToRouter.size() <= 2 * c.capacity + 1024) {
      return;
    }
    c.engineToRouter.removeAll(
        (engineHash, routerKey) -> {
          if (c.find(routerKey) >= 0) {
            return false;
          }
          c.engineCopies.remove(engineHash);
          return true;
        });
    enginePrunes.increment();
  }

  private void applyRemoved(BackendCache c, BlockRemoved r) {
    for (int i = 0; i < r.blockCount(); i++) {
      long engineHash = r.blockHash(i);
      int ci = c.engineCopies.indexOf(engineHash);
      if (!c.engineCopies.indexExists(ci)) {
        unknownRemoval.increment();
        continue;
      }
      long k = c.engineToRouter.get(engineHash);
      int left = c.engineCopies.indexGet(ci) - 1;
      if (left == 0) {
        c.engineCopies.indexRemove(ci);
        c.engineToRouter.remove(engineHash);
      } else {
        c.engineCopies.indexReplace(ci, left);
      }
      int e = c.find(k);
      if (e >= 0 && --c.copies[e] <= 0) {
        dropEntry(c, e);
      }
      removed.increment();
    }
  }

  // ---------------------------------------------------------------- stats

  @Override
  public IndexStats stats(String[] slotNames) {
    long nodes = 0;
    long bytes = 64;
    for (NodeStripe s : stripes) {
      nodes += s.size();
      bytes += s.approximateBytes();
    }
    long predicted = 0;
    long confirmed = 0;
    Map<String, Long> perBackend = new LinkedHashMap<>();
    for (int slot = 0; slot < maxBackends; slot++) {
      BackendCache c = caches.get(slot);
      if (c == null) {
        continue;
      }
      long p;
      long f;
      synchronized (c.lock) {
        p = c.listSize[BackendCache.PREDICTED];
        f = c.listSize[BackendCache.CONFIRMED];
        bytes += c.approximateBytes();
      }
      predicted += p;
      confirmed += f;
      if (slot < slotNames.length && slotNames[slot] != null) {
        perBackend.put(slotNames[slot], p + f);
      }
    }
    Map<String, Long> counters = new LinkedHashMap<>();
    counters.put("evictions", evictions.sum());
    counters.put("expiredPredictions", expired.sum());
    counters.put("kv.stored", stored.sum());
    counters.put("kv.removed", removed.sum());
    counters.put("kv.cleared", cleared.sum());
    counters.put("kv.unknownParent", unknownParent.sum());
    counters.put("kv.duplicate", duplicate.sum());
    counters.put("kv.unknownRemoval", unknownRemoval.sum());
    counters.put("kv.noTokens", noTokens.sum());
    counters.put("kv.blockSizeMismatch", blockSizeMismatch.sum());
    counters.put("kv.otherMedium", otherMedium.sum());
    counters.put("kv.engineMapPrunes", enginePrunes.sum());
    counters.put("unknownSlot", unknownSlot.sum());
    counters.put("matchRetries", retries.sum());
    counters.put("matchLocked", lockedMatches.sum());
    return new IndexStats(nodes, predicted, confirmed, bytes, perBackend, counters);
  }

  /** Counters without per-backend names. */
  public IndexStats stats() {
    return stats(new String[0]);
  }

  /** Entries held by a slot (predicted + confirmed); 0 for an unused slot. */
  public long heldBlocks(int slot) {
    BackendCache c = cache(slot);
    if (c == null) {
      return 0;
    }
    synchronized (c.lock) {
      return c.size();
    }
  }

  @Override
  public String toString() {
    return "RadixPrefixIndex[maxBackends="
        + maxBackends
        + ", stripes="
        + stripes.length
        + ", ttl="
        + Duration.ofNanos(ttlNanos)
        + "]";
  }

  /** Builder for {@link RadixPrefixIndex}; setters validate at once. */
  public static final class Builder {
    private int maxBackends = 256;
    private long defaultCapacityBlocks = 100_000;
    private Duration predictionTtl = Duration.ofSeconds(30);
    private int stripes = 64;

    private Builder() {}

    /**
     * Slots the index accepts, {@code [1, 65536]}; must be at least the engine's {@code
     * maxBackends}. Costs 8 bytes per 64 slots per node.
     */
    public Builder maxBackends(int maxBackends) {
      if (maxBackends < 1 || maxBackends > 65_536) {
        throw new IllegalArgumentException("maxBackends must be in [1, 65536], was " + maxBackends);
      }
      this.maxBackends = maxBackends;
      return this;
    }

    /** Capacity of a backend whose descriptor gives none, in blocks, {@code >= 1}. */
    public Builder defaultCapacityBlocks(long blocks) {
      if (blocks < 1 || blocks > Integer.MAX_VALUE - 8) {
        throw new IllegalArgumentException("defaultCapacityBlocks out of range: " + blocks);
      }
      this.defaultCapacityBlocks = blocks;
      return this;
    }

    /**
     * How long a predicted block lives unconfirmed on a backend that sends KV events; {@code
     * Duration.ZERO} disables expiry. Backends without events keep predictions until evicted.
     */
    public Builder predictionTtl(Duration ttl) {
      Objects.requireNonNull(ttl, "predictionTtl");
      if (ttl.isNegative()) {
        throw new IllegalArgumentException("predictionTtl must not be negative, was " + ttl);
      }
      this.predictionTtl = ttl;
      return this;
    }

    /** Lock stripes of the node table, a power of two in {@code [1, 4096]}. */
    public Builder stripes(int stripes) {
      if (stripes < 1 || stripes > 4096 || Integer.bitCount(stripes) != 1) {
        throw new IllegalArgumentException(
            "stripes must be a power of two in [1, 4096], was " + stripes);
      }
      this.stripes = stripes;
      return this;
    }

    public RadixPrefixIndex build() {
      return new RadixPrefixIndex(this);
    }
  }
}
