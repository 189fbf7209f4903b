package dev.prefixrouter.scoring;

import dev.prefixrouter.api.spi.ScoringContext;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Each slot's share of recent routing decisions: a count decayed by {@code 2^(-1/halfLife)} per
 * decision (lazily, from the global decision sequence), so no clock is needed. A recorded decision
 * is one increment of the sequence and one short write on its slot's count (plus one on its prefix
 * group's), each count a (value, sequence) pair updated in place under a per-entry sequence lock:
 * no allocation per decision. Readers never block writers; they retry while an entry is being
 * written (a few stores). Two writers of the same entry wait for each other (spinning for those few
 * stores); an update is never lost.
 *
 * <p>Prefix groups live in a fixed two-way set-associative table of {@link #GROUP_ENTRIES} counts:
 * a new group takes the empty or the smaller (decayed) of its set's two entries, so a cold group
 * never displaces a hot one from its set, and an evicted group starts again at zero. Memory is
 * fixed: 64 bytes per set of two groups (2 MB), 64 bytes per slot.
 */
final class RouteShares {
  /** Prefix-group counts kept (two per set). */
  static final int GROUP_ENTRIES = 65_536;

  private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);

  /**
   * Longs per group set: version, then (prefix, value bits, sequence) for each of the two entries;
   * padded to one cache line. Prefix 0 marks an empty entry (0 is never recorded).
   */
  private static final int SET_STRIDE = 8;

  /** Longs per slot: version, value bits, sequence; padded so that slots do not share a line. */
  private static final int SLOT_STRIDE = 8;

  /** A slot version that marks a table copied into a larger one: writers move on to that one. */
  private static final long MOVED = -1;

  private final double decayPerRoute;
  private final AtomicLong seq = new AtomicLong();

  private final long[] groups = new long[GROUP_ENTRIES / 2 * SET_STRIDE];

  /** Per slot: version, value bits, sequence ({@link #SLOT_STRIDE} longs each). */
  private volatile long[] counts = emptyCounts(64);

  private final Object growLock = new Object();

  /**
   * One above the highest slot ever recorded: the fleet-wide sum in {@link #hotness} reads only
   * these (the others hold 0 and add nothing).
   */
  private volatile int slotsUsed;

  RouteShares(int halfLifeRoutes) {
    this.decayPerRoute = Math.pow(0.5, 1.0 / halfLifeRoutes);
    for (int age = 0; age < DECAY_TABLE; age++) {
      decayByAge[age] = Math.pow(decayPerRoute, age);
    }
  }

  /** Ages with a precomputed decay factor: a decision reads ~n + 2 counts, each once a pow. */
  private static final int DECAY_TABLE = 4096;

  private final double[] decayByAge = new double[DECAY_TABLE];

  private static long[] emptyCounts(int slots) {
    long[] a = new long[slots * SLOT_STRIDE];
    for (int i = 0; i < slots; i++) {
      a[i * SLOT_STRIDE + 2] = Long.MIN_VALUE; // never counted: the first record sets its sequence
    }
    return a;
  }

  /** Records a decision for {@code slot} and, when {@code prefix != 0}, for that prefix group. */
  void record(int slot, long prefix) {
    record(slot, prefix, draw());
  }

  /** The next decision's sequence number (tests draw it to interleave two recorders by hand). */
  long draw() {
    return seq.incrementAndGet();
  }

  /**
   * Records decision {@code now}. Another thread may have drawn a later number and stored its count
   * first; the count then keeps that later sequence, so a late writer never moves it back in time
   * (which would decay it again by the difference on every later read).
   */
  void record(int slot, long prefix, long now) {
    if (prefix != 0) {
      recordGroup(prefix, now);
    }
    if (slot >= slotsUsed) {
      raiseSlotsUsed(slot + 1);
    }
    while (true) {
      long[] cs = array(slot);
      int at = slot * SLOT_STRIDE;
      long v = lock(cs, at);
      if (v == MOVED) {
        continue; // copied into a larger table meanwhile: write there
      }
      double value = Double.longBitsToDouble(cs[at + 1]);
      long last = cs[at + 2];
      double d = decayed(value, last, now); // 0 when never counted
      cs[at + 1] = Double.doubleToRawLongBits(d + 1);
      cs[at + 2] = Math.max(now, last);
      unlock(cs, at, v);
      return;
    }
  }

  private void raiseSlotsUsed(int used) {
    synchronized (growLock) {
      if (used > slotsUsed) {
        slotsUsed = used;
      }
    }
  }

  private void recordGroup(long prefix, long now) {
    long[] g = groups;
    int set = setOf(prefix) / 2 * SET_STRIDE;
    long v = lock(g, set);
    try {
      long p0 = g[set + 1];
      long p1 = g[set + 4];
      int at;
      double value;
      long kept = now;
      if (p0 == prefix) {
        at = set + 1;
        value = decayed(Double.longBitsToDouble(g[at + 1]), g[at + 2], now);
        kept = Math.max(now, g[at + 2]);
      } else if (p1 == prefix) {
        at = set + 4;
        value = decayed(Double.longBitsToDouble(g[at + 1]), g[at + 2], now);
        kept = Math.max(now, g[at + 2]);
      } else {
        // a new group takes the empty entry, else the colder one
        boolean second =
            p0 != 0
                && (p1 == 0
                    || decayed(Double.longBitsToDouble(g[set + 5]), g[set + 6], now)
                        < decayed(Double.longBitsToDouble(g[set + 2]), g[set + 3], now));
        at = second ? set + 4 : set + 1;
        value = 0;
      }
      g[at] = prefix;
      g[at + 1] = Double.doubleToRawLongBits(value + 1);
      g[at + 2] = kept;
    } finally {
      unlock(g, set, v);
    }
  }

  /**
   * Takes the sequence lock of the entry whose version is at {@code a[at]}: its even version, now
   * odd in the array; or {@link #MOVED} (nothing taken) when the table was replaced.
   */
  private static long lock(long[] a, int at) {
    for (int spins = 0; ; spins++) {
      long v = (long) LONGS.getVolatile(a, at);
      if (v == MOVED) {
        return MOVED;
      }
      if ((v & 1) == 0 && LONGS.compareAndSet(a, at, v, v + 1)) {
        return v;
      }
      if (spins < 64) {
        Thread.onSpinWait();
      } else {
        Thread.yield(); // the holder was descheduled mid-write
      }
    }
  }

  private static void unlock(long[] a, int at, long v) {
    LONGS.setRelease(a, at, v + 2);
  }

  /** The entry's version once it is stable (even, or {@link #MOVED}), for an optimistic read. */
  private static long stable(long[] a, int at) {
    while (true) {
      long v = (long) LONGS.getAcquire(a, at);
      if ((v & 1) == 0 || v == MOVED) {
        return v;
      }
      Thread.onSpinWait();
    }
  }

  /** Whether the entry read after {@link #stable} returned {@code v} is unchanged. */
  private static boolean validate(long[] a, int at, long v) {
    VarHandle.acquireFence(); // the reads of the entry happen before the version is read again
    return (long) LONGS.getOpaque(a, at) == v;
  }

  /** First entry of {@code prefix}'s set (a Fibonacci hash, so sequential keys spread). */
  static int setOf(long prefix) {
    long h = prefix * 0x9E3779B97F4A7C15L;
    return (int) (h >>> (64 - Integer.numberOfTrailingZeros(GROUP_ENTRIES / 2))) << 1;
  }

  /** A slot's decayed count at {@code now}, read consistently (0 if never counted). */
  private double slotCount(long[] cs, int slot, long now) {
    int at = slot * SLOT_STRIDE;
    while (true) {
      long v = stable(cs, at);
      double value = Double.longBitsToDouble((long) LONGS.getOpaque(cs, at + 1));
      long last = (long) LONGS.getOpaque(cs, at + 2);
      if (v == MOVED || validate(cs, at, v)) {
        // a moved table's entries are frozen at their last values, which the copy holds too
        return decayed(value, last, now);
      }
    }
  }

  /**
   * One decision's view, every used slot's count read once at one sequence number: each candidate's
   * decayed count over its fair share by weight (1.0 = exactly fair) into {@code out[0..size)}, and
   * as the result the request's prefix group's {@link #hotness} over those same counts; NaN (and
   * {@code out} unspecified) while the candidates have seen fewer than 100 decisions each (too
   * little evidence). Reads {@code slotsUsed} counts and the group's set once; allocates nothing
   * once the thread's buffer has the fleet's size.
   */
  double sharesAndHotness(ScoringContext ctx, long prefix, double[] out) {
    long now = seq.get();
    double[] slotCounts = SLOT_COUNTS.get();
    int used = slotsUsed;
    if (slotCounts.length < used) {
      slotCounts = new double[Math.max(used, 2 * slotCounts.length)];
      SLOT_COUNTS.set(slotCounts);
    }
    int read = readSlots(now, slotCounts);
    int n = ctx.size();
    double total = 0;
    double weights = 0;
    for (int i = 0; i < n; i++) {
      int slot = ctx.slot(i);
      out[i] = slot < read ? slotCounts[slot] : 0; // never-counted slots hold 0
      total += out[i];
      weights += ctx.backend(i).weight();
    }
    if (total < 100.0 * n) {
      return Double.NaN;
    }
    double lastWeight = Double.NaN;
    double fair = 0;
    for (int i = 0; i < n; i++) {
      double w = ctx.backend(i).weight();
      if (w != lastWeight) { // equal weights (the common fleet) share one fair share
        fair = total * w / weights;
        lastWeight = w;
      }
      out[i] = out[i] / fair;
    }
    double all = 0;
    for (int slot = 0; slot < read; slot++) {
      all += slotCounts[slot];
    }
    return hotness(prefix, n, now, all);
  }

  /** Per thread: the slot counts of one decision ({@link #sharesAndHotness}). */
  private static final ThreadLocal<double[]> SLOT_COUNTS =
      ThreadLocal.withInitial(() -> new double[64]);

  /**
   * Reads the decayed counts at {@code now} of the slots ever recorded into {@code into} (which has
   * room for {@code slotsUsed} as read before); returns how many were read.
   */
  private int readSlots(long now, double[] into) {
    long[] cs = counts;
    int slots = Math.min(Math.min(slotsUsed, into.length), cs.length / SLOT_STRIDE);
    for (int slot = 0; slot < slots; slot++) {
      into[slot] = slotCount(cs, slot, now);
    }
    return slots;
  }

  /**
   * A prefix group's share of recent decisions relative to one backend's fair share ({@code n}
   * candidates): 1.0 means the group alone could keep a backend at its fair load. The whole is the
   * sum of the slots' counts (each decision adds one to one slot), so a removed backend's past
   * decisions stop counting.
   */
  double hotness(long prefix, int n) {
    long now = seq.get();
    double[] slotCounts = new double[slotsUsed]; // tests only: the hot path reads them once
    int read = readSlots(now, slotCounts);
    double all = 0;
    for (int slot = 0; slot < read; slot++) {
      all += slotCounts[slot];
    }
    return hotness(prefix, n, now, all);
  }

  /** {@link #hotness} given the sum of the slots' counts at {@code now}. */
  private double hotness(long prefix, int n, long now, double all) {
    if (prefix == 0) {
      return 1.0;
    }
    double group = groupCount(prefix, now);
    if (Double.isNaN(group)) {
      return 0.0;
    }
    return all <= 0 ? 0.0 : group * n / all;
  }

  /** Groups currently counted (for tests; walks the table). */
  int groupCount() {
    int n = 0;
    for (int set = 0; set < groups.length; set += SET_STRIDE) {
      long v = lock(groups, set);
      n += (groups[set + 1] != 0 ? 1 : 0) + (groups[set + 4] != 0 ? 1 : 0);
      unlock(groups, set, v);
    }
    return n;
  }

  /** {@code prefix}'s decayed count at {@code now} if its set holds it, else NaN. */
  private double groupCount(long prefix, long now) {
    long[] g = groups;
    int set = setOf(prefix) / 2 * SET_STRIDE;
    while (true) {
      long v = stable(g, set);
      double found = Double.NaN;
      for (int at = set + 1; at < set + 7; at += 3) {
        if ((long) LONGS.getOpaque(g, at) == prefix) {
          double value = Double.longBitsToDouble((long) LONGS.getOpaque(g, at + 1));
          long last = (long) LONGS.getOpaque(g, at + 2);
          found = decayed(value, last, now);
          break;
        }
      }
      if (validate(g, set, v)) {
        return found;
      }
    }
  }

  /** A group's decayed count now, 0 if not counted (for tests). */
  double groupDecisions(long prefix) {
    double c = groupCount(prefix, seq.get());
    return Double.isNaN(c) ? 0 : c;
  }

  /** A slot's decayed count now (for tests). */
  double slotDecisions(int slot) {
    long[] cs = counts;
    return slot < cs.length / SLOT_STRIDE ? slotCount(cs, slot, seq.get()) : 0;
  }

  /** Per slot: decision sequence of its last paced replica, plus the interval (0 = never). */
  private volatile AtomicLongArray lastReplica = new AtomicLongArray(64);

  /**
   * Claims a balance-driven replica onto {@code slot} if that slot received none in the last {@code
   * interval} decisions.
   */
  boolean tryReplica(int slot, int interval) {
    array(slot); // grows lastReplica together with the counts
    AtomicLongArray a = lastReplica;
    long now = seq.get() + interval; // shifted so that the initial 0 reads as "long ago"
    long last = a.get(slot);
    return now - last >= interval && a.compareAndSet(slot, last, now);
  }

  void forget(int slot) {
    while (true) {
      long[] cs = counts;
      if (slot >= cs.length / SLOT_STRIDE) {
        break;
      }
      int at = slot * SLOT_STRIDE;
      long v = lock(cs, at);
      if (v == MOVED) {
        continue;
      }
      cs[at + 1] = 0; // the bits of 0.0
      cs[at + 2] = Long.MIN_VALUE;
      unlock(cs, at, v);
      break;
    }
    AtomicLongArray r = lastReplica;
    if (slot < r.length()) {
      r.set(slot, 0); // a backend added later in this slot starts unpaced
    }
  }

  /** {@code value} decayed from decision {@code at} to {@code now}; as is when not older. */
  private double decayed(double value, long at, long now) {
    long age = now - at;
    if (age <= 0) {
      return value;
    }
    return value * (age < DECAY_TABLE ? decayByAge[(int) age] : Math.pow(decayPerRoute, age));
  }

  /** The counts table, grown first if it has no entry for {@code slot}. */
  private long[] array(int slot) {
    long[] cs = counts;
    if (slot < cs.length / SLOT_STRIDE) {
      return cs;
    }
    synchronized (growLock) {
      cs = counts;
      int slots = cs.length / SLOT_STRIDE;
      if (slot >= slots) {
        long[] bigger = emptyCounts(Math.max(slot + 1, slots * 2));
        // hold every entry of the old table while copying (writers wait), then publish the new
        // table and mark the old entries moved, which sends waiting writers to the new one
        long[] held = new long[slots];
        for (int i = 0; i < slots; i++) {
          int at = i * SLOT_STRIDE;
          held[i] = lock(cs, at);
          bigger[at + 1] = cs[at + 1];
          bigger[at + 2] = cs[at + 2];
        }
        AtomicLongArray replicas = new AtomicLongArray(bigger.length / SLOT_STRIDE);
        for (int i = 0; i < lastReplica.length(); i++) {
          replicas.set(i, lastReplica.get(i));
        }
        lastReplica = replicas; // published before the counts: whoever sees the new counts sees it
        counts = bigger;
        for (int i = 0; i < slots; i++) {
          LONGS.setRelease(cs, i * SLOT_STRIDE, MOVED);
        }
        cs = bigger;
      }
      return cs;
    }
  }
}
