package dev.prefixrouter.radix;

import java.util.concurrent.locks.StampedLock;
import org.jspecify.annotations.Nullable;

/**
 * One backend's record of the router keys it holds on a tier below its GPU (CPU memory, disk), fed
 * by {@code BlockStored} / {@code BlockRemoved} events whose {@code medium} is not the GPU: engine
 * hash → (router key, copies), and per router key its live copies, in an {@link EventTranslator}
 * without tree places.
 *
 * <p><b>Bound.</b> At most {@link #bound} blocks (engine hashes); storing one more evicts the least
 * recently stored or removed-then-stored one, counted in {@link #evicted}. Memory is about 80 bytes
 * per recorded block, allocated as blocks arrive (a backend that sends no lower-tier event has no
 * record at all).
 *
 * <p><b>Threads.</b> Writes come from the index's writer (structure lock held) under this record's
 * write lock; {@link #run} reads from routing threads under its read lock, so readers never wait
 * for each other and wait for a writer only while it changes this backend's record.
 */
final class LowerTier {
  private final StampedLock lock = new StampedLock();
  private final EventTranslator map;
  private volatile int size;

  LowerTier(int bound) {
    this.map = new EventTranslator(bound);
  }

  /** Records one copy of {@code engineHash} keyed {@code key}; true if it was already recorded. */
  boolean stored(long engineHash, long key) {
    long stamp = lock.writeLock();
    try {
      return map.stored(engineHash, key, null, 0);
    } finally {
      size = map.size();
      lock.unlockWrite(stamp);
    }
  }

  /** The router key of a recorded engine hash, or {@code null}; refreshes its recency. */
  @Nullable Long keyOf(long engineHash) {
    long stamp = lock.writeLock(); // find() refreshes recency
    try {
      int m = map.find(engineHash);
      return m < 0 ? null : map.routerKey(m);
    } finally {
      lock.unlockWrite(stamp);
    }
  }

  /** Releases one copy of {@code engineHash}; false if it was not recorded. */
  boolean removed(long engineHash) {
    long stamp = lock.writeLock();
    try {
      int m = map.find(engineHash);
      if (m < 0) {
        return false;
      }
      map.release(m);
      return true;
    } finally {
      size = map.size();
      lock.unlockWrite(stamp);
    }
  }

  /** Forgets everything. */
  void clear() {
    long stamp = lock.writeLock();
    try {
      map.clear();
    } finally {
      size = 0;
      lock.unlockWrite(stamp);
    }
  }

  /** Changes the bound; shrinking evicts at once. */
  void bound(int bound) {
    long stamp = lock.writeLock();
    try {
      map.bound(bound);
    } finally {
      size = map.size();
      lock.unlockWrite(stamp);
    }
  }

  /** Recorded blocks (engine hashes). */
  int size() {
    return size;
  }

  /** Blocks evicted by the bound so far. */
  long evicted() {
    long stamp = lock.readLock();
    try {
      return map.evicted();
    } finally {
      lock.unlockRead(stamp);
    }
  }

  long approximateBytes() {
    long stamp = lock.readLock();
    try {
      return 32 + map.approximateBytes();
    } finally {
      lock.unlockRead(stamp);
    }
  }

  /**
   * How many of {@code keys[from, to)}, from {@code from} on without a gap, are recorded. O(result
   * + 1) hash lookups under the read lock; 0 at once when the record is empty.
   */
  int run(long[] keys, int from, int to) {
    if (size == 0 || from >= to) {
      return 0;
    }
    long stamp = lock.readLock();
    try {
      int j = from;
      while (j < to && map.holdsKey(keys[j])) {
        j++;
      }
      return j - from;
    } finally {
      lock.unlockRead(stamp);
    }
  }
}
