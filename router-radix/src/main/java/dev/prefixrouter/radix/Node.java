package dev.prefixrouter.radix;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * One node of the radix tree: a <em>run</em> of consecutive chained block keys (a range of a {@code
 * long[]}, never changed after construction), the backends holding a prefix of that run, and the
 * children, found by the first key of their run.
 *
 * <p><b>Holders.</b> {@link #holders} is a flat {@code int[]} of records {@code [slot, held,
 * entry]}: backend {@code slot} holds the first {@code held} blocks of the run ({@code 1 <= held <=
 * run length}) and its LRU mirror tracks them as entry {@code entry}. A free record has slot {@code
 * -1}; records never move, so a reader scanning the array while a writer changes another record
 * never misses or doubles a holder.
 *
 * <p><b>Children.</b> An open-addressing table (linear probing, power-of-two length, at most half
 * used counting {@link #TOMBSTONE}s: a probe that passes a cell loads that cell's child, about 1.5
 * loads to find a child and 2.5 to find none, against 2.5 and 8.5 at three quarters) keyed by the
 * child's first key. Writers insert into a free cell in place (one reference store, so a reader
 * sees the child or not) and replace a child by one with the same first key in place; removal
 * leaves a tombstone; growth publishes a new table.
 *
 * <p><b>Concurrency.</b> Only the index's structure writer (holding its lock) changes a node; the
 * holder records of a backend change only while that backend's mirror lock is held too. Readers
 * ({@code match}, a held route's recency refresh) read {@link #holders} and {@link #children}
 * without a lock and tolerate any interleaving: they never index past an array they read, treat
 * {@code null} as empty, and rely on the index's per-backend versions to discard an answer that a
 * concurrent write could have changed. The run ({@link #keys}) is final, so a reader never sees a
 * torn run.
 */
final class Node {
  private static final int[] NO_HOLDERS = new int[0];

  /** Marks a removed child cell. */
  static final Node TOMBSTONE = new Node(new long[] {0}, null);

  /** Child cells are read with acquire and written with release: a child is complete when seen. */
  private static final VarHandle CELL = MethodHandles.arrayElementVarHandle(Node[].class);

  /**
   * The array holding the run of block keys, {@code keys[from, from + length)}; never changed. A
   * split shares it with the parts that are at least half its length ({@link
   * RadixPrefixIndex#split}), so an array is never longer than twice the run of a node using it.
   */
  final long[] keys;

  /** Where the run starts in {@link #keys}. */
  final int from;

  /**
   * The run's first key (0 for the root), kept in the node so that a child-table probe compares it
   * without loading the run: a probe that passes a sibling reads one object, not two.
   */
  final long first;

  /**
   * The run's length (never 0 except for the root), kept in the node so that checking an entry
   * against its node ({@link LruMirror#holdsWhole}, applied from a held route's log long after the
   * route's walk) does not load the run's header, a second miss; the field fills the object's
   * alignment gap.
   */
  final int length;

  /** Writer only: the node whose run ends just before this one ({@code null} for the root). */
  @Nullable Node parent;

  /**
   * Writer only: once this node was split, the head part (keys {@code [0, splitAt)}), whose only
   * child at the time was the tail part; {@code null} while the node is current.
   */
  @Nullable Node splitHead;

  /** Writer only: see {@link #splitHead}. */
  @Nullable Node splitTail;

  /** Writer only: where the run was split. */
  int splitAt;

  /** Writer only: whether the node is reachable from the root. */
  boolean linked;

  /**
   * Writer only: the index's link version at which this unlinked node's path was found missing from
   * its first block on ({@link RadixPrefixIndex}'s {@code locate}); valid while the version is
   * unchanged (no node linked since). -1: not known.
   */
  long missingAt = -1;

  /** Holder records {@code [slot, held, entry]*}; read by match without a lock. */
  volatile int[] holders = NO_HOLDERS;

  /** Child table or {@code null}; read by match without a lock. */
  volatile Node @Nullable [] children;

  private int holderRecords; // writer only: records in use (including free ones below the end)
  private int holderCount; // writer only: live holders
  private int childCount; // writer only: live children
  private int childCells; // writer only: live children + tombstones

  Node(long[] keys, @Nullable Node parent) {
    this(keys, 0, keys.length, parent);
  }

  /** A node whose run is {@code keys[from, from + length)}, which it never changes. */
  Node(long[] keys, int from, int length, @Nullable Node parent) {
    this.keys = keys;
    this.from = from;
    this.first = length == 0 ? 0 : keys[from];
    this.length = length;
    this.parent = parent;
  }

  /** Block key {@code i} of the run ({@code 0 <= i < length}). */
  long key(int i) {
    return keys[from + i];
  }

  int length() {
    return length;
  }

  // ------------------------------------------------------------------ children (reader and writer)

  private static int home(long firstKey, int mask) {
    long h = firstKey * 0x9E3779B97F4A7C15L;
    return (int) (h ^ (h >>> 32)) & mask;
  }

  /** The child whose run starts with {@code key}, or {@code null}. Safe without the lock. */
  @Nullable Node child(long key) {
    Node[] t = children;
    if (t == null) {
      return null;
    }
    int mask = t.length - 1;
    for (int i = home(key, mask), probes = 0; probes < t.length; i = (i + 1) & mask, probes++) {
      Node c = (Node) CELL.getAcquire(t, i);
      if (c == null) {
        return null;
      }
      if (c.first == key && c != TOMBSTONE) {
        return c;
      }
    }
    return null;
  }

  boolean hasChildren() {
    return childCount > 0;
  }

  int childCount() {
    return childCount;
  }

  /** Adds a child whose first key no other child has. Writer only. */
  void addChild(Node child) {
    Node[] t = children;
    if (t == null || 2 * (childCells + 1) > t.length) {
      int length = 2;
      while (2 * (childCount + 1) > length) {
        length <<= 1;
      }
      t = rebuild(t == null ? length : 2 * length);
    }
    int mask = t.length - 1;
    int i = home(child.first, mask);
    while (t[i] != null && t[i] != TOMBSTONE) {
      i = (i + 1) & mask;
    }
    if (t[i] == null) {
      childCells++;
    }
    CELL.setRelease(t, i, child);
    childCount++;
  }

  /** Replaces a child by one with the same first key, in place. Writer only. */
  void replaceChild(Node old, Node replacement) {
    Node[] t = children;
    int mask = t.length - 1;
    for (int i = home(old.first, mask); ; i = (i + 1) & mask) {
      if (t[i] == old) {
        CELL.setRelease(t, i, replacement);
        return;
      }
    }
  }

  /** Removes a child (tombstone; the table is dropped when the last child goes). Writer only. */
  void removeChild(Node child) {
    Node[] t = children;
    int mask = t.length - 1;
    for (int i = home(child.first, mask); ; i = (i + 1) & mask) {
      if (t[i] == child) {
        CELL.setRelease(t, i, TOMBSTONE);
        break;
      }
    }
    if (--childCount == 0) {
      children = null;
      childCells = 0;
    }
  }

  /** Moves every child of this node to {@code to} (which has none) and re-parents them. */
  void moveChildrenTo(Node to) {
    to.children = children;
    to.childCount = childCount;
    to.childCells = childCells;
    Node[] t = children;
    if (t != null) {
      for (Node c : t) {
        if (c != null && c != TOMBSTONE) {
          c.parent = to;
        }
      }
    }
    // this node keeps its table for readers still on it; writers never use it again
  }

  /** Copies live children into a fresh table of {@code length} cells and publishes it. */
  private Node[] rebuild(int length) {
    Node[] fresh = new Node[length];
    int mask = length - 1;
    Node[] t = children;
    if (t != null) {
      for (Node c : t) {
        if (c != null && c != TOMBSTONE) {
          int i = home(c.first, mask);
          while (fresh[i] != null) {
            i = (i + 1) & mask;
          }
          fresh[i] = c;
        }
      }
    }
    childCells = childCount;
    children = fresh;
    return fresh;
  }

  /** Calls {@code action} for every live child. Writer only. */
  void forEachChild(java.util.function.Consumer<Node> action) {
    Node[] t = children;
    if (t != null) {
      for (Node c : t) {
        if (c != null && c != TOMBSTONE) {
          action.accept(c);
        }
      }
    }
  }

  /**
   * The entry id {@code slot}'s record names if it holds the whole run, else -1. Safe without the
   * lock but racy: the answer may be stale or belong to a record being reused, so the caller checks
   * it against the mirror under the mirror's lock ({@link LruMirror#holdsWhole}).
   */
  int wholeEntryRacy(int slot) {
    int[] h = holders;
    for (int r = 0; r + 2 < h.length; r += 3) {
      if (h[r] == slot) {
        return h[r + 1] == length ? h[r + 2] : -1;
      }
    }
    return -1;
  }

  // ------------------------------------------------------------------ holders (writer)

  int holderCount() {
    return holderCount;
  }

  /** Position of {@code slot}'s record, or -1. Writer only. */
  int holderRecord(int slot) {
    int[] h = holders;
    for (int r = 0; r < holderRecords; r++) {
      if (h[3 * r] == slot) {
        return r;
      }
    }
    return -1;
  }

  /** Blocks of the run {@code slot} holds (0 if none). Writer only. */
  int held(int slot) {
    int r = holderRecord(slot);
    return r < 0 ? 0 : holders[3 * r + 1];
  }

  /** The mirror entry of {@code slot}'s holding, or -1. Writer only. */
  int entry(int slot) {
    int r = holderRecord(slot);
    return r < 0 ? -1 : holders[3 * r + 2];
  }

  /** Sets or adds {@code slot}'s holding ({@code held >= 1}). Writer only. */
  void setHolder(int slot, int held, int entry) {
    int r = holderRecord(slot);
    int[] h = holders;
    if (r >= 0) {
      h[3 * r + 1] = held;
      h[3 * r + 2] = entry;
      return;
    }
    for (r = 0; r < holderRecords && h[3 * r] >= 0; r++) {}
    if (r == holderRecords) {
      if (3 * (r + 1) > h.length) {
        int[] grown = Arrays.copyOf(h, 3 * Math.max(1, 2 * holderRecords));
        for (int i = 3 * holderRecords; i < grown.length; i += 3) {
          grown[i] = -1;
        }
        h = grown;
      }
      holderRecords++;
    }
    h[3 * r + 1] = held;
    h[3 * r + 2] = entry;
    h[3 * r] = slot; // last: a reader sees a complete record or a free one
    holders = h; // publishes a grown array (and orders the record for readers of the old one)
    holderCount++;
  }

  /** Changes the blocks {@code slot} holds ({@code held >= 1}); it must hold some. Writer only. */
  void setHeld(int slot, int held) {
    holders[3 * holderRecord(slot) + 1] = held;
  }

  /** Forgets {@code slot}'s holding, if any. Writer only. */
  void removeHolder(int slot) {
    int r = holderRecord(slot);
    if (r >= 0) {
      holders[3 * r] = -1;
      holderCount--;
      if (r == holderRecords - 1) {
        while (holderRecords > 0 && holders[3 * (holderRecords - 1)] < 0) {
          holderRecords--;
        }
      }
    }
  }

  /** Calls {@code action(slot, held, entry)} for every holder. Writer only. */
  void forEachHolder(HolderAction action) {
    int[] h = holders;
    for (int r = 0; r < holderRecords; r++) {
      if (h[3 * r] >= 0) {
        action.accept(h[3 * r], h[3 * r + 1], h[3 * r + 2]);
      }
    }
  }

  /** The most blocks of the run any backend holds. Writer only. */
  int maxHeld() {
    int max = 0;
    int[] h = holders;
    for (int r = 0; r < holderRecords; r++) {
      if (h[3 * r] >= 0) {
        max = Math.max(max, h[3 * r + 1]);
      }
    }
    return max;
  }

  /**
   * Approximate heap bytes of this node alone (header, run, holder and child arrays); the run is
   * counted at its own length, also where it shares a longer array with the other part of a split.
   */
  long approximateBytes() {
    Node[] t = children;
    return 64L + 16 + 8L * length + 16 + 4L * holders.length + (t == null ? 0 : 16 + 4L * t.length);
  }

  @FunctionalInterface
  interface HolderAction {
    void accept(int slot, int held, int entry);
  }
}
