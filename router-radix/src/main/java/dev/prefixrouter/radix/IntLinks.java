package dev.prefixrouter.radix;

import java.util.Arrays;

/**
 * One or more intrusive doubly linked lists over the same int ids {@code [0, capacity)}, in one
 * primitive array: the recency and predicted lists of {@link LruMirror}, the recency list of {@link
 * EventTranslator}. Lists are numbered from 0; the head of each is its most recent end. An id is on
 * a list or not ({@link #contains}); O(1) per operation.
 *
 * <p>All of an id's links sit side by side ({@code links[w id + 2 list]} toward the head, {@code
 * links[w id + 2 list + 1]} toward the tail, {@code w = 2 lists}), so moving an id reads and writes
 * one cache line for it, not one per link or per list: a move to the head touches the id's line,
 * its two neighbours' and the old head's, and an id moved on both lists of {@link LruMirror} (whose
 * neighbours are mostly the same ids on both) touches those lines once for both.
 *
 * <p>Not thread-safe: its owner's writer only.
 */
final class IntLinks {
  static final int NONE = -1;
  private static final int OFF = -2;

  private final int width; // ints per id: two per list
  private int[] links = new int[0];
  private final int[] ends; // per list: head, tail

  /** {@code lists} lists over the same ids, all empty. */
  IntLinks(int lists) {
    this.width = 2 * lists;
    this.ends = new int[2 * lists];
    Arrays.fill(ends, NONE);
  }

  /** Makes room for ids below {@code capacity} (new ids are off every list). */
  void grow(int capacity) {
    int old = links.length;
    links = Arrays.copyOf(links, width * capacity);
    Arrays.fill(links, old, links.length, OFF);
  }

  int head(int list) {
    return ends[2 * list];
  }

  int tail(int list) {
    return ends[2 * list + 1];
  }

  /** The id after {@code e} toward the tail (less recent), or {@link #NONE}. */
  int next(int list, int e) {
    return links[width * e + 2 * list + 1];
  }

  /** The id before {@code e} toward the head (more recent), or {@link #NONE}. */
  int prev(int list, int e) {
    return links[width * e + 2 * list];
  }

  boolean contains(int list, int e) {
    return links[width * e + 2 * list] != OFF;
  }

  void linkHead(int list, int e) {
    int[] l = links;
    int o = 2 * list;
    int head = ends[o];
    l[width * e + o] = NONE;
    l[width * e + o + 1] = head;
    if (head != NONE) {
      l[width * head + o] = e;
    }
    ends[o] = e;
    if (ends[o + 1] == NONE) {
      ends[o + 1] = e;
    }
  }

  /** Links {@code t} just after {@code e} (toward the tail); {@code e} must be on the list. */
  void linkAfter(int list, int e, int t) {
    int[] l = links;
    int o = 2 * list;
    int after = l[width * e + o + 1];
    l[width * t + o] = e;
    l[width * t + o + 1] = after;
    l[width * e + o + 1] = t;
    if (after == NONE) {
      ends[o + 1] = t;
    } else {
      l[width * after + o] = t;
    }
  }

  void unlink(int list, int e) {
    int[] l = links;
    int o = 2 * list;
    int p = l[width * e + o];
    int n = l[width * e + o + 1];
    if (p == NONE) {
      ends[o] = n;
    } else {
      l[width * p + o + 1] = n;
    }
    if (n == NONE) {
      ends[o + 1] = p;
    } else {
      l[width * n + o] = p;
    }
    l[width * e + o] = OFF;
    l[width * e + o + 1] = OFF;
  }

  /** Moves an id on the list to its head. */
  void moveToHead(int list, int e) {
    if (ends[2 * list] != e) {
      unlink(list, e);
      linkHead(list, e);
    }
  }

  /** Empties every list. */
  void clear() {
    Arrays.fill(links, OFF);
    Arrays.fill(ends, NONE);
  }

  long approximateBytes() {
    return 32L + 4L * ends.length + 4L * links.length;
  }
}
