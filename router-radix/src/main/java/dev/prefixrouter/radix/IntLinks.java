package dev.prefixrouter.radix;

import java.util.Arrays;

/**
 * An intrusive doubly linked list over int ids {@code [0, capacity)}, in one primitive array: the
 * recency lists of {@link LruMirror} and {@link EventTranslator}. The head is the most recent end.
 * An id is on the list or not ({@link #contains}); O(1) per operation.
 *
 * <p>An id's two links sit side by side ({@code links[2 id]} toward the head, {@code links[2 id +
 * 1]} toward the tail), so moving an id reads and writes one cache line for it, not one per link: a
 * move to the head touches the id's line, its two neighbours' and the old head's.
 *
 * <p>Not thread-safe: its owner's writer only.
 */
final class IntLinks {
  static final int NONE = -1;
  private static final int OFF = -2;

  private int[] links = new int[0];
  private int head = NONE;
  private int tail = NONE;

  /** Makes room for ids below {@code capacity} (new ids are off the list). */
  void grow(int capacity) {
    int old = links.length;
    links = Arrays.copyOf(links, 2 * capacity);
    Arrays.fill(links, old, links.length, OFF);
  }

  int head() {
    return head;
  }

  int tail() {
    return tail;
  }

  /** The id after {@code e} toward the tail (less recent), or {@link #NONE}. */
  int next(int e) {
    return links[2 * e + 1];
  }

  /** The id before {@code e} toward the head (more recent), or {@link #NONE}. */
  int prev(int e) {
    return links[2 * e];
  }

  boolean contains(int e) {
    return links[2 * e] != OFF;
  }

  void linkHead(int e) {
    int[] l = links;
    l[2 * e] = NONE;
    l[2 * e + 1] = head;
    if (head != NONE) {
      l[2 * head] = e;
    }
    head = e;
    if (tail == NONE) {
      tail = e;
    }
  }

  /** Links {@code t} just after {@code e} (toward the tail); {@code e} must be on the list. */
  void linkAfter(int e, int t) {
    int[] l = links;
    int after = l[2 * e + 1];
    l[2 * t] = e;
    l[2 * t + 1] = after;
    l[2 * e + 1] = t;
    if (after == NONE) {
      tail = t;
    } else {
      l[2 * after] = t;
    }
  }

  void unlink(int e) {
    int[] l = links;
    int p = l[2 * e];
    int n = l[2 * e + 1];
    if (p == NONE) {
      head = n;
    } else {
      l[2 * p + 1] = n;
    }
    if (n == NONE) {
      tail = p;
    } else {
      l[2 * n] = p;
    }
    l[2 * e] = OFF;
    l[2 * e + 1] = OFF;
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
    Arrays.fill(links, OFF);
    head = NONE;
    tail = NONE;
  }

  long approximateBytes() {
    return 32L + 4L * links.length;
  }
}
