package dev.prefixrouter.scoring;

import org.jspecify.annotations.Nullable;

/**
 * {@link ReplicaValueTerm}'s per-prefix request rates: a fixed two-way set-associative table keyed
 * by a prefix's chained block key, with per entry the time it was first counted (again after it
 * went cold), its decayed count and that count's time, and its last copy's time. No allocation
 * after construction, no boxing: a lookup is one set of two entries (80 bytes).
 *
 * <p><b>Bound.</b> At most {@code entries} prefixes (a power of two, two per set). A prefix not in
 * the table takes its set's empty entry, or the one whose decayed count is smaller (the hotter of
 * the two stays), and a displaced prefix starts again at zero (it must age {@link
 * ReplicaValueTerm#MIN_AGE_SECONDS} again before it is credited). Entries are never freed, so a set
 * overflows once three prefixes ever recorded share it (with uniform keys, about one set at 2,000
 * prefixes and 150 at 10,000); a displacement changes a decision only when it drops a prefix still
 * warm. Key 0 is stored as 1 (the chained keys are 64-bit hashes: a one-in-2^64 merge). Memory: 40
 * bytes per entry, allocated at the first {@link #record} (an engine that never records a prefix
 * pays nothing).
 *
 * <p><b>Thread safety.</b> Thread-safe: each set is read and written under one of {@value #LOCKS}
 * lock objects (striped by set; a few stores per hold), so no update is lost and no read sees half
 * an update.
 */
final class PrefixRates {
  /** Lock objects, striped over the sets. */
  static final int LOCKS = 64;

  /** Longs per entry: key, first, count (double bits), at, last copy. */
  private static final int STRIDE = 5;

  private static final int KEY = 0;
  private static final int FIRST = 1;
  private static final int COUNT = 2;
  private static final int AT = 3;
  private static final int COPY = 4;

  /** {@link #COPY} of an entry never copied. */
  private static final long NEVER = Long.MIN_VALUE;

  private final int entries;
  private final int setMask;
  private volatile long @Nullable [] table;
  private final Object[] locks = new Object[LOCKS];
  private final double tauNanos;
  private final double tauSeconds;
  private final long minAgeNanos;

  /**
   * @param entries prefixes held at most, a power of two {@code >= 2}
   * @param tauSeconds time constant of the decayed count, seconds
   * @param minAgeSeconds the age (and time since the last copy) before a rate is reported
   */
  PrefixRates(int entries, double tauSeconds, double minAgeSeconds) {
    if (entries < 2 || Integer.bitCount(entries) != 1) {
      throw new IllegalArgumentException("entries must be a power of two >= 2, was " + entries);
    }
    this.entries = entries;
    this.setMask = entries / 2 - 1;
    this.tauNanos = tauSeconds * 1e9;
    this.tauSeconds = tauSeconds;
    this.minAgeNanos = (long) (minAgeSeconds * 1e9);
    for (int i = 0; i < LOCKS; i++) {
      locks[i] = new Object();
    }
  }

  private static long stored(long key) {
    return key == 0 ? 1 : key;
  }

  private int set(long key) {
    return (int) (key ^ (key >>> 32)) & setMask;
  }

  private Object lock(int set) {
    return locks[set & (LOCKS - 1)];
  }

  /** The offset of {@code key}'s entry in its set, or -1. Under the set's lock. */
  private static int find(long[] table, int set, long key) {
    int at = set * 2 * STRIDE;
    if (table[at + KEY] == key) {
      return at;
    }
    return table[at + STRIDE + KEY] == key ? at + STRIDE : -1;
  }

  private double decayed(long[] table, int e, long now) {
    double count = Double.longBitsToDouble(table[e + COUNT]);
    long at = table[e + AT];
    return now > at ? count * Math.exp(-(now - at) / tauNanos) : count;
  }

  /**
   * The prefix's rate at {@code now}, in counted weight per second (the decayed count over the time
   * constant); 0 when absent, counted for less than the minimum age, or copied less than that ago.
   */
  double perSecond(long key, long now) {
    long[] table = this.table;
    if (table == null) {
      return 0;
    }
    long k = stored(key);
    int set = set(k);
    synchronized (lock(set)) {
      int e = find(table, set, k);
      if (e < 0
          || now - table[e + FIRST] < minAgeNanos
          || (table[e + COPY] != NEVER && now - table[e + COPY] < minAgeNanos)) {
        return 0;
      }
      return decayed(table, e, now) / tauSeconds;
    }
  }

  /**
   * Records a routed request of the prefix at {@code now}: when {@code copy}, it went to a backend
   * that did not hold the prefix; when {@code weight > 0}, it is counted with that weight (a count
   * that had decayed below 1 restarts the prefix's age).
   */
  void record(long key, long now, boolean copy, double weight) {
    long[] table = table();
    long k = stored(key);
    int set = set(k);
    synchronized (lock(set)) {
      int e = find(table, set, k);
      if (e < 0) {
        e = take(table, set, now);
        table[e + KEY] = k;
        table[e + FIRST] = now;
        table[e + COUNT] = Double.doubleToRawLongBits(0);
        table[e + AT] = now;
        table[e + COPY] = NEVER;
      }
      if (copy) {
        table[e + COPY] = now;
      }
      if (weight > 0) {
        double d = decayed(table, e, now);
        if (d < 1) {
          table[e + FIRST] = now; // gone cold (or new): its next burst must age again
        }
        table[e + COUNT] = Double.doubleToRawLongBits(d + weight);
        table[e + AT] = Math.max(table[e + AT], now);
      }
    }
  }

  /** The entry a new prefix takes in {@code set}: an empty one, else the colder. Under the lock. */
  private int take(long[] table, int set, long now) {
    int a = set * 2 * STRIDE;
    int b = a + STRIDE;
    if (table[a + KEY] == 0) {
      return a;
    }
    if (table[b + KEY] == 0) {
      return b;
    }
    return decayed(table, b, now) < decayed(table, a, now) ? b : a;
  }

  /** The table, allocated on first use (by one thread; the others wait for it). */
  private long[] table() {
    long[] t = table;
    if (t == null) {
      synchronized (locks) {
        t = table;
        if (t == null) {
          t = new long[entries * STRIDE];
          table = t;
        }
      }
    }
    return t;
  }
}
