package dev.prefixrouter.radix;

import java.util.Arrays;

/**
 * An intrusive doubly linked list over int ids {@code [0, capacity)}, in two primitive arrays: the
 * recency lists of {@link LruMirror} and {@link EventTranslator}. The head is the most recent end.
 * An id is on the list or not ({@link #contains}); O(1) per operation.
 *
 * <p>Not thread-safe: its owner's writer only.
 */
final class IntLinks {
  static final int NONE = -1;
  private static final int OFF = -2;

  private int[] prev = new int[0];
  private int[] next = new int[0];
  private int head = NONE;
  private int tail = NONE;

  /** Makes room for ids below {@code capacity} (new ids are off the list). */
  void grow(int capacity) {
    int old = prev.length;
    prev = Arrays.copyOf(prev, capacity);
    next = Arrays.copyOf(next, capacity);
    Arrays.fill(prev, old, capacity, OFF);
    Arrays.fill(next, old, capacity, OFF);
  }

  int head() {
    return head;
  }

  int tail() {
    return tail;
  }

  /** The id after {@code e} toward the tail (less recent), or {@link #NONE}. */
  int next(int e) {
    return next[e];
  }

  /** The id before {@code e} toward the head (more recent), or {@link #NONE}. */
  int prev(int e) {
    return prev[e];
  }

  boolean contains(int e) {
    return prev[e] != OFF;
  }

  void linkHead(int e) {
    prev[e] = NONE;
    next[e] = head;
    if (head != NONE) {
      prev[head] = e;
    }
    head = e;
    if (tail == NONE) {
      tail = e;
    }
  }

  /** Links {@code t} just after {@code e} (toward the tail); {@code e} must be on the list. */
  void linkAfter(int e, int t) {
    int after = next[e];
    prev[t] = e;
    next[t] = after;
    next[e] = t;
    if (after == NONE) {
      tail = t;
    } else {
      prev[after] = t;
    }
  }

  void unlink(int e) {
    int p = prev[e];
    int n = next[e];
    if (p == NONE) {
      head = n;
    } else {
      next[p] = n;
    }
    if (n == NONE) {
      tail = p;
    } else {
      prev[n] = p;
    }
    prev[e] = OFF;
    next[e] = OFF;
  }

  /** Moves an id on the list to the head. */
  void moveToHead(int e) {
    if (head != e) {
      unlink(e);
      linkHead(e);
    }
  }

  /** Empties the list. */
  void clear() {
    Arrays.fill(prev, OFF);
    Arrays.fill(next, OFF);
    head = NONE;
    tail = NONE;
  }

  long approximateBytes() {
    return 32L + 8L * prev.length;
  }
}
