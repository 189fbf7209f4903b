package dev.prefixrouter.radix;

import com.carrotsearch.hppc.LongIntHashMap;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * One backend's translation of engine block hashes (from KV events) to router keys, bounded.
 *
 * <p>A <em>mapping</em> is {@code engine hash -> (router key, copies, place)}: the router key the
 * index computed for that block from the event's token ids, how many live engine copies the hash
 * has (engines emit the same block more than once), and where the block sits in the tree (a node
 * and an offset in its run, resolved by the index since nodes split). Per router key it counts the
 * live copies of every engine hash mapped to it ({@link #refs}): a {@code BlockRemoved} takes a
 * block out of the mirror only when the last copy goes.
 *
 * <p><b>Bound.</b> At most {@link #bound} mappings; adding one beyond evicts the least recently
 * used mapping (lookups and stores refresh it) and counts it in {@link #evicted}. Every operation
 * is O(1) expected.
 *
 * <p>Not thread-safe: only the index's writer calls it.
 */
final class EventTranslator {
  private static final int NONE = IntLinks.NONE;

  private final LongIntHashMap byHash = new LongIntHashMap();
  private final LongIntHashMap refs = new LongIntHashMap();
  private long[] hash = new long[0];
  private long[] routerKey = new long[0];
  private int[] copies = new int[0];
  private Node[] node = new Node[0];
  private int[] offset = new int[0];
  private int[] nextFree = new int[0];
  private final IntLinks recency = new IntLinks(1);
  private int allocated;
  private int freeHead = NONE;
  private int bound;
  private long evicted;

  EventTranslator(int bound) {
    this.bound = bound;
  }

  /** Changes the bound; shrinking evicts at once. */
  void bound(int bound) {
    this.bound = bound;
    while (byHash.size() > bound) {
      evictOldest();
    }
  }

  int size() {
    return byHash.size();
  }

  /** Mappings evicted by the bound so far. */
  long evicted() {
    return evicted;
  }

  /** The mapping of {@code engineHash} (refreshed as most recent), or -1. */
  int find(long engineHash) {
    int i = byHash.indexOf(engineHash);
    if (!byHash.indexExists(i)) {
      return NONE;
    }
    int m = byHash.indexGet(i);
    recency.moveToHead(0, m);
    return m;
  }

  long routerKey(int m) {
    return routerKey[m];
  }

  @Nullable Node node(int m) {
    return node[m];
  }

  int offset(int m) {
    return offset[m];
  }

  /** Records where a mapping's block sits now (after the index resolved a split). */
  void place(int m, @Nullable Node n, int off) {
    node[m] = n;
    offset[m] = off;
  }

  /**
   * Records one stored copy of {@code engineHash}, computed as {@code key} at {@code (n, off)}.
   * Returns true if the hash was already mapped (a duplicate copy: it keeps its first router key).
   */
  boolean stored(long engineHash, long key, @Nullable Node n, int off) {
    int m = find(engineHash);
    boolean duplicate = m != NONE;
    if (duplicate) {
      copies[m]++;
      if (routerKey[m] == key) {
        place(m, n, off);
      }
    } else {
      while (byHash.size() >= bound) {
        evictOldest();
      }
      m = allocate(engineHash, key, n, off);
      byHash.put(engineHash, m);
    }
    refs.addTo(routerKey[m], 1);
    return duplicate;
  }

  /** Records one more stored copy of mapping {@code m} (from {@link #find}), where it is. */
  void copy(int m) {
    copies[m]++;
    refs.addTo(routerKey[m], 1);
  }

  /**
   * Releases one copy of mapping {@code m} (from {@link #find}); returns true if no copy of any
   * engine hash mapped to its router key is left.
   */
  boolean release(int m) {
    long key = routerKey[m];
    if (--copies[m] == 0) {
      byHash.remove(hash[m]);
      free(m);
    }
    return unref(key, 1);
  }

  /**
   * Whether {@link #release} of mapping {@code m} would return true (its copy is the last of any
   * engine hash mapped to its router key); changes nothing.
   */
  boolean lastCopy(int m) {
    return refs.getOrDefault(routerKey[m], 0) <= 1;
  }

  /** Whether some live engine copy is mapped to router key {@code key}; changes nothing. */
  boolean holdsKey(long key) {
    return refs.containsKey(key);
  }

  /** Forgets every mapping (the engine cleared its cache). */
  void clear() {
    byHash.clear();
    refs.clear();
    Arrays.fill(node, 0, allocated, null);
    allocated = 0;
    freeHead = NONE;
    recency.clear();
  }

  private boolean unref(long key, int n) {
    int i = refs.indexOf(key);
    if (!refs.indexExists(i)) {
      return true;
    }
    int left = refs.indexGet(i) - n;
    if (left <= 0) {
      refs.indexRemove(i);
      return true;
    }
    refs.indexReplace(i, left);
    return false;
  }

  private void evictOldest() {
    int m = recency.tail(0);
    byHash.remove(hash[m]);
    unref(routerKey[m], copies[m]);
    free(m);
    evicted++;
  }

  private int allocate(long engineHash, long key, @Nullable Node n, int off) {
    int m;
    if (freeHead != NONE) {
      m = freeHead;
      freeHead = nextFree[m];
    } else {
      if (allocated == hash.length) {
        int len = Math.max(16, 2 * hash.length);
        hash = Arrays.copyOf(hash, len);
        routerKey = Arrays.copyOf(routerKey, len);
        copies = Arrays.copyOf(copies, len);
        node = Arrays.copyOf(node, len);
        offset = Arrays.copyOf(offset, len);
        nextFree = Arrays.copyOf(nextFree, len);
        recency.grow(len);
      }
      m = allocated++;
    }
    hash[m] = engineHash;
    routerKey[m] = key;
    copies[m] = 1;
    node[m] = n;
    offset[m] = off;
    recency.linkHead(0, m);
    return m;
  }

  private void free(int m) {
    recency.unlink(0, m);
    node[m] = null;
    nextFree[m] = freeHead;
    freeHead = m;
  }

  /** Calls {@code action} with the node of every mapping that names one (for diagnostics). */
  void forEachNode(java.util.function.Consumer<Node> action) {
    for (int m = 0; m < allocated; m++) {
      Node n = node[m];
      if (n != null) {
        action.accept(n);
      }
    }
  }

  long approximateBytes() {
    return 64L
        + hash.length * (8L + 8 + 4 + 4 + 4 + 4)
        + recency.approximateBytes()
        + byHash.keys.length * 12L
        + refs.keys.length * 12L;
  }
}
