package dev.prefixrouter.radix;

import dev.prefixrouter.api.AllBlocksCleared;
import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BlockRemoved;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.IndexStats;
import dev.prefixrouter.api.KvEvent;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.api.spi.IndexSignal;
import dev.prefixrouter.api.spi.PrefixIndex;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;
import org.jspecify.annotations.Nullable;

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
 * A path-compressed radix tree over chained block keys ({@link BlockHasher}): each {@link Node}
 * holds a run of consecutive keys in one {@code long[]}, its children are found by the first key of
 * their run, and for each backend holding part of the run the number of leading blocks it holds
 * ({@code held}). What a backend holds of a run is always a prefix of it: the tree splits a node
 * where a write starts, ends or diverges inside its run (and where a {@code BlockRemoved} leaves a
 * gap), never because holders differ in how much they hold. {@link #match} is one walk down the
 * tree comparing runs, and returns per backend the sum of the runs it holds in full plus what it
 * holds of the first run it does not.
 *
 * <h2>Per-backend LRU mirror</h2>
 *
 * Each backend has an {@link LruMirror} of its KV cache with a capacity in blocks ({@code Backend
 * .capacityBlocks()}, or {@link Builder#defaultCapacityBlocks} when unknown; changeable at
 * runtime), one entry per (node, backend). A write touches the entries of its path deepest first
 * with one stamp, so ancestors are always more recent than descendants. A KV store below a parent
 * block the backend holds does not refresh recency: its blocks take the parent's place in the LRU
 * order (just less recent than the parent, deepest last), so a confirmation neither makes the
 * stored blocks nor their shared prefix look more recent than the routes that used them (the
 * engine's own LRU orders blocks by when requests free them, which the routes approximate). Only a
 * store that must evict to make room touches its path and then the held path above its parent, so
 * that its eviction never takes its own blocks or their prefix. Either way what a backend holds
 * stays prefix-closed in eviction order: no block is evicted before a held descendant. Over
 * capacity, blocks go from the tail of the least recently used entry (shortening its {@code held},
 * dropping it at zero); a path longer than the capacity keeps its first {@code capacity} blocks;
 * blocks of the path already held are touched before anything is evicted, so a write never evicts
 * its own path. A node that no backend holds and that has no children is unlinked at once.
 *
 * <p>Keys nobody holds can still stay in the tree: above held blocks (a {@code BlockRemoved} of a
 * head before its tail, a store below a parent evicted meanwhile, predictions expiring above
 * confirmed blocks) and at the end of a run whose tail was evicted. Such held blocks are out of
 * every match's reach. When the tree's keys exceed the sum of the capacities by a budget (the sum
 * of the capacities again), the write that crossed it prunes the tree: every key no backend holds
 * goes, with the held blocks below it (counted as {@code prunedBlocks}); no match changes then (a
 * later store of the missing head no longer reconnects to the dropped tail, which the engine still
 * holds until it evicts it). So the tree holds at most twice the sum of the capacities in keys, 8
 * bytes each, stored once, plus a few tens of bytes per node and per entry; a prune walks the whole
 * tree under the structure lock, at most once per budget's worth of unheld keys: writes wait for
 * it, and so do matches of a backend whose blocks it drops (their version is odd until the prune
 * ends: they retry, then take the lock) and held routes of such a backend; other backends' matches
 * and held routes do not. The published LRU age ({@link #signal} of {@link
 * IndexSignal#LRU_AGE_NANOS}) is the age of the next victim's stamp once the mirror is full.
 *
 * <h2>Predicted and confirmed blocks</h2>
 *
 * {@link #recordRouted} adds <em>predicted</em> blocks. {@code BlockStored} events make blocks
 * <em>confirmed</em>: the router recomputes its own keys from the event's token ids, continuing
 * from the router key of the event's parent engine hash (for a store that starts the sequence, from
 * the isolation seed the engine derives from the event's cache salt, so a salted or isolated
 * tenant's events confirm the keys its own requests use), and remembers engine hash → router key in
 * the backend's {@link EventTranslator} (bounded; least recently used mappings go first). {@code
 * BlockRemoved} takes a block out once no engine copy of it is left; in the middle of a held run it
 * leaves a gap (match stops there). Once a backend has sent any event, its predicted blocks expire
 * after {@link Builder#predictionTtl} unless confirmed (expiry runs on that backend's next write).
 *
 * <h2>Bad input</h2>
 *
 * Never an exception on the routing path, always a counter in {@link #stats}: a slot out of range
 * ({@code unknownSlot}, once per call; match answers 0, writes do nothing) or not in use (counted
 * by writes; match answers 0 uncounted: a backend removed while a route is in flight is routine), a
 * slot given twice to one match (each position gets the slot's answer), a store whose parent is
 * unknown ({@code kv.unknownParent}), removal of an unknown hash ({@code kv.unknownRemoval}), a
 * hash stored again ({@code kv.duplicate}: one more copy, needing one more removal), a hash stored
 * again whose tokens key differently (another seed: {@code kv.keyConflict}; the store stops before
 * it, since its first key stays the one removals release), no token ids ({@code kv.noTokens}),
 * another block size ({@code kv.blockSizeMismatch}). A store or removal on a non-GPU medium ({@code
 * kv.otherMedium}: CPU, disk) leaves the GPU tree alone, is counted in the backend's {@link
 * IndexSignal#OFFLOADED_BLOCKS} and feeds its lower tier (below). A {@code keyCount} outside its
 * buffer is a programmer error and throws {@link IllegalArgumentException}.
 *
 * <h2>Lower tier</h2>
 *
 * Per backend, a bounded record of the router keys its events say it holds below the GPU (any
 * non-GPU {@code medium}: CPU memory, disk, one record for all of them), answered by {@link
 * #matchOffloaded}: the blocks right after a prompt's GPU match that the backend could load back
 * instead of computing. A lower-tier {@code BlockStored} is keyed by its engine hashes: each hash
 * already mapped for the GPU (the offloading connector stores a block while its GPU copy is alive)
 * or already on the lower tier takes that router key; a store carrying token ids is keyed from them
 * as a GPU store is. A block that neither resolves is counted ({@code kv.lowerTierUnresolved}) and
 * not recorded: an offload block spanning several GPU blocks (vLLM's offloaded block size larger
 * than the GPU's) resolves to its last GPU block only, so its run stops there. A lower-tier {@code
 * BlockRemoved} drops the copy ({@code kv.lowerTierUnknownRemoval} when not recorded); {@code
 * AllBlocksCleared} clears the lower tier too. Bound: {@link Builder#lowerTierBlocks} blocks per
 * backend (default four times its GPU capacity), least recently stored first out ({@code
 * kv.lowerTierEvicted}); {@code lowerTierBlocks} in {@link #stats} is the total recorded. A backend
 * that never sends a lower-tier event has no record, and {@link #matchOffloaded} on a fleet without
 * any costs one volatile read.
 *
 * <h2>Concurrency</h2>
 *
 * Two kinds of lock, always taken in this order: the <em>structure lock</em> (one per index) and
 * one <em>mirror lock</em> per backend ({@link LruMirror}). Every write that may change the tree or
 * what a backend holds (a route with a new or partly held path, events, expiry, membership,
 * capacity) takes the structure lock, then the lock of each mirror it reads or changes (its own
 * backend's first, and those of the holders of a node it splits), and releases them all when it
 * ends. A write is short (it touches the few entries of one path and evicts from one backend) and
 * never runs user code.
 *
 * <p>A held route ({@link #recordRouted} of a path the backend holds in full, ending at a node
 * boundary, nothing due to expire) only refreshes recency, so it takes no structure lock: it finds
 * the path's nodes and its entries by a walk without locks (as {@code match} does) and appends them
 * to the backend's {@link TouchLog}, a bounded ring that the next holder of the backend's mirror
 * lock applies in order before it reads or changes the mirror (each record checked as a locked
 * refresh would check it: every entry still that mirror's entry of the node found, holding its
 * whole run; sound because a node is split or unlinked, and a backend's holding changed, only by a
 * writer holding that backend's mirror lock). Recency is therefore exactly what the same routes
 * would leave refreshing under the lock in log order: the same stamps (each record keeps the
 * route's clock reading) and the same eviction order. The route returns at once unless (a) the
 * mirror's epoch moved between its walk and its append (a lock holder ran meanwhile and may have
 * changed the path or missed the record), or (b) it touches the published LRU victim (the published
 * age would be stale): then it settles by taking the mirror's lock (which applies the log) and
 * reads its record's outcome; a record whose path was no longer held makes the route take the
 * structure lock as any write. (If more than a ring's worth of records were applied between its
 * append and its settling, the outcome is no longer known and the route is repeated under the
 * structure lock: one extra refresh of a held path, never a lost one.) A backend whose predictions
 * can expire, a path of more than {@link TouchLog#WIDTH} nodes and a full ring refresh under the
 * mirror's lock, checking the same way. Routes on different backends therefore never wait for each
 * other, and a held route waits for nothing but a full ring. A lock holder applying the log may
 * wait for a record claimed but not yet written; its writer holds no lock, so this cannot deadlock.
 *
 * <p>Each backend slot has a version, odd while a write changes what that backend is believed to
 * hold (a seqlock); a write that only refreshes recency (a held route) and a split (which moves no
 * block between backends) leave versions alone. The LRU age a mirror publishes sits in its own
 * cache line and is stored only when it changes.
 *
 * <p>{@link #match} takes no lock: it reads its candidates' versions, walks the tree reading nodes
 * without locks, and returns if no candidate's version moved, so its answer is every candidate's
 * state at one instant (linearizable; checked with Lincheck). Runs are immutable arrays and child
 * and holder records are published with release stores, so a walk never sees a torn run or a
 * half-built node. A match that found a candidate mid-write retries; after {@value
 * #OPTIMISTIC_ATTEMPTS} failed attempts it walks under the lock (counted as {@code matchLocked}).
 *
 * <p>Thread-safe. Cost: {@code match} one walk over the prompt's keys (one child lookup per run)
 * and no allocation; {@code recordRouted} O(nodes on the path) for a held path, plus the new run
 * and the evicted entries otherwise.
 */
public final class RadixPrefixIndex implements PrefixIndex {

  /** Optimistic match attempts before a match walks under the write lock. */
  static final int OPTIMISTIC_ATTEMPTS = 8;

  // the slot space: sized by start(), which the engine calls in its constructor before it publishes
  // itself (and this index through its final fields); never changed once a backend is added
  private int maxBackends;
  private final boolean maxBackendsExplicit;
  private final long defaultCapacity;
  private final long ttlNanos;
  private final boolean capacityFeedback;
  private final Object lock = new Object();
  private final Node root = new Node(new long[0], null);
  private AtomicLongArray versions;
  private AtomicReferenceArray<LruMirror> mirrors;
  private long[] lruStamps; // the mirrors' published victim stamps (LruMirror.publishedStamps)
  private EventTranslator[] translators; // lock held
  private AtomicReferenceArray<LowerTier> lowerTiers; // written with lock held, read by routers
  private volatile int lowerTierSlots; // slots with a lower-tier record (lock held to write)
  private final long lowerTierBlocks; // per backend; -1: four times its capacity
  private long nodeCount; // lock held
  private long treeKeys; // keys in linked nodes (lock held)
  private long capacitySum; // sum of the tracked backends' modelled capacities (lock held)
  private final long pruneAbove; // keys; -1: twice capacitySum

  // one write's backends whose version is odd (lock held)
  private int[] changedSlots;
  private boolean[] changing;
  private int changedCount;

  // one write's mirrors whose lock it holds (lock held)
  private LruMirror[] owned = new LruMirror[8];
  private int ownedCount;

  // the path of the last touchPath (lock held)
  private Node[] path = new Node[16];
  private int[] pathStart = new int[16];

  // the keys of the stored event being applied, eventKeys(...)'s reused buffer (lock held)
  private long[] eventKeys = new long[64];
  private int eventKeyCount;

  // resolve()'s answer (lock held)
  private Node resolvedNode;
  private int resolvedOffset;

  // climb()'s answer: the unlinked nodes above a block, the block each ends at on the path, and the
  // first linked ancestor (lock held)
  private Node[] deadChain = new Node[16];
  private int[] deadEnd = new int[16];
  private Node climbNode;
  private int climbOffset;

  // nodes linked by newNode so far: a path found missing stays missing until it changes (lock held)
  private long linkVersion;

  private final LongAdder evictions = new LongAdder();
  private final LongAdder expired = new LongAdder();
  private final LongAdder stored = new LongAdder();
  private final LongAdder removed = new LongAdder();
  private final LongAdder cleared = new LongAdder();
  private final LongAdder unknownParent = new LongAdder();
  private final LongAdder duplicate = new LongAdder();
  private final LongAdder keyConflict = new LongAdder();
  private final LongAdder unknownRemoval = new LongAdder();
  private final LongAdder noTokens = new LongAdder();
  private final LongAdder blockSizeMismatch = new LongAdder();
  private final LongAdder otherMedium = new LongAdder();
  private final LongAdder lowerTierUnresolved = new LongAdder();
  private final LongAdder lowerTierUnknownRemoval = new LongAdder();
  private final LongAdder unknownSlot = new LongAdder();
  private final LongAdder splits = new LongAdder();
  private final LongAdder retries = new LongAdder();
  private final LongAdder lockedMatches = new LongAdder();
  private final LongAdder prunes = new LongAdder();
  private final LongAdder prunedBlocks = new LongAdder();

  private RadixPrefixIndex(Builder b) {
    this.maxBackendsExplicit = b.maxBackendsExplicit;
    this.defaultCapacity = b.defaultCapacityBlocks;
    this.ttlNanos = b.predictionTtl.toNanos();
    this.lowerTierBlocks = b.lowerTierBlocks;
    this.capacityFeedback = b.capacityFeedback;
    this.pruneAbove = b.pruneAbove;
    slots(b.maxBackends);
    root.linked = true;
  }

  private void slots(int n) {
    this.maxBackends = n;
    this.versions = new AtomicLongArray(n);
    this.mirrors = new AtomicReferenceArray<>(n);
    this.lruStamps = LruMirror.publishedStamps(n);
    this.translators = new EventTranslator[n];
    this.lowerTiers = new AtomicReferenceArray<>(n);
    this.changedSlots = new int[n];
    this.changing = new boolean[n];
  }

  /**
   * An index with the defaults (256 backends until an engine hands down its maxBackends, 100k
   * blocks when unknown, 30 s prediction TTL).
   */
  public static RadixPrefixIndex create() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  private boolean inRange(int slot) {
    return slot >= 0 && slot < maxBackends;
  }

  private void checkSlot(int slot) {
    if (!inRange(slot)) {
      throw new IllegalArgumentException(
          "slot must be in [0, " + maxBackends + "), was " + slot + ": raise maxBackends");
    }
  }

  private static void checkCapacity(long capacityBlocks) {
    if (capacityBlocks < 0 || capacityBlocks > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException(
          "capacityBlocks must be in [0, " + (Integer.MAX_VALUE - 8) + "], was " + capacityBlocks);
    }
  }

  /** Engine-hash mappings kept per backend: twice its capacity plus 1,024. */
  private static int mappingBound(long capacity) {
    return (int) Math.min(Integer.MAX_VALUE - 8, 2 * capacity + 1024);
  }

  /** Lower-tier blocks recorded per backend of this GPU capacity. */
  private int lowerTierBound(long capacity) {
    long b = lowerTierBlocks >= 0 ? lowerTierBlocks : 4 * capacity;
    return (int) Math.min(Integer.MAX_VALUE - 8, b);
  }

  // ---------------------------------------------------------------- membership

  /**
   * Adopts the engine's {@code maxBackends}, unless {@link Builder#maxBackends} was set explicitly
   * (then it must cover the engine's).
   *
   * @throws IllegalArgumentException if the builder's explicit {@code maxBackends} is smaller
   * @throws IllegalStateException if the size would change while a backend is tracked
   */
  @Override
  public void start(int maxBackends) {
    synchronized (lock) {
      if (maxBackends == this.maxBackends
          || (maxBackendsExplicit && maxBackends < this.maxBackends)) {
        return;
      }
      if (maxBackendsExplicit) {
        throw new IllegalArgumentException(
            "prefixIndex: RadixPrefixIndex built with maxBackends "
                + this.maxBackends
                + " cannot serve an engine with maxBackends "
                + maxBackends
                + "; leave RadixPrefixIndex.Builder.maxBackends unset to adopt the engine's");
      }
      for (int i = 0; i < this.maxBackends; i++) {
        if (mirrors.get(i) != null) {
          throw new IllegalStateException(
              "prefixIndex: cannot resize to maxBackends " + maxBackends + " while in use");
        }
      }
      slots(maxBackends);
    }
  }

  @Override
  public void addBackend(int slot, Backend backend) {
    addBackend(slot, backend.capacityBlocks());
  }

  @Override
  public void updateBackend(int slot, Backend before, Backend after) {
    if (before.capacityBlocks() != after.capacityBlocks()) {
      setCapacity(slot, after.capacityBlocks());
    }
  }

  /**
   * Starts tracking a slot. {@code capacityBlocks == 0} means unknown: the index uses its default.
   */
  public void addBackend(int slot, long capacityBlocks) {
    checkSlot(slot);
    checkCapacity(capacityBlocks);
    long capacity = capacityBlocks == 0 ? defaultCapacity : capacityBlocks;
    synchronized (lock) {
      if (mirrors.get(slot) != null) {
        throw new IllegalStateException("slot " + slot + " is already in use");
      }
      translators[slot] = new EventTranslator(mappingBound(capacity));
      mirrors.set(slot, new LruMirror(slot, capacity, lruStamps));
      capacitySum += capacity;
    }
  }

  /** Changes a slot's capacity ({@code 0}: the default); shrinking evicts at once. */
  public void setCapacity(int slot, long capacityBlocks) {
    checkCapacity(capacityBlocks);
    synchronized (lock) {
      LruMirror m = writable(slot);
      if (m == null) {
        return;
      }
      try {
        m.configured = capacityBlocks == 0 ? defaultCapacity : capacityBlocks;
        resize(m, m.configured);
        translators[slot].bound(mappingBound(m.capacity()));
        LowerTier lt = lowerTiers.get(slot);
        if (lt != null) {
          lt.bound(lowerTierBound(m.capacity()));
        }
      } finally {
        endWrite(m);
      }
    }
  }

  /** Sets the modelled capacity, evicting at once when it shrinks. Locks held. */
  private void resize(LruMirror m, long capacity) {
    capacitySum += capacity - m.capacity();
    m.capacity(capacity);
    while (m.size() > m.capacity()) {
      evictTail(m, m.size() - m.capacity());
    }
  }

  /**
   * Follows the engine's own cached count by the rule of {@link CapacityFeedback}: the capacity the
   * backend's mirror is modelled with shrinks (evicting its least recently used beliefs at once)
   * when the engine held fewer blocks than believed and the requests prefilling there at routing
   * time cannot explain it, and grows back toward the configured capacity when the engine held
   * more; a backend that sends KV events is left to its events (its first event restores the
   * configured capacity). The new capacity shows as {@link IndexSignal#CAPACITY_BLOCKS}. On with
   * {@link Builder#capacityFeedback(boolean)}. An unknown slot is ignored; negative counts are
   * treated as 0. Takes the structure lock only when the capacity changes.
   */
  @Override
  public void onEngineCached(
      int slot, int predictedBlocks, int engineBlocks, int inFlightBlocks, long nowNanos) {
    LruMirror peek = inRange(slot) ? mirrors.get(slot) : null;
    if (!capacityFeedback || peek == null) {
      return;
    }
    int predicted = Math.max(0, predictedBlocks);
    int engine = Math.max(0, engineBlocks);
    synchronized (lock) {
      LruMirror m = mirrors.get(slot);
      if (m == null || m.eventsSeen) {
        return;
      }
      long next =
          CapacityFeedback.next(
              m.configured, m.capacity(), m.size(), predicted, engine, inFlightBlocks);
      if (next == m.capacity()) {
        return;
      }
      own(m);
      try {
        resize(m, next);
      } finally {
        endWrite(m);
      }
    }
  }

  @Override
  public void removeBackend(int slot) {
    if (!inRange(slot)) {
      unknownSlot.increment();
      return;
    }
    synchronized (lock) {
      LruMirror m = mirrors.get(slot);
      if (m == null) {
        return;
      }
      own(m);
      try {
        clearMirror(m);
        capacitySum -= m.capacity();
        m.retire();
        mirrors.set(slot, null);
        translators[slot] = null;
        if (lowerTiers.getAndSet(slot, null) != null) {
          lowerTierSlots--;
        }
      } finally {
        endWrite(m);
      }
    }
  }

  /** Takes every block of a backend out of the tree and empties its mirror. Lock held. */
  private void clearMirror(LruMirror m) {
    m.forEachEntry(e -> shorten(m, e, 0));
  }

  /** The structure lock (for tests). */
  Object structureLock() {
    return lock;
  }

  /**
   * Block keys in the distinct arrays that a backend's KV-event mappings keep reachable, through
   * the nodes they name and the split chains from those ({@link #follow}), tree included (for tests
   * and the memory probe: the keys of nodes no longer in the tree are in no other count).
   * O(mappings + chain nodes).
   */
  long keysKeptByMappings(int slot) {
    synchronized (lock) {
      EventTranslator t = inRange(slot) ? translators[slot] : null;
      if (t == null) {
        return 0;
      }
      java.util.Set<Object> seen =
          java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
      java.util.ArrayDeque<Node> todo = new java.util.ArrayDeque<>();
      t.forEachNode(todo::add);
      long keys = 0;
      while (!todo.isEmpty()) {
        Node x = todo.pop();
        if (!seen.add(x)) {
          continue;
        }
        if (seen.add(x.keys)) {
          keys += x.keys.length;
        }
        if (x.splitHead != null) {
          todo.push(x.splitHead);
        }
        if (x.splitTail != null) {
          todo.push(x.splitTail);
        }
      }
      return keys;
    }
  }

  /** Whether a backend's mirror is well formed (for tests; true for an unused slot). */
  boolean listsConsistent(int slot) {
    synchronized (lock) {
      LruMirror m = inRange(slot) ? mirrors.get(slot) : null;
      if (m == null) {
        return true;
      }
      m.lock();
      try {
        return m.consistent();
      } finally {
        m.unlock();
      }
    }
  }

  // ---------------------------------------------------------------- match

  @Override
  public void match(long[] keys, int keyCount, int[] slots, int count, int[] matchedOut) {
    PrefixIndex.checkKeyCount(keys, keyCount);
    Scratch s = SCRATCH.get();
    long[] seen = s.versions(count);
    for (int attempt = 0; attempt < OPTIMISTIC_ATTEMPTS; attempt++) {
      if (readVersions(slots, count, seen)) {
        walk(keys, keyCount, slots, count, matchedOut, s);
        VarHandle.acquireFence(); // the walk's reads happen before the versions are read again
        if (unchanged(slots, count, seen)) {
          endMatch(slots, count, matchedOut, s);
          return;
        }
      } else {
        Thread.onSpinWait();
      }
      retries.increment();
    }
    lockedMatches.increment();
    synchronized (lock) {
      walk(keys, keyCount, slots, count, matchedOut, s);
    }
    endMatch(slots, count, matchedOut, s);
  }

  /**
   * After the walk a match keeps: counts its out-of-range slots (once per call, however many walks
   * it took) and gives a slot given more than once its first position's answer at every position.
   */
  private void endMatch(int[] slots, int count, int[] out, Scratch s) {
    if (s.unknownSlots > 0) {
      unknownSlot.add(s.unknownSlots);
    }
    if (!s.duplicates) {
      return;
    }
    for (int c = 0; c < count; c++) {
      int slot = slots[c];
      if (inRange(slot) && s.candidateOf[slot] != c) {
        out[c] = out[s.candidateOf[slot]];
      }
    }
  }

  /**
   * Per candidate, the blocks right after its GPU match that its backend's lower tier holds (see
   * the class documentation): one volatile read when no backend has a lower tier, else per
   * candidate with one a run of hash lookups under that record's read lock (never the structure
   * lock). Each candidate's answer is its record at one instant; it is not taken at the same
   * instant as the GPU match (a block moving between tiers meanwhile may be missed or counted on
   * both sides, once).
   */
  @Override
  public void matchOffloaded(
      long[] keys, int keyCount, int[] slots, int count, int[] matched, int[] lowerOut) {
    PrefixIndex.checkKeyCount(keys, keyCount);
    if (lowerTierSlots == 0) {
      Arrays.fill(lowerOut, 0, count, 0);
      return;
    }
    for (int c = 0; c < count; c++) {
      int slot = slots[c];
      LowerTier lt = inRange(slot) ? lowerTiers.get(slot) : null;
      int from = Math.max(0, Math.min(matched[c], keyCount));
      lowerOut[c] = lt == null ? 0 : lt.run(keys, from, keyCount);
    }
  }

  /** Reads the candidates' versions; false if one is odd (a write in progress). */
  private boolean readVersions(int[] slots, int count, long[] seen) {
    for (int c = 0; c < count; c++) {
      int slot = slots[c];
      if (inRange(slot)) {
        long v = versions.get(slot);
        if ((v & 1) != 0) {
          return false;
        }
        seen[c] = v;
      }
    }
    return true;
  }

  private boolean unchanged(int[] slots, int count, long[] seen) {
    for (int c = 0; c < count; c++) {
      int slot = slots[c];
      if (inRange(slot) && versions.get(slot) != seen[c]) {
        return false;
      }
    }
    return true;
  }

  /** Per-thread scratch of match: the candidates' versions and slot → candidate lookup. */
  private static final class Scratch {
    private long[] versions = new long[16];
    int[] candidateOf = new int[0];
    int[] candidateWalk = new int[0]; // which walk candidateOf[slot] was written by
    int[] aliveAt = new int[16]; // node step at which the candidate was last seen holding all
    int walk;
    boolean duplicates; // the last walk met a slot twice
    int unknownSlots; // and this many slots out of range
    Node[] touchNodes = new Node[16]; // a held route's path (cleared after use)
    int[] touchEntries = new int[16]; // and the entries it read for them

    /**
     * Walks {@code keys[0, n)} without locks into {@link #touchNodes} / {@link #touchEntries}:
     * returns the node count if every node's run matches, the path ends at a run's end and {@code
     * slot}'s records name an entry holding each whole run; else minus the nodes recorded so far (0
     * or less).
     */
    int heldPath(Node root, long[] keys, int n, int slot) {
      int count = 0;
      Node at = root;
      for (int d = 0; d < n; ) {
        Node x = at.child(keys[d]);
        if (x == null) {
          return -count;
        }
        int len = x.length;
        // the whole run matches when its last key does (chained keys, see commonPrefix)
        if (len > n - d || x.keys[x.from + len - 1] != keys[d + len - 1]) {
          return -count;
        }
        int e = x.wholeEntryRacy(slot);
        if (e < 0) {
          return -count;
        }
        if (count == touchNodes.length) {
          touchNodes = Arrays.copyOf(touchNodes, 2 * count);
          touchEntries = Arrays.copyOf(touchEntries, 2 * count);
        }
        touchNodes[count] = x;
        touchEntries[count++] = e;
        d += len;
        at = x;
      }
      return count;
    }

    long[] versions(int count) {
      if (versions.length < count) {
        versions = new long[Math.max(count, 2 * versions.length)];
        aliveAt = new int[versions.length];
      }
      return versions;
    }
  }

  private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

  /**
   * One walk down the tree along {@code keys}: writes each candidate's held leading blocks into
   * {@code out}. Tolerates concurrent writers (its caller validates); never throws on a racy read.
   */
  private void walk(long[] keys, int n, int[] slots, int count, int[] out, Scratch s) {
    if (s.candidateOf.length < maxBackends) {
      s.candidateOf = new int[maxBackends];
      s.candidateWalk = new int[maxBackends];
    }
    if (s.aliveAt.length < count) {
      s.aliveAt = new int[Math.max(count, 2 * s.aliveAt.length)];
    }
    if (++s.walk == 0) {
      Arrays.fill(s.candidateWalk, 0);
      s.walk = 1;
    }
    int walkId = s.walk;
    int[] candidateOf = s.candidateOf;
    int[] candidateWalk = s.candidateWalk;
    int[] aliveAt = s.aliveAt;
    int alive = 0;
    s.duplicates = false;
    s.unknownSlots = 0;
    for (int c = 0; c < count; c++) {
      out[c] = 0;
      int slot = slots[c];
      if (!inRange(slot)) {
        aliveAt[c] = -1;
        s.unknownSlots++; // counted by the caller for the walk it keeps
      } else if (candidateWalk[slot] == walkId) {
        aliveAt[c] = -1; // the slot again: answered from its first position afterwards
        s.duplicates = true;
      } else {
        candidateOf[slot] = c;
        candidateWalk[slot] = walkId;
        aliveAt[c] = 0;
        alive++;
      }
    }
    Node at = root;
    int depth = 0;
    for (int step = 1; depth < n && alive > 0; step++) {
      Node x = at.child(keys[depth]);
      if (x == null) {
        return;
      }
      int len = x.length;
      int common = commonPrefix(x, keys, depth, n);
      int[] holders = x.holders;
      if (holders == null) {
        return;
      }
      int full = 0;
      for (int r = 0; r + 2 < holders.length; r += 3) {
        int slot = holders[r];
        if (slot < 0 || slot >= maxBackends || candidateWalk[slot] != walkId) {
          continue;
        }
        int c = candidateOf[slot];
        if (aliveAt[c] != step - 1) {
          continue;
        }
        int got = Math.min(holders[r + 1], common);
        out[c] = depth + got;
        if (got == len) {
          aliveAt[c] = step;
          full++;
        }
      }
      alive = full;
      depth += len;
      at = x;
    }
  }

  /**
   * {@link IndexSignal#LRU_AGE_NANOS} from the stamp the slot's mirror published ({@link
   * LruMirror#lruAgeNanos}: one volatile read of an array shared by the mirrors, no lock; absent
   * for a slot without a mirror, whose cell holds no stamp); {@link IndexSignal#HELD_BLOCKS} and
   * {@link IndexSignal#CONFIRMED_BLOCKS} take the write lock briefly; so does {@link
   * IndexSignal#OFFLOADED_BLOCKS}: blocks stored minus removed on tiers other than the GPU, as the
   * events' {@code medium} says (absent before the backend's first such event).
   */
  @Override
  public long signal(int slot, IndexSignal signal, long nowNanos) {
    if (signal == IndexSignal.LRU_AGE_NANOS) { // every candidate of every decision: no mirror read
      long age = inRange(slot) ? LruMirror.lruAgeNanos(lruStamps, slot, nowNanos) : Long.MAX_VALUE;
      return age == Long.MAX_VALUE ? IndexSignal.ABSENT : age;
    }
    LruMirror m = inRange(slot) ? mirrors.get(slot) : null;
    if (m == null) {
      return IndexSignal.ABSENT;
    }
    return switch (signal) {
      case LRU_AGE_NANOS -> throw new AssertionError(); // answered above
      case HELD_BLOCKS -> {
        synchronized (lock) {
          yield m.size();
        }
      }
      case CONFIRMED_BLOCKS -> {
        synchronized (lock) {
          yield m.confirmedBlocks();
        }
      }
      case OFFLOADED_BLOCKS -> {
        synchronized (lock) {
          yield m.offloadedBlocks < 0 ? IndexSignal.ABSENT : m.offloadedBlocks;
        }
      }
      case CAPACITY_BLOCKS -> {
        synchronized (lock) {
          yield m.capacity();
        }
      }
    };
  }

  // ---------------------------------------------------------------- writes

  @Override
  public void recordRouted(long[] keys, int keyCount, int slot, long nowNanos) {
    PrefixIndex.checkKeyCount(keys, keyCount);
    if (touchHeld(keys, keyCount, slot, nowNanos)) {
      return;
    }
    synchronized (lock) {
      LruMirror m = writable(slot);
      if (m == null) {
        return;
      }
      try {
        expire(m, nowNanos);
        int n = (int) Math.min(keyCount, m.capacity()); // a longer path keeps its head
        if (n > 0) {
          touchPath(m, root, keys, n, false, nowNanos);
        }
      } finally {
        endWrite(m);
      }
    }
  }

  /**
   * The held route's fast path: if {@code slot} holds the whole path {@code keys[0, keyCount)} and
   * the path ends at a node boundary, refreshes its entries (deepest first, one stamp) without the
   * structure lock and returns true. The path is found by a walk without locks, as {@link #match}
   * does. Usually the refresh is appended to the mirror's {@link TouchLog} (no lock; see {@link
   * #logTouch}); a backend whose predictions can expire, a path of more than {@link TouchLog#WIDTH}
   * nodes or a full log take the mirror's lock instead ({@link #touchWhole}). Returns false, having
   * changed nothing, when the path is not held in full, ends inside a run, is longer than the
   * capacity, or when predictions are due to expire: the caller then takes the structure lock.
   */
  private boolean touchHeld(long[] keys, int keyCount, int slot, long now) {
    LruMirror m = inRange(slot) ? mirrors.get(slot) : null;
    if (m == null || keyCount == 0) {
      return false;
    }
    Scratch s = SCRATCH.get();
    long epoch = m.epoch();
    if (mirrors.get(slot) != m) {
      // the backend was removed (and the slot perhaps reused) after the first read: holder
      // records are keyed by slot, so the walk could find the new backend's entries and log
      // them to the retired mirror, whose log nobody applies. Retirement takes the mirror's
      // lock, so a removal after the epoch read moves the epoch and the record settles instead
      return false;
    }
    int count = s.heldPath(root, keys, keyCount, slot);
    try {
      if (count <= 0) {
        return false;
      }
      boolean expiring = m.eventsSeen && ttlNanos > 0;
      if (!expiring && (epoch & 1) == 0 && count <= TouchLog.WIDTH) {
        long seq = m.log().claim();
        if (seq >= 0) {
          return logTouch(m, s, count, seq, epoch, now);
        }
      }
      return touchWhole(m, s, count, keyCount, now);
    } finally {
      Arrays.fill(s.touchNodes, 0, Math.abs(count), null);
    }
  }

  /**
   * Appends a held route's refresh to the mirror's log as record {@code seq} (claimed). The next
   * holder of the mirror's lock applies it, checking the entries as {@link #touchWhole} does; it
   * passes that check if no thread took the lock between the walk and the append ({@code epoch}
   * unchanged and even), because the nodes and holdings of a backend change only under its mirror
   * lock. Two cases settle at once under the lock instead, so that the route has taken effect when
   * it returns: the epoch moved (a lock holder may have changed the path, or applied the log before
   * this record and published a victim this route touches), or the route touches the published LRU
   * victim (the published age would be stale). Settling applies the log and reads this record's
   * outcome: if the path was no longer held in full (or the outcome is no longer known: the ring
   * position was reused meanwhile), returns false and the caller routes under the structure lock.
   *
   * <p>Ordering: a lock holder turns the epoch odd and then reads the log's tail. Either that read
   * sees this record's claim (the holder waits for the record and applies it), or the claim's
   * compare-and-set comes after it, and then this thread's epoch read, which follows the
   * compare-and-set, sees the moved epoch and settles. So the record itself is published with a
   * release store, not a fence.
   */
  private boolean logTouch(LruMirror m, Scratch s, int count, long seq, long epoch, long now) {
    m.log().write(seq, s.touchNodes, s.touchEntries, count, now);
    boolean settle = false;
    int victim = m.victimEntry();
    if (victim >= 0) {
      for (int i = 0; i < count; i++) {
        settle |= s.touchEntries[i] == victim;
      }
    }
    if (!settle && m.epoch() == epoch) {
      return true;
    }
    m.lock();
    try {
      return m.log().outcome(seq) == 1;
    } finally {
      m.unlock();
    }
  }

  /** {@link #touchHeld}'s refresh under the mirror's lock. */
  private boolean touchWhole(LruMirror m, Scratch s, int count, int keyCount, long now) {
    m.lock();
    try {
      if (mirrors.get(m.slot) != m || keyCount > m.capacity() || expiryDue(m, now)) {
        return false;
      }
      Node[] nodes = s.touchNodes;
      int[] entries = s.touchEntries;
      for (int i = 0; i < count; i++) {
        if (!m.holdsWhole(entries[i], nodes[i])) {
          return false;
        }
      }
      long stamp = m.nextStamp(now);
      for (int i = count - 1; i >= 0; i--) {
        m.touch(entries[i], stamp);
      }
      return true;
    } finally {
      m.unlock();
    }
  }

  /** Whether {@link #expire} would drop something now. Mirror lock held. */
  private boolean expiryDue(LruMirror m, long now) {
    if (!m.eventsSeen || ttlNanos <= 0) {
      return false;
    }
    int e = m.predictedTail();
    return e >= 0 && now - m.stamp(e) > ttlNanos;
  }

  /**
   * The mirror a write of {@code slot} changes, with its lock taken for the rest of the write, or
   * null (counted) for an unknown slot. Lock held.
   */
  private @Nullable LruMirror writable(int slot) {
    LruMirror m = inRange(slot) ? mirrors.get(slot) : null;
    if (m == null) {
      unknownSlot.increment();
    } else {
      own(m);
    }
    return m;
  }

  /**
   * Takes {@code m}'s lock until the end of the current write ({@link #releaseMirrors}), once. Lock
   * held. Taking it applies {@code m}'s {@link TouchLog}. A structure writer may wait here for a
   * held route refreshing or settling under {@code m}'s lock, which waits for nothing while holding
   * it but a logged record's writer (who holds no lock), so the two orders cannot deadlock.
   */
  private void own(LruMirror m) {
    if (!m.ownedByWriter) {
      m.lock();
      m.ownedByWriter = true;
      if (ownedCount == owned.length) {
        owned = Arrays.copyOf(owned, 2 * ownedCount);
      }
      owned[ownedCount++] = m;
    }
  }

  /** Releases the mirror locks the current write took. Lock held. */
  private void releaseMirrors() {
    for (int i = 0; i < ownedCount; i++) {
      LruMirror m = owned[i];
      owned[i] = null;
      m.ownedByWriter = false;
      m.unlock();
    }
    ownedCount = 0;
  }

  /** Makes a backend's version odd before the first change of a write match could see. */
  private void markChanging(int slot) {
    if (!changing[slot]) {
      changing[slot] = true;
      changedSlots[changedCount++] = slot;
      versions.incrementAndGet(slot);
      VarHandle.storeStoreFence(); // the version is visible before the changes
    }
  }

  /**
   * Ends a write: versions even again, the written mirror's LRU stamp published, the mirror locks
   * released.
   */
  private void endWrite(LruMirror m) {
    try {
      if (treeKeys > (pruneAbove < 0 ? 2 * capacitySum : pruneAbove)) {
        prune();
      }
      for (int i = 0; i < changedCount; i++) {
        int slot = changedSlots[i];
        changing[slot] = false;
        versions.incrementAndGet(slot);
      }
      changedCount = 0;
      m.publishLru();
    } finally {
      releaseMirrors();
    }
  }

  /**
   * Holds the first {@code min(n, capacity)} blocks of the path {@code keys[0, n)} below {@code
   * attach} on {@code m}'s backend (confirmed if {@code confirm}), all touched with one stamp,
   * deepest first, then what it holds above {@code attach} ({@link #touchAbove}); except for a
   * store ({@code confirm}) below a held {@code attach} that evicts nothing: its entries are placed
   * just less recent than {@code attach}'s, with its stamp (recency is not refreshed). The
   * structure of the whole path exists afterwards (nodes beyond what is held are unlinked again
   * unless someone holds them); {@link #path} and {@link #pathStart} describe it. Returns the
   * number of path nodes. Lock held.
   */
  private int touchPath(LruMirror m, Node attach, long[] keys, int n, boolean confirm, long now) {
    int slot = m.slot;
    long stamp = m.nextStamp(now);
    // room for the path below what the backend holds above it (a store's prefix): the store must
    // not evict its own prefix, which would strand the blocks it holds below unheld ones
    int hold = (int) Math.min(n, m.capacity() - heldAbove(slot, attach));
    // 1. split where the held part ends or diverges, touch what is held already
    int present = 0;
    int count = 0;
    Node at = attach;
    for (int d = 0; d < hold; ) {
      Node x = at.child(keys[d]);
      if (x == null) {
        break;
      }
      int common = commonPrefix(x, keys, d, hold);
      if (common < x.length()) {
        x = split(x, common);
      }
      addToPath(count++, x, d);
      present += x.held(slot);
      d += x.length();
      at = x;
    }
    int missing = hold - present;
    int anchor = -1;
    if (confirm && attach != root && m.size() + missing <= m.capacity()) {
      int pe = attach.entry(slot);
      if (pe >= 0 && m.held(pe) == attach.length()) {
        anchor = pe;
      }
    }
    for (int i = count - 1; i >= 0; i--) {
      int e = path[i].entry(slot);
      if (e >= 0) {
        if (confirm) {
          m.set(e, m.held(e), m.held(e));
        }
        if (anchor >= 0) {
          m.placeBelow(anchor, e);
        } else {
          m.touch(e, stamp);
        }
      }
    }
    if (missing == 0 && hold == n) {
      if (anchor < 0) {
        touchAbove(m, attach, stamp);
      }
      return count; // held in full: recency and confirmation were all there was to do
    }
    // 2. make room with blocks outside the path and its prefix (both now the most recent)
    if (anchor < 0) {
      touchAbove(m, attach, stamp);
    }
    while (m.size() + missing > m.capacity()) {
      evictTail(m, m.size() + missing - m.capacity());
    }
    if (!attach.linked) {
      attach = liveEnd(attach);
    }
    // 3. the whole path, split at the end of the held part; then hold it, deepest first
    count = 0;
    at = attach;
    for (int d = 0; d < n; ) {
      int end = d < hold ? hold : n;
      Node x = at.child(keys[d]);
      if (x == null) {
        x = newNode(at, Arrays.copyOfRange(keys, d, end));
      } else {
        int common = commonPrefix(x, keys, d, end);
        if (common < x.length()) {
          x = split(x, common);
        }
      }
      addToPath(count++, x, d);
      d += x.length();
      at = x;
    }
    for (int i = count - 1; i >= 0; i--) {
      if (pathStart[i] >= hold) {
        continue;
      }
      Node x = path[i];
      int len = x.length();
      int e = x.entry(slot);
      if (e < 0) {
        markChanging(slot);
        e = anchor >= 0 ? m.addBelow(anchor, x, len, len) : m.add(x, len, confirm ? len : 0, stamp);
        x.setHolder(slot, len, e);
      } else {
        if (m.held(e) != len) {
          markChanging(slot);
          x.setHeld(slot, len);
        }
        m.set(e, len, confirm ? len : m.confirmed(e));
        if (anchor >= 0) {
          m.placeBelow(anchor, e);
        } else {
          m.touch(e, stamp);
        }
      }
    }
    if (anchor < 0) {
      touchAbove(m, attach, stamp);
    }
    if (hold < n) {
      cleanup(path[count - 1]);
    }
    return count;
  }

  /**
   * Blocks {@code slot} holds on the path from the root to {@code attach} (inclusive). Lock held.
   */
  private long heldAbove(int slot, Node attach) {
    long held = 0;
    for (Node x = attach; x != root; x = x.parent) {
      held += x.held(slot);
    }
    return held;
  }

  /**
   * Touches what {@code m}'s backend holds of the path from the root to {@code attach} (inclusive),
   * after the path below it: a stored block's prefix is in use in the engine too, and ancestors
   * stay more recent than their descendants, so eviction never strands held blocks below blocks
   * nobody holds. Nothing for a path from the root. Lock held.
   */
  private void touchAbove(LruMirror m, Node attach, long stamp) {
    for (Node x = attach; x != root; x = x.parent) {
      int e = x.entry(m.slot);
      if (e >= 0) {
        m.touch(e, stamp);
      }
    }
  }

  private void addToPath(int i, Node x, int start) {
    if (i == path.length) {
      path = Arrays.copyOf(path, 2 * i);
      pathStart = Arrays.copyOf(pathStart, 2 * i);
    }
    path[i] = x;
    pathStart[i] = start;
  }

  /**
   * Length of the common prefix of {@code run} and {@code keys[from, to)}, the first keys assumed
   * equal (at least 1). Keys are chained ({@link BlockHasher}: equal keys at a position mean equal
   * prompts up to it), so when the last keys of the range are equal the whole range is common and
   * the keys between are not read: a walk loads a run's last cache line instead of streaming the
   * run (1.5 KB for 192 blocks), in the match and again in a held route's refresh. Otherwise {@link
   * Arrays#mismatch} finds where they part, several keys per instruction.
   */
  static int commonPrefix(long[] run, long[] keys, int from, int to) {
    return commonPrefix(run, 0, run.length, keys, from, to);
  }

  /** {@link #commonPrefix(long[], long[], int, int)} of node {@code x}'s run. */
  private static int commonPrefix(Node x, long[] keys, int from, int to) {
    return commonPrefix(x.keys, x.from, x.length, keys, from, to);
  }

  /** The common prefix of the run {@code run[at, at + length)} and {@code keys[from, to)}. */
  private static int commonPrefix(long[] run, int at, int length, long[] keys, int from, int to) {
    int limit = Math.min(length, to - from);
    if (limit <= 1) {
      return 1;
    }
    if (run[at + limit - 1] == keys[from + limit - 1]) {
      return limit;
    }
    int m = Arrays.mismatch(run, at + 1, at + limit - 1, keys, from + 1, from + limit - 1);
    return m < 0 ? limit - 1 : m + 1;
  }

  private Node newNode(Node parent, long[] run) {
    Node x = new Node(run, parent);
    x.linked = true;
    parent.addChild(x);
    linkVersion++;
    nodeCount++;
    treeKeys += run.length;
    return x;
  }

  /**
   * Splits {@code x} before run position {@code at} ({@code 0 < at < length}): a new head node
   * (same first key, same parent) whose only child is a new tail node with {@code x}'s children.
   * Every holder's entry is split the same way (the tail part just less recent than the head).
   * Moves no block between backends, so no version changes. Returns the head. Lock held.
   */
  private Node split(Node x, int at) {
    Node head = part(x, 0, at, x.parent);
    Node tail = part(x, at, x.length() - at, head);
    head.linked = true;
    tail.linked = true;
    x.moveChildrenTo(tail);
    x.forEachHolder(
        (slot, held, e) -> {
          LruMirror m = mirrors.get(slot);
          own(m);
          int confirmed = m.confirmed(e);
          if (held > at) {
            int t = m.addBelow(e, tail, held - at, Math.max(0, confirmed - at));
            tail.setHolder(slot, held - at, t);
          }
          m.repoint(e, head);
          m.set(e, Math.min(held, at), Math.min(confirmed, at));
          head.setHolder(slot, Math.min(held, at), e);
        });
    head.addChild(tail);
    x.parent.replaceChild(x, head);
    x.linked = false;
    x.splitHead = head;
    x.splitTail = tail;
    x.splitAt = at;
    nodeCount++;
    splits.increment();
    cleanup(tail);
    return head;
  }

  /** Unlinks {@code x} and then its ancestors while they are held by no one and childless. */
  private void cleanup(Node x) {
    while (x != root && x.linked && x.holderCount() == 0 && !x.hasChildren()) {
      x.parent.removeChild(x);
      x.linked = false;
      nodeCount--;
      treeKeys -= x.length();
      x = x.parent;
    }
  }

  /**
   * Takes out of the tree every key no backend holds, with what lies below it: for each node that
   * no backend holds in full, every holding in the subtrees of its children is dropped and the
   * node's run is cut after the most any backend holds of it (the node goes if nobody holds any).
   * No match changes: every backend's match ends inside such a node. What is dropped is held blocks
   * a match can never reach (below a gap a {@code BlockRemoved} left, below a parent the index had
   * evicted or whose predictions expired), so the mirrors shrink; they are counted as {@code
   * prunedBlocks}. Afterwards every key in the tree is held by some backend, so at most {@link
   * #capacitySum} keys remain. One walk of the tree; {@link #endWrite} runs it when the keys exceed
   * twice the capacities, so its cost is spread over at least the capacities' worth of keys that
   * nobody held. Lock held.
   */
  private void prune() {
    prunes.increment();
    ArrayDeque<Node> todo = new ArrayDeque<>();
    ArrayDeque<Node> cut = new ArrayDeque<>();
    root.forEachChild(todo::add);
    while (!todo.isEmpty()) {
      Node x = todo.poll();
      if (x.maxHeld() == x.length()) {
        x.forEachChild(todo::add);
      } else {
        cut.add(x);
      }
    }
    for (Node x : cut) {
      ArrayDeque<Node> below = new ArrayDeque<>();
      x.forEachChild(below::add);
      while (!below.isEmpty()) {
        Node y = below.poll();
        y.forEachChild(below::add);
        drop(y);
      }
      if (!x.linked) {
        continue; // x held nothing and went with its last child
      }
      int keep = x.maxHeld();
      if (keep == 0) {
        cleanup(x);
      } else {
        split(x, keep); // the tail, held by no one and now childless, is unlinked
      }
    }
  }

  /** Drops every holding of {@code x} (counted as pruned). Lock held. */
  private void drop(Node x) {
    int n = x.holderCount();
    if (n == 0) {
      return;
    }
    int[] slots = new int[n];
    int[] entries = new int[n];
    int[] i = {0};
    x.forEachHolder(
        (slot, held, e) -> {
          slots[i[0]] = slot;
          entries[i[0]++] = e;
        });
    for (int k = 0; k < n; k++) {
      LruMirror m = mirrors.get(slots[k]);
      own(m);
      prunedBlocks.add(m.held(entries[k]));
      shorten(m, entries[k], 0);
    }
  }

  /**
   * Sets the blocks entry {@code e} of {@code m} holds to {@code held} (tail-first: the first
   * {@code held} stay), confirmed blocks capped to match; drops the entry at 0. Lock held.
   */
  private void shorten(LruMirror m, int e, int held) {
    markChanging(m.slot);
    Node x = m.node(e);
    if (held == 0) {
      m.remove(e);
      x.removeHolder(m.slot);
      cleanup(x);
    } else {
      m.set(e, held, Math.min(m.confirmed(e), held));
      x.setHeld(m.slot, held);
    }
  }

  /** Evicts up to {@code excess} blocks from the least recently used entry. Lock held. */
  private void evictTail(LruMirror m, long excess) {
    int v = m.lruTail();
    int held = m.held(v);
    int k = (int) Math.min(held, excess);
    shorten(m, v, held - k);
    evictions.add(k);
  }

  /** Drops predicted blocks untouched for longer than the TTL, on a backend that sends events. */
  private void expire(LruMirror m, long now) {
    if (!m.eventsSeen || ttlNanos <= 0) {
      return;
    }
    int e;
    while ((e = m.predictedTail()) >= 0 && now - m.stamp(e) > ttlNanos) {
      expired.add(m.held(e) - m.confirmed(e));
      shorten(m, e, m.confirmed(e));
    }
  }

  /**
   * Where block {@code offset} of node {@code x} is now: follows splits into {@link #resolvedNode}
   * and {@link #resolvedOffset}; if that node was unlinked, finds its path again below its first
   * linked ancestor, making what is missing (held by no one: callers attach below it or clean it
   * up). Iterative: an evicted chain of decode-time stores can be thousands of nodes deep. O(the
   * unlinked nodes above the block + the keys made). Lock held.
   */
  private void resolve(Node x, int offset) {
    follow(x, offset);
    x = resolvedNode;
    offset = resolvedOffset;
    if (!x.linked) {
      int count = climb(x, offset, false);
      Node at = climbNode == root ? root : endAt(climbNode, climbOffset);
      for (int i = count - 1; i >= 0; i--) {
        Node d = deadChain[i];
        at = insertStructure(at, d.keys, d.from, d.from + deadEnd[i] + 1);
      }
      x = at;
      offset = x.length() - 1;
    }
    resolvedNode = x;
    resolvedOffset = offset;
  }

  /**
   * Where block {@code offset} of node {@code x} is now, as {@link #resolve}, but never making a
   * path: false if the block's path is not in the tree (so no backend holds the block). A path
   * found missing is remembered on the unlinked nodes below where it parts ({@link Node#missingAt})
   * until the tree links a new node, so the removals of an evicted chain, tail first as the engine
   * frees it, cost O(1) each after the first instead of a walk up and down the chain each. Lock
   * held.
   */
  private boolean locate(Node x, int offset) {
    follow(x, offset);
    x = resolvedNode;
    offset = resolvedOffset;
    if (x.linked) {
      return true;
    }
    int count = climb(x, offset, true);
    if (count < 0) {
      return false;
    }
    Node at = climbNode;
    int pos = climbNode == root ? -1 : climbOffset;
    for (int i = count - 1; i >= 0; i--) {
      Node d = deadChain[i];
      for (int j = 0; j <= deadEnd[i]; j++) {
        long key = d.key(j);
        if (pos + 1 < at.length()) {
          if (at.key(pos + 1) != key) {
            missingBelow(i, j);
            return false;
          }
          pos++;
        } else {
          Node c = at.child(key);
          if (c == null) {
            missingBelow(i, j);
            return false;
          }
          at = c;
          pos = 0;
        }
      }
    }
    resolvedNode = at;
    resolvedOffset = pos;
    return true;
  }

  /**
   * Climbs from the unlinked node {@code x} (block {@code offset}) to its first linked ancestor:
   * records the unlinked nodes ({@code x} first) and the block of each the path goes through last
   * in {@link #deadChain} / {@link #deadEnd}, the ancestor and its block in {@link #climbNode} /
   * {@link #climbOffset} (the root: offset -1), and returns the count; with {@code memo}, -1 as
   * soon as a node's path is known missing. Lock held.
   */
  private int climb(Node x, int offset, boolean memo) {
    int count = 0;
    Node d = x;
    int end = offset;
    while (true) {
      if (memo && d.missingAt == linkVersion) {
        return -1;
      }
      if (count == deadChain.length) {
        deadChain = Arrays.copyOf(deadChain, 2 * count);
        deadEnd = Arrays.copyOf(deadEnd, 2 * count);
      }
      deadChain[count] = d;
      deadEnd[count++] = end;
      Node p = d.parent;
      if (p == null || p == root) {
        climbNode = root;
        climbOffset = -1;
        return count;
      }
      follow(p, p.length() - 1);
      if (resolvedNode.linked) {
        climbNode = resolvedNode;
        climbOffset = resolvedOffset;
        return count;
      }
      d = resolvedNode;
      end = resolvedOffset;
    }
  }

  /**
   * {@link #locate}'s walk parted at block {@code j} of {@code deadChain[i]}: no offset of the
   * nodes below it is in the tree, nor of that node if it parted at its first block.
   */
  private void missingBelow(int i, int j) {
    for (int q = 0; q < i; q++) {
      deadChain[q].missingAt = linkVersion;
    }
    if (j == 0) {
      deadChain[i].missingAt = linkVersion;
    }
  }

  /**
   * Where block {@code offset} of {@code x} went through splits, into {@link #resolvedNode} and
   * {@link #resolvedOffset} (a node never split, linked or not). Lock held.
   */
  private void follow(Node x, int offset) {
    while (x.splitHead != null) {
      if (offset < x.splitAt) {
        x = x.splitHead;
      } else {
        offset -= x.splitAt;
        x = x.splitTail;
      }
    }
    resolvedNode = x;
    resolvedOffset = offset;
  }

  /** A linked node whose run ends with {@code x}'s last block (re-created if need be). */
  private Node liveEnd(Node x) {
    if (x == root) {
      return root;
    }
    resolve(x, x.length() - 1);
    return endAt(resolvedNode, resolvedOffset);
  }

  /** The node whose run ends at block {@code offset} of {@code x}, splitting if needed. */
  private Node endAt(Node x, int offset) {
    return offset == x.length() - 1 ? x : split(x, offset + 1);
  }

  /**
   * A node for {@code x}'s run {@code [at, at + length)}: a view of the same array while the part
   * is at least half of it (a split costs O(1), and a run split a block at a time, as per-block
   * head-first removals do, costs O(length) in all instead of O(length²) copied and kept alive by
   * the split chain {@link #follow} walks), else a copy (an array is never kept alive by a run
   * shorter than half of it). Lock held.
   */
  private static Node part(Node x, int at, int length, @Nullable Node parent) {
    if (2 * length >= x.keys.length) {
      return new Node(x.keys, x.from + at, length, parent);
    }
    int start = x.from + at;
    return new Node(Arrays.copyOfRange(x.keys, start, start + length), parent);
  }

  /**
   * Ensures the path {@code keys[from, to)} exists below {@code parent} (held by no one where new)
   * and returns the node ending at block {@code to - 1}. Lock held.
   */
  private Node insertStructure(Node parent, long[] keys, int from, int to) {
    Node at = parent;
    for (int d = from; d < to; ) {
      Node x = at.child(keys[d]);
      if (x == null) {
        return newNode(at, Arrays.copyOfRange(keys, d, to));
      }
      int common = commonPrefix(x, keys, d, to);
      if (common < x.length()) {
        x = split(x, common);
      }
      d += x.length();
      at = x;
    }
    return at;
  }

  // ---------------------------------------------------------------- KV events

  @Override
  public void apply(int slot, KvEvent event, BlockHasher hasher, long nowNanos) {
    apply(slot, event, hasher, 0L, nowNanos);
  }

  /**
   * Applies one KV event; a {@code BlockStored} without a parent is keyed from {@code seed} (the
   * isolation seed of the requests that stored it: the engine derives it from the event's cache
   * salt), so it confirms the keys those requests were routed with.
   */
  @Override
  public void apply(int slot, KvEvent event, BlockHasher hasher, long seed, long nowNanos) {
    Objects.requireNonNull(event, "event");
    Objects.requireNonNull(hasher, "hasher");
    synchronized (lock) {
      LruMirror m = writable(slot);
      if (m == null) {
        return;
      }
      try {
        if (!m.eventsSeen) {
          m.eventsSeen = true;
          if (m.capacity() != m.configured) {
            // events are authoritative from now on, and capacity feedback no longer runs here: a
            // capacity it shrank before the first event would otherwise stay shrunk for good
            resize(m, m.configured);
          }
        }
        EventTranslator t = translators[slot];
        if (event instanceof BlockStored s) {
          applyStored(m, t, s, hasher, seed, nowNanos);
        } else if (event instanceof BlockRemoved r) {
          applyRemoved(m, t, r);
        } else if (event instanceof AllBlocksCleared) {
          clearMirror(m);
          m.offloadedBlocks = Math.min(0, m.offloadedBlocks);
          t.clear();
          LowerTier lt = lowerTiers.get(slot);
          if (lt != null) {
            lt.clear();
          }
          cleared.increment();
        }
        expire(m, nowNanos);
      } finally {
        endWrite(m);
      }
    }
  }

  private void applyStored(
      LruMirror m, EventTranslator t, BlockStored s, BlockHasher hasher, long seed, long now) {
    if (offloaded(m, s.medium(), s.blockCount())) {
      storeLower(m, t, s, hasher, seed);
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
    Node attach = root;
    long parentKey = seed; // a store that starts the sequence: keyed as its requests were
    Long parent = s.parentBlockHash();
    if (parent != null) {
      int pm = t.find(parent);
      if (pm < 0) {
        unknownParent.increment();
        return;
      }
      parentKey = t.routerKey(pm);
      resolve(t.node(pm), t.offset(pm));
      t.place(pm, resolvedNode, resolvedOffset);
      attach = endAt(resolvedNode, resolvedOffset);
    }
    long[] routerKeys = eventKeys(hasher, s, parentKey);
    int n = Math.min(eventKeyCount, s.blockCount());
    for (int i = 0; i < n; i++) {
      // an engine hash mapped to another router key (the same tokens keyed from another seed):
      // the copy keeps the old key, so a block confirmed under the new one would never be
      // removed; the store stops before it, and the known hashes from there count one more copy
      // where they are (as many removals as stores)
      int known = t.find(s.blockHash(i));
      if (known >= 0 && t.routerKey(known) != routerKeys[i]) {
        keyConflict.increment();
        for (int j = i; j < n; j++) {
          int c = t.find(s.blockHash(j));
          if (c >= 0) {
            t.copy(c);
            duplicate.increment();
          }
        }
        n = i;
        break;
      }
    }
    if (n == 0) {
      cleanup(attach);
      return;
    }
    touchPath(m, attach, routerKeys, n, true, now);
    for (int i = 0, j = 0; i < n; i++) {
      while (pathStart[j] + path[j].length() <= i) {
        j++;
      }
      if (t.stored(s.blockHash(i), routerKeys[i], path[j], i - pathStart[j])) {
        duplicate.increment();
      }
    }
    stored.add(n);
  }

  /**
   * The router keys of a stored event's token ids chained from {@code seed}, in a reused buffer
   * (the first {@link #eventKeyCount}): a store allocates nothing for its keys (new nodes copy
   * their runs from it). Lock held.
   */
  private long[] eventKeys(BlockHasher hasher, BlockStored s, long seed) {
    Prompt tokens = s.tokens();
    int n = hasher.keys(tokens, seed, eventKeys);
    if (n > eventKeys.length) {
      eventKeys = new long[Math.max(n, 2 * eventKeys.length)];
      int again = hasher.keys(tokens, seed, eventKeys);
      if (again != n) {
        throw new IllegalStateException(
            "hasher " + hasher + " returned " + n + " then " + again + " keys");
      }
    } else if (n < 0) {
      throw new IllegalStateException("hasher " + hasher + " returned " + n + " keys");
    }
    eventKeyCount = n;
    return eventKeys;
  }

  /**
   * Counts a store ({@code blocks > 0}) or removal ({@code blocks < 0}) on a tier other than the
   * GPU (a non-null medium other than {@code "GPU"}) in the backend's offloaded blocks, and says
   * whether it was one: such events never touch the GPU tree (an offloaded copy's removal must not
   * remove the GPU copy with the same hash).
   */
  private boolean offloaded(LruMirror m, @Nullable String medium, int blocks) {
    if (medium == null || medium.equalsIgnoreCase("GPU")) {
      return false;
    }
    otherMedium.increment();
    m.offloadedBlocks = Math.max(0, Math.max(0, m.offloadedBlocks) + blocks);
    return true;
  }

  /**
   * Records a lower-tier store in the backend's lower tier (made on first use): each block keyed by
   * its engine hash's GPU mapping or existing lower-tier record, or, when the event carries token
   * ids, from them continuing from its parent's key (or {@code seed}). Lock held.
   */
  private void storeLower(
      LruMirror m, EventTranslator t, BlockStored s, BlockHasher hasher, long seed) {
    int bound = lowerTierBound(m.capacity());
    if (bound == 0) {
      return;
    }
    LowerTier lt = lowerTiers.get(m.slot);
    if (lt == null) {
      lt = new LowerTier(bound);
      lowerTiers.set(m.slot, lt);
      lowerTierSlots++;
    }
    long[] fromTokens = null;
    if (s.tokenCount() > 0 && s.blockSize() == hasher.tokensPerBlock()) {
      Long parent = s.parentBlockHash();
      Long parentKey = parent == null ? Long.valueOf(seed) : keyOf(t, lt, parent);
      if (parentKey != null) {
        fromTokens = BlockHasher.keysOf(hasher, s.tokens(), parentKey);
      }
    }
    for (int i = 0; i < s.blockCount(); i++) {
      long h = s.blockHash(i);
      Long key = fromTokens != null && i < fromTokens.length ? Long.valueOf(fromTokens[i]) : null;
      if (key == null) {
        key = keyOf(t, lt, h);
      }
      if (key == null) {
        lowerTierUnresolved.increment();
      } else {
        lt.stored(h, key);
      }
    }
  }

  /** The router key of an engine hash: its GPU mapping, else its lower-tier record, or null. */
  private static @Nullable Long keyOf(EventTranslator t, LowerTier lt, long engineHash) {
    int pm = t.find(engineHash);
    return pm >= 0 ? Long.valueOf(t.routerKey(pm)) : lt.keyOf(engineHash);
  }

  private void applyRemoved(LruMirror m, EventTranslator t, BlockRemoved r) {
    if (offloaded(m, r.medium(), -r.blockCount())) {
      LowerTier lt = lowerTiers.get(m.slot);
      for (int i = 0; i < r.blockCount(); i++) {
        if (lt == null || !lt.removed(r.blockHash(i))) {
          lowerTierUnknownRemoval.increment();
        }
      }
      return;
    }
    int n = r.blockCount();
    for (int i = 0; i < n; ) {
      int mapping = t.find(r.blockHash(i++));
      if (mapping < 0) {
        unknownRemoval.increment();
        continue;
      }
      removed.increment();
      Node x = t.node(mapping);
      int offset = t.offset(mapping);
      boolean last = t.release(mapping);
      if (!last || x == null) {
        continue;
      }
      if (!locate(x, offset)) { // the block's node may have been unlinked (and made again) since
        continue; // not in the tree: nobody holds it
      }
      x = resolvedNode;
      offset = resolvedOffset;
      int held = x.held(m.slot);
      if (held <= offset) {
        continue;
      }
      // the event's next blocks that are this node's next held blocks, each its key's last copy,
      // go with this one: one shortening (and at most one split) for a head-first run, instead of
      // a split per block whose forwarding pointers keep the dead parts' successors reachable
      int end = offset;
      while (end + 1 < held && i < n) {
        int next = t.find(r.blockHash(i));
        if (next < 0
            || !t.lastCopy(next)
            || !currentlyAt(t.node(next), t.offset(next), x, end + 1)) {
          break; // the next turn takes it alone (finding it again: the translator is unchanged)
        }
        i++;
        removed.increment();
        t.release(next);
        end++;
      }
      if (end < held - 1) {
        x = split(x, end + 1); // keep the blocks after the gap
      }
      shorten(m, x.entry(m.slot), offset);
    }
  }

  /**
   * Whether block {@code offset} of {@code x}, following splits, is block {@code at} of the current
   * node {@code node}; changes nothing in the tree (unlike {@link #resolve}, never re-creates a
   * path). Lock held.
   */
  private boolean currentlyAt(@Nullable Node x, int offset, Node node, int at) {
    if (x == null) {
      return false;
    }
    follow(x, offset);
    return resolvedNode == node && resolvedOffset == at;
  }

  // ---------------------------------------------------------------- stats

  @Override
  public IndexStats stats(String[] slotNames) {
    synchronized (lock) {
      long bytes = 64 + treeBytes();
      long predicted = 0;
      long confirmed = 0;
      long mappingsEvicted = 0;
      long lowerBlocks = 0;
      long lowerEvicted = 0;
      Map<String, Long> perBackend = new LinkedHashMap<>();
      for (int slot = 0; slot < maxBackends; slot++) {
        LruMirror m = mirrors.get(slot);
        if (m == null) {
          continue;
        }
        predicted += m.predictedBlocks();
        confirmed += m.confirmedBlocks();
        bytes += m.approximateBytes() + translators[slot].approximateBytes();
        mappingsEvicted += translators[slot].evicted();
        LowerTier lt = lowerTiers.get(slot);
        if (lt != null) {
          bytes += lt.approximateBytes();
          lowerBlocks += lt.size();
          lowerEvicted += lt.evicted();
        }
        if (slot < slotNames.length && slotNames[slot] != null) {
          perBackend.put(slotNames[slot], m.size());
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
      counters.put("kv.keyConflict", keyConflict.sum());
      counters.put("kv.unknownRemoval", unknownRemoval.sum());
      counters.put("kv.noTokens", noTokens.sum());
      counters.put("kv.blockSizeMismatch", blockSizeMismatch.sum());
      counters.put("kv.otherMedium", otherMedium.sum());
      counters.put("kv.mappingsEvicted", mappingsEvicted);
      counters.put("kv.lowerTierUnresolved", lowerTierUnresolved.sum());
      counters.put("kv.lowerTierUnknownRemoval", lowerTierUnknownRemoval.sum());
      counters.put("kv.lowerTierEvicted", lowerEvicted);
      counters.put("lowerTierBlocks", lowerBlocks);
      counters.put("unknownSlot", unknownSlot.sum());
      counters.put("splits", splits.sum());
      counters.put("matchRetries", retries.sum());
      counters.put("matchLocked", lockedMatches.sum());
      counters.put("treeKeys", treeKeys);
      counters.put("prunes", prunes.sum());
      counters.put("prunedBlocks", prunedBlocks.sum());
      return new IndexStats(nodeCount, predicted, confirmed, bytes, perBackend, counters);
    }
  }

  private long treeBytes() {
    long bytes = 0;
    ArrayDeque<Node> todo = new ArrayDeque<>();
    todo.add(root);
    while (!todo.isEmpty()) {
      Node x = todo.poll();
      bytes += x.approximateBytes();
      x.forEachChild(todo::add);
    }
    return bytes;
  }

  /** Counters without per-backend names. */
  public IndexStats stats() {
    return stats(new String[0]);
  }

  /** Blocks held by a slot (predicted + confirmed); 0 for an unused slot. */
  public long heldBlocks(int slot) {
    synchronized (lock) {
      LruMirror m = inRange(slot) ? mirrors.get(slot) : null;
      return m == null ? 0 : m.size();
    }
  }

  @Override
  public String toString() {
    return "RadixPrefixIndex[maxBackends="
        + maxBackends
        + ", ttl="
        + Duration.ofNanos(ttlNanos)
        + "]";
  }

  /** Builder for {@link RadixPrefixIndex}; setters validate at once. */
  public static final class Builder {
    private int maxBackends = 256;
    private boolean maxBackendsExplicit;
    private long defaultCapacityBlocks = 100_000;
    private Duration predictionTtl = Duration.ofSeconds(30);
    private long lowerTierBlocks = -1;
    private boolean capacityFeedback;
    private long pruneAbove = -1;

    private Builder() {}

    /**
     * Keys above which a write ends by pruning what no backend holds (see the class documentation),
     * {@code >= 0}; unset, twice the sum of the capacities. For tests: below the sum of the
     * capacities, writes may prune every time.
     */
    Builder pruneAbove(long keys) {
      if (keys < 0) {
        throw new IllegalArgumentException("pruneAbove must be >= 0, was " + keys);
      }
      this.pruneAbove = keys;
      return this;
    }

    /**
     * Lower-tier blocks recorded per backend (see the class documentation), {@code [0, 2^31 - 9]};
     * {@code 0} records none (lower-tier events are then only counted). Unset: four times the
     * backend's GPU capacity, following capacity changes. Size it to the engine's CPU / disk tier
     * in GPU-sized blocks; about 80 bytes per recorded block, allocated as blocks arrive.
     */
    public Builder lowerTierBlocks(long blocks) {
      if (blocks < 0 || blocks > Integer.MAX_VALUE - 8) {
        throw new IllegalArgumentException(
            "lowerTierBlocks must be in [0, " + (Integer.MAX_VALUE - 8) + "], was " + blocks);
      }
      this.lowerTierBlocks = blocks;
      return this;
    }

    /**
     * Whether the engines' own cached counts ({@link #onEngineCached}) adjust the capacity each
     * backend's mirror is modelled with (see {@link RadixPrefixIndex#onEngineCached}). Default
     * false: where the configured capacity is right, the learned one cost hits in the simulator
     * (measurements in {@code benchmarks/README.md}); turn it on when the configured capacity is
     * only a guess. Off, reports change nothing here (the engine still counts them).
     */
    public Builder capacityFeedback(boolean on) {
      this.capacityFeedback = on;
      return this;
    }

    /**
     * Slots the index accepts, {@code [1, 65536]}; when set, at least the engine's {@code
     * maxBackends}. Unset, the index adopts the engine's (256 when used without an engine).
     */
    public Builder maxBackends(int maxBackends) {
      if (maxBackends < 1 || maxBackends > 65_536) {
        throw new IllegalArgumentException("maxBackends must be in [1, 65536], was " + maxBackends);
      }
      this.maxBackends = maxBackends;
      this.maxBackendsExplicit = true;
      return this;
    }

    /** Capacity of a backend whose descriptor gives none, in blocks, {@code [1, 2^31 - 9]}. */
    public Builder defaultCapacityBlocks(long blocks) {
      if (blocks < 1 || blocks > Integer.MAX_VALUE - 8) {
        throw new IllegalArgumentException(
            "defaultCapacityBlocks must be in [1, " + (Integer.MAX_VALUE - 8) + "], was " + blocks);
      }
      this.defaultCapacityBlocks = blocks;
      return this;
    }

    /**
     * How long a predicted block lives unconfirmed on a backend that sends KV events, in {@code [0,
     * Long.MAX_VALUE ns]} (about 292 years); {@code Duration.ZERO} disables expiry. Backends
     * without events keep predictions until evicted.
     */
    public Builder predictionTtl(Duration ttl) {
      Objects.requireNonNull(ttl, "predictionTtl");
      if (ttl.isNegative()) {
        throw new IllegalArgumentException("predictionTtl must not be negative, was " + ttl);
      }
      if (ttl.compareTo(Duration.ofNanos(Long.MAX_VALUE)) > 0) {
        throw new IllegalArgumentException(
            "predictionTtl must be at most "
                + Duration.ofNanos(Long.MAX_VALUE)
                + " (Long.MAX_VALUE ns), was "
                + ttl);
      }
      this.predictionTtl = ttl;
      return this;
    }

    public RadixPrefixIndex build() {
      return new RadixPrefixIndex(this);
    }
  }
}
