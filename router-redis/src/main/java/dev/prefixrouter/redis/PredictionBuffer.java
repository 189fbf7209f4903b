package dev.prefixrouter.redis;

/**
 * Predictions waiting for the publisher: two fixed batches, one that routing threads append to and
 * one the publisher encodes, swapped under a lock. An append copies the keys into preallocated
 * arrays and allocates nothing; a full batch refuses the record (the caller counts it), so memory
 * stays at two batches whatever Redis does. Thread-safe; the lock is held for one array copy.
 */
final class PredictionBuffer {

  /** A batch of records: backend ids and the key runs, laid end to end. Not thread-safe. */
  static final class Batch {
    final String[] backends;
    final int[] counts;
    final long[] keys;
    int records;
    int used;

    Batch(int maxRecords, int maxKeys) {
      this.backends = new String[maxRecords];
      this.counts = new int[maxRecords];
      this.keys = new long[maxKeys];
    }

    /** The keys of record {@code i} (a copy; tests and logs). */
    long[] keysOf(int i) {
      int offset = 0;
      for (int r = 0; r < i; r++) {
        offset += counts[r];
      }
      return java.util.Arrays.copyOfRange(keys, offset, offset + counts[i]);
    }

    /** Whether the batch holds no record. */
    boolean isEmpty() {
      return records == 0;
    }

    void clear() {
      java.util.Arrays.fill(backends, 0, records, null);
      records = 0;
      used = 0;
    }
  }

  private Batch filling;
  private Batch spare;

  PredictionBuffer(int maxRecords, int maxKeys) {
    this.filling = new Batch(maxRecords, maxKeys);
    this.spare = new Batch(maxRecords, maxKeys);
  }

  /** Appends one record; false (nothing copied) when the batch has no room for it. */
  synchronized boolean offer(String backendId, long[] keys, int keyCount) {
    Batch b = filling;
    if (b.records == b.backends.length || b.used + keyCount > b.keys.length) {
      return false;
    }
    b.backends[b.records] = backendId;
    b.counts[b.records] = keyCount;
    System.arraycopy(keys, 0, b.keys, b.used, keyCount);
    b.records++;
    b.used += keyCount;
    return true;
  }

  /**
   * Hands the filled batch to the publisher, which must {@link Batch#clear} it before the next
   * call; routing threads go on appending to the other one.
   */
  synchronized Batch take() {
    Batch full = filling;
    filling = spare;
    spare = full;
    return full;
  }
}
