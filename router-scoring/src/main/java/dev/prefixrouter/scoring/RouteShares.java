package dev.prefixrouter.scoring;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.jspecify.annotations.Nullable;

/**
 * Each slot's share of recent routing decisions: a count decayed by {@code 2^(-1/halfLife)} per
 * decision fleet-wide (lazily, from the decision sequence), so no clock is needed. No allocation
 * per decision.
 *
 * <p><b>Stripes.</b> The counts live in stripes, each with its own decision count, slot counts and
 * prefix-group table; a count is the sum over the stripes, the decision sequence the sum of their
 * decision counts. A decision is recorded in the recording thread's stripe only: one uncontended
 * compare-and-set on the stripe's lock (a cache line no reader touches) and a few plain stores
 * under the stripe's sequence lock, so threads on different stripes never write a line another
 * writes. Every thread starts on the first stripe and moves to another (made on first use, at most
 * {@link #MAX_STRIPES}) when it finds its stripe locked, or last written by another thread on
 * {@value #MOVE_AFTER} of its records in a row. A single thread therefore uses one stripe and reads
 * exactly what one shared count would hold. With several stripes a read sums per-stripe values
 * (rounding aside, the same decayed sums), and a decision's sequence number is the sum of the
 * stripes' counts as its recorder read them, so a count recorded while another stripe's decisions
 * were in flight may be decayed from a sequence a few decisions early or late. Readers never block
 * writers; they retry while a stripe is being written (a few stores). No update is ever lost.
 *
 * <p>Prefix groups live in each stripe's fixed two-way set-associative table of {@link
 * #GROUP_ENTRIES} counts: a new group takes the empty or the smaller (decayed) of its set's two
 * entries, so a cold group never displaces a hot one from its set, and an evicted group starts
 * again at zero in that stripe. Memory: 2 MB of group sets and 16 bytes per slot per stripe.
 */
final class RouteShares {
  /** Prefix-group counts kept per stripe (two per set). */
  static final int GROUP_ENTRIES = 65_536;

  /**
   * Most stripes: the processors rounded up to a power of two, at most 8 (each stripe's group table
   * is 2 MB, and a read sums every stripe).
   */
  static final int MAX_STRIPES =
      Math.min(
          8,
          Integer.highestOneBit(Math.max(1, Runtime.getRuntime().availableProcessors()) * 2 - 1));

  private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);

  /**
   * Longs per group set: version, then (prefix, value bits, sequence) for each of the two entries;
   * padded to one cache line. Prefix 0 marks an empty entry (0 is never recorded).
   */
  private static final int SET_STRIDE = 8;

  /** A stripe's counts start with its version and its decision count. */
  private static final int HEAD = 2;

  /** Longs per slot in a stripe's counts: value bits, sequence. */
  private static final int SLOT_STRIDE = 2;

  /** A counts version that marks an array replaced by a larger one: read the stripe's new one. */
  private static final long MOVED = -1;

  /** Index of the lock in {@link Stripe#lock}: 64 bytes of the array on either side of it. */
  private static final int LOCK = 8;

  /** Ages with a precomputed decay factor: a decision reads ~n + 2 counts, each once a pow. */
  private static final int DECAY_TABLE = 4096;

  private static final AtomicLong TOKENS = new AtomicLong();

  /**
   * Per thread: its probe (hashed into the stripes; 0 at first), its token (unique, not 0) and how
   * many of its records in a row found their stripe last written by another thread.
   */
  private static final ThreadLocal<long[]> PROBE =
      ThreadLocal.withInitial(() -> new long[] {0, TOKENS.incrementAndGet(), 0});

  /** Per thread: the slot counts of one decision ({@link #sharesAndHotness}). */
  private static final ThreadLocal<double[]> SLOT_COUNTS =
      ThreadLocal.withInitial(() -> new double[64]);

  private final double decayPerRoute;
  private final double[] decayByAge = new double[DECAY_TABLE];

  /** A power of two in length, at most {@link #MAX_STRIPES}; grows by copying. */
  private volatile Stripe[] stripes;

  private final Object growLock = new Object();

  /**
   * One above the highest slot ever recorded: the fleet-wide sum in {@link #hotness} reads only
   * these (the others hold 0 and add nothing).
   */
  private volatile int slotsUsed;

  /** Per slot: decision sequence of its last paced replica, plus the interval (0 = never). */
  private volatile AtomicLongArray lastReplica = new AtomicLongArray(64);

  /** One stripe: written under its lock, read under its sequence lock. */
  private static final class Stripe {
    /**
     * The writers' lock at {@link #LOCK} (0 free, 1 held) and the token of its last holder after
     * it, on a cache line of their own.
     */
    final long[] lock = new long[2 * LOCK + 2];

    /**
     * Version (even when stable, odd while written, {@link #MOVED} once replaced), decisions
     * recorded here, then per slot its value bits and sequence. Replaced only under the lock.
     */
    volatile long[] counts;

    final long[] groups = new long[GROUP_ENTRIES / 2 * SET_STRIDE];

    Stripe(int slots) {
      counts = emptyCounts(slots);
    }
  }

  RouteShares(int halfLifeRoutes) {
    this.decayPerRoute = Math.pow(0.5, 1.0 / halfLifeRoutes);
    for (int age = 0; age < DECAY_TABLE; age++) {
      decayByAge[age] = Math.pow(decayPerRoute, age);
    }
    stripes = new Stripe[] {new Stripe(64)};
  }

  private static long[] emptyCounts(int slots) {
    long[] a = new long[HEAD + slots * SLOT_STRIDE];
    for (int i = 0; i < slots; i++) {
      a[HEAD + i * SLOT_STRIDE + 1] = Long.MIN_VALUE; // never counted: the first record sets it
    }
    return a;
  }

  /** Records a decision for {@code slot} and, when {@code prefix != 0}, for that prefix group. */
  void record(int slot, long prefix) {
    raiseSlotsUsed(slot);
    Stripe s = lock();
    try {
      long[] cs = counts(s, slot);
      long decisions = cs[1] + 1;
      long now = decisions + othersDecisions(s);
      if (prefix != 0) {
        recordGroup(s.groups, prefix, now);
      }
      long v = beginWrite(cs);
      cs[1] = decisions;
      count(cs, slot, now);
      LONGS.setRelease(cs, 0, v + 2);
    } finally {
      unlock(s);
    }
  }

  /** The next decision's sequence number (tests draw it to interleave two recorders by hand). */
  long draw() {
    Stripe s = lock();
    try {
      long[] cs = s.counts;
      long v = beginWrite(cs);
      long decisions = cs[1] + 1;
      cs[1] = decisions;
      LONGS.setRelease(cs, 0, v + 2);
      return decisions + othersDecisions(s);
    } finally {
      unlock(s);
    }
  }

  /**
   * Records decision {@code now}, drawn before. Another thread may have drawn a later number and
   * stored its count first; the count then keeps that later sequence, so a late writer never moves
   * it back in time (which would decay it again by the difference on every later read).
   */
  void record(int slot, long prefix, long now) {
    raiseSlotsUsed(slot);
    Stripe s = lock();
    try {
      long[] cs = counts(s, slot);
      if (prefix != 0) {
        recordGroup(s.groups, prefix, now);
      }
      long v = beginWrite(cs);
      count(cs, slot, now);
      LONGS.setRelease(cs, 0, v + 2);
    } finally {
      unlock(s);
    }
  }

  /** Adds one decision at {@code now} to {@code slot}'s count; inside a write of {@code cs}. */
  private void count(long[] cs, int slot, long now) {
    int at = HEAD + slot * SLOT_STRIDE;
    double value = Double.longBitsToDouble(cs[at]);
    long last = cs[at + 1];
    double d = decayed(value, last, now); // 0 when never counted
    cs[at] = Double.doubleToRawLongBits(d + 1);
    cs[at + 1] = Math.max(now, last);
  }

  private void raiseSlotsUsed(int slot) {
    if (slot >= slotsUsed) {
      synchronized (growLock) {
        if (slot >= slotsUsed) {
          slotsUsed = slot + 1;
        }
      }
    }
  }

  /**
   * The calling thread's stripe, locked. A thread moves to another stripe (adding stripes up to
   * {@link #MAX_STRIPES}) when it finds its stripe locked, or last written by another thread on
   * {@link #MOVE_AFTER} of its records in a row: threads that record in turn end up on stripes of
   * their own, while a thread that records alone never moves.
   */
  private Stripe lock() {
    long[] me = PROBE.get();
    Stripe[] ss = stripes;
    for (int spins = 0; ; spins++) {
      Stripe s = ss[(int) me[0] & (ss.length - 1)];
      long[] l = s.lock;
      if (LONGS.compareAndSet(l, LOCK, 0L, 1L)) {
        long last = l[LOCK + 1];
        if (last == me[1]) {
          me[2] = 0;
        } else {
          l[LOCK + 1] = me[1];
          if (last != 0 && ++me[2] >= MOVE_AFTER) {
            me[2] = 0;
            moveOn(me, ss); // this record stays here, the next goes elsewhere
          }
        }
        return s;
      }
      ss = moveOn(me, ss);
      if (spins >= 64) {
        Thread.yield(); // the holder was descheduled mid-write
      } else {
        Thread.onSpinWait();
      }
    }
  }

  /** Records in a row on a stripe last written by another thread before a thread moves on. */
  private static final int MOVE_AFTER = 4;

  /** Points the thread's probe at another stripe (likely), adding stripes first if allowed. */
  private Stripe[] moveOn(long[] me, Stripe[] seen) {
    Stripe[] ss = seen.length < MAX_STRIPES ? moreStripes(seen) : seen;
    // mixed with the thread's token, so that two threads that meet do not move in step
    me[0] = ((me[0] + me[1]) * 0x9E3779B97F4A7C15L) >>> 40;
    return ss;
  }

  private static void unlock(Stripe s) {
    LONGS.setRelease(s.lock, LOCK, 0L);
  }

  /** The stripes, doubled if they are still {@code seen} (else as another thread grew them). */
  private Stripe[] moreStripes(Stripe[] seen) {
    synchronized (growLock) {
      Stripe[] ss = stripes;
      if (ss == seen) {
        int slots = (ss[0].counts.length - HEAD) / SLOT_STRIDE;
        Stripe[] more = new Stripe[ss.length * 2];
        System.arraycopy(ss, 0, more, 0, ss.length);
        for (int i = ss.length; i < more.length; i++) {
          more[i] = new Stripe(slots);
        }
        stripes = more;
        ss = more;
      }
      return ss;
    }
  }

  /** Starts a write of a stripe's counts (under its lock): the version, now odd, was {@code v}. */
  private static long beginWrite(long[] cs) {
    long v = cs[0];
    LONGS.setOpaque(cs, 0, v + 1);
    VarHandle.storeStoreFence(); // the odd version is visible before any new value
    return v;
  }

  /** The decisions recorded in every stripe but {@code own}, as last written. */
  private long othersDecisions(Stripe own) {
    Stripe[] ss = stripes;
    long n = 0;
    for (Stripe s : ss) {
      if (s != own) {
        n += (long) LONGS.getOpaque(s.counts, 1);
      }
    }
    return n;
  }

  /** The fleet-wide decision sequence: the sum of the stripes' decision counts. */
  private long sequence() {
    return sequence(stripes);
  }

  /** The stripe's counts, grown first if they have no entry for {@code slot}; under its lock. */
  private static long[] counts(Stripe s, int slot) {
    long[] cs = s.counts;
    int slots = (cs.length - HEAD) / SLOT_STRIDE;
    if (slot < slots) {
      return cs;
    }
    long[] bigger = emptyCounts(Math.max(slot + 1, slots * 2));
    System.arraycopy(cs, 0, bigger, 0, cs.length);
    s.counts = bigger;
    LONGS.setRelease(cs, 0, MOVED); // readers of the old array move on to the new one
    return bigger;
  }

  private void recordGroup(long[] g, long prefix, long now) {
    int set = setOf(prefix) / 2 * SET_STRIDE;
    long v = beginWrite(g, set);
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
    LONGS.setRelease(g, set, v + 2);
  }

  /** Starts a write of the entry whose version is at {@code a[at]} (under the stripe's lock). */
  private static long beginWrite(long[] a, int at) {
    long v = a[at];
    LONGS.setOpaque(a, at, v + 1);
    VarHandle.storeStoreFence();
    return v;
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

  /**
   * One decision's view of {@code n} candidates (their slots and weights), every used slot's count
   * read once at one sequence number: each candidate's decayed count over its fair share by weight
   * (1.0 = exactly fair) into {@code out[0..n)}, and as the result the request's prefix group's
   * {@link #hotness} over those same counts; NaN (and {@code out} unspecified) while the candidates
   * have seen fewer than 100 decisions each (too little evidence). Reads {@code slotsUsed} counts
   * and the group's set once per stripe; allocates nothing once the thread's buffer has the fleet's
   * size.
   */
  double sharesAndHotness(
      int n, int[] slots, double[] weight, long prefix, double above, double[] out) {
    double[] slotCounts = SLOT_COUNTS.get();
    int used = slotsUsed;
    if (slotCounts.length < used) {
      slotCounts = new double[Math.max(used, 2 * slotCounts.length)];
      SLOT_COUNTS.set(slotCounts);
    }
    Stripe[] ss = stripes;
    long now = sequence(ss);
    readSlots(ss, now, slotCounts, used);
    double total = 0;
    double weights = 0;
    for (int i = 0; i < n; i++) {
      int slot = slots[i];
      out[i] = slot < used ? slotCounts[slot] : 0; // never-counted slots hold 0
      total += out[i];
      weights += weight[i];
    }
    if (total < 100.0 * n) {
      return Double.NaN;
    }
    double lastWeight = Double.NaN;
    double fair = 0;
    boolean over = false;
    for (int i = 0; i < n; i++) {
      double w = weight[i];
      if (w != lastWeight) { // equal weights (the common fleet) share one fair share
        fair = total * w / weights;
        lastWeight = w;
      }
      double share = out[i] / fair;
      out[i] = share;
      over |= share > above;
    }
    if (!over) {
      return 0.0; // no candidate above the caller's bound: its hotness is not needed
    }
    double all = 0;
    for (int slot = 0; slot < used; slot++) {
      all += slotCounts[slot];
    }
    return hotness(ss, prefix, n, now, all);
  }

  private static long sequence(Stripe[] ss) {
    long n = (long) LONGS.getOpaque(ss[0].counts, 1);
    for (int i = 1; i < ss.length; i++) {
      n += (long) LONGS.getOpaque(ss[i].counts, 1);
    }
    return n;
  }

  /**
   * The decayed counts at {@code now} of slots {@code [0, used)} into {@code into}, summed over the
   * stripes (0 for a slot no stripe counted).
   */
  private void readSlots(Stripe[] ss, long now, double[] into, int used) {
    readStripe(ss[0], now, into, null, used);
    if (ss.length > 1) {
      double[] part = PART.get();
      if (part.length < used) {
        part = new double[Math.max(used, 2 * part.length)];
        PART.set(part);
      }
      for (int i = 1; i < ss.length; i++) {
        readStripe(ss[i], now, into, part, used);
      }
    }
  }

  /**
   * One stripe's decayed counts at {@code now} of slots {@code [0, used)}, read consistently,
   * stored into {@code into} or, given a buffer {@code part} for them, added to it.
   */
  private void readStripe(Stripe s, long now, double[] into, double @Nullable [] part, int used) {
    while (true) {
      long[] cs = s.counts;
      long v = stable(cs, 0);
      if (v == MOVED) {
        continue; // replaced by a larger array, already published
      }
      int slots = Math.min(used, (cs.length - HEAD) / SLOT_STRIDE);
      // with a buffer, copy first and add once consistent: a retry must not add twice
      decayedSlots(cs, slots, now, part == null ? into : part);
      if (validate(cs, 0, v)) {
        if (part == null) {
          for (int slot = slots; slot < used; slot++) {
            into[slot] = 0;
          }
        } else {
          for (int slot = 0; slot < slots; slot++) {
            into[slot] += part[slot];
          }
        }
        return;
      }
    }
  }

  /**
   * The decayed counts at {@code now} of slots {@code [0, slots)} of {@code cs} into {@code out}.
   */
  private void decayedSlots(long[] cs, int slots, long now, double[] out) {
    for (int slot = 0; slot < slots; slot++) {
      int at = HEAD + slot * SLOT_STRIDE;
      double value = Double.longBitsToDouble((long) LONGS.getOpaque(cs, at));
      long last = (long) LONGS.getOpaque(cs, at + 1);
      out[slot] = decayed(value, last, now);
    }
  }

  /** Per thread: one stripe's counts before they are added ({@link #readStripe}). */
  private static final ThreadLocal<double[]> PART = ThreadLocal.withInitial(() -> new double[64]);

  /**
   * A prefix group's share of recent decisions relative to one backend's fair share ({@code n}
   * candidates): 1.0 means the group alone could keep a backend at its fair load. The whole is the
   * sum of the slots' counts (each decision adds one to one slot), so a removed backend's past
   * decisions stop counting.
   */
  double hotness(long prefix, int n) {
    Stripe[] ss = stripes;
    long now = sequence(ss);
    int used = slotsUsed;
    double[] slotCounts = new double[used]; // tests only: the hot path reads them once
    readSlots(ss, now, slotCounts, used);
    double all = 0;
    for (int slot = 0; slot < used; slot++) {
      all += slotCounts[slot];
    }
    return hotness(ss, prefix, n, now, all);
  }

  /** {@link #hotness} given the sum of the slots' counts at {@code now}. */
  private double hotness(Stripe[] ss, long prefix, int n, long now, double all) {
    if (prefix == 0) {
      return 1.0;
    }
    double group = groupCount(ss, prefix, now);
    if (Double.isNaN(group)) {
      return 0.0;
    }
    return all <= 0 ? 0.0 : group * n / all;
  }

  /** Groups currently counted, over all stripes (for tests; walks the tables). */
  int groupCount() {
    int n = 0;
    for (Stripe s : stripes) {
      long[] g = s.groups;
      for (int set = 0; set < g.length; set += SET_STRIDE) {
        n += (g[set + 1] != 0 ? 1 : 0) + (g[set + 4] != 0 ? 1 : 0);
      }
    }
    return n;
  }

  /** {@code prefix}'s decayed count at {@code now} summed over the stripes holding it, else NaN. */
  private double groupCount(Stripe[] ss, long prefix, long now) {
    int set = setOf(prefix) / 2 * SET_STRIDE;
    double sum = groupCount(ss[0].groups, set, prefix, now);
    for (int i = 1; i < ss.length; i++) {
      double c = groupCount(ss[i].groups, set, prefix, now);
      if (!Double.isNaN(c)) {
        sum = Double.isNaN(sum) ? c : sum + c;
      }
    }
    return sum;
  }

  /** {@code prefix}'s decayed count at {@code now} in one stripe's table, else NaN. */
  private double groupCount(long[] g, int set, long prefix, long now) {
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
    Stripe[] ss = stripes;
    double c = groupCount(ss, prefix, sequence(ss));
    return Double.isNaN(c) ? 0 : c;
  }

  /** A slot's decayed count now (for tests). */
  double slotDecisions(int slot) {
    Stripe[] ss = stripes;
    int used = slotsUsed;
    if (slot >= used) {
      return 0;
    }
    double[] counts = new double[used];
    readSlots(ss, sequence(ss), counts, used);
    return counts[slot];
  }

  /** Stripes in use (for tests). */
  int stripeCount() {
    return stripes.length;
  }

  /**
   * Claims a balance-driven replica onto {@code slot} if that slot received none in the last {@code
   * interval} decisions.
   */
  boolean tryReplica(int slot, int interval) {
    AtomicLongArray a = replicas(slot);
    long now = sequence() + interval; // shifted so that the initial 0 reads as "long ago"
    long last = a.get(slot);
    return now - last >= interval && a.compareAndSet(slot, last, now);
  }

  /** The replica claims, grown first if they have no entry for {@code slot}. */
  private AtomicLongArray replicas(int slot) {
    AtomicLongArray a = lastReplica;
    if (slot < a.length()) {
      return a;
    }
    synchronized (growLock) {
      a = lastReplica;
      if (slot >= a.length()) {
        AtomicLongArray bigger = new AtomicLongArray(Math.max(slot + 1, a.length() * 2));
        for (int i = 0; i < a.length(); i++) {
          bigger.set(i, a.get(i));
        }
        lastReplica = bigger;
        a = bigger;
      }
      return a;
    }
  }

  /** Forgets {@code slot}'s count in every stripe and its replica pacing. */
  void forget(int slot) {
    for (Stripe s : stripes) {
      while (!LONGS.compareAndSet(s.lock, LOCK, 0L, 1L)) {
        Thread.onSpinWait();
      }
      try {
        long[] cs = s.counts;
        int at = HEAD + slot * SLOT_STRIDE;
        if (at < cs.length) {
          long v = beginWrite(cs);
          cs[at] = 0; // the bits of 0.0
          cs[at + 1] = Long.MIN_VALUE;
          LONGS.setRelease(cs, 0, v + 2);
        }
      } finally {
        unlock(s);
      }
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
}
