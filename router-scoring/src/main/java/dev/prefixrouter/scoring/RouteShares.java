package dev.prefixrouter.scoring;

import dev.prefixrouter.api.spi.ScoringContext;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.jspecify.annotations.Nullable;

/**
 * Each slot's share of recent routing decisions: a count decayed by {@code 2^(-1/halfLife)} per
 * decision (lazily, from the global decision sequence), so no clock is needed. Lock-free: a
 * recorded decision is one increment of the sequence and one CAS on its slot's count (plus one on
 * its prefix group's); reads take immutable snapshots.
 *
 * <p>Prefix groups live in a fixed two-way set-associative table of {@link #GROUP_ENTRIES} counts:
 * a new group takes the empty or the smaller (decayed) of its set's two entries, so a cold group
 * never displaces a hot one from its set, and an evicted group starts again at zero. It replaces a
 * Caffeine cache whose per-decision {@code compute} (write buffer, eviction policy, maintenance on
 * the caller) was the largest shared write of a routing decision.
 */
final class RouteShares {
  private record Count(double value, long seq) {}

  private record Group(long prefix, double value, long seq) {}

  /** Prefix-group counts kept (two per set); memory is fixed at 4 bytes per entry + live groups. */
  static final int GROUP_ENTRIES = 65_536;

  private final double decayPerRoute;
  private final AtomicLong seq = new AtomicLong();

  private final AtomicReferenceArray<Group> groups = new AtomicReferenceArray<>(GROUP_ENTRIES);

  private volatile AtomicReferenceArray<Count> counts = new AtomicReferenceArray<>(64);
  private final Object growLock = new Object();

  RouteShares(int halfLifeRoutes) {
    this.decayPerRoute = Math.pow(0.5, 1.0 / halfLifeRoutes);
    for (int age = 0; age < DECAY_TABLE; age++) {
      decayByAge[age] = Math.pow(decayPerRoute, age);
    }
  }

  /** Ages with a precomputed decay factor: a decision reads ~n + 2 counts, each once a pow. */
  private static final int DECAY_TABLE = 4096;

  private final double[] decayByAge = new double[DECAY_TABLE];

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
    AtomicReferenceArray<Count> cs = array(slot);
    while (true) {
      Count c = cs.get(slot);
      double v = c == null ? 0 : decayed(c.value, c.seq, now);
      if (cs.compareAndSet(slot, c, new Count(v + 1, c == null ? now : Math.max(now, c.seq)))) {
        return;
      }
    }
  }

  private void recordGroup(long prefix, long now) {
    int a = setOf(prefix);
    while (true) {
      Group g0 = groups.get(a);
      Group g1 = groups.get(a + 1);
      int at;
      Group old;
      double v;
      long kept = now;
      if (g0 != null && g0.prefix == prefix) {
        at = a;
        old = g0;
        v = decayed(g0.value, g0.seq, now);
        kept = Math.max(now, g0.seq);
      } else if (g1 != null && g1.prefix == prefix) {
        at = a + 1;
        old = g1;
        v = decayed(g1.value, g1.seq, now);
        kept = Math.max(now, g1.seq);
      } else {
        // a new group takes the empty entry, else the colder one (the order of two decayed counts
        // does not depend on when it is read, so racing writers pick the same entry)
        boolean second =
            g0 != null
                && (g1 == null || decayed(g1.value, g1.seq, now) < decayed(g0.value, g0.seq, now));
        at = second ? a + 1 : a;
        old = second ? g1 : g0;
        v = 0;
      }
      if (groups.compareAndSet(at, old, new Group(prefix, v + 1, kept))) {
        return;
      }
    }
  }

  /** First entry of {@code prefix}'s set (a Fibonacci hash, so sequential keys spread). */
  static int setOf(long prefix) {
    long h = prefix * 0x9E3779B97F4A7C15L;
    return (int) (h >>> (64 - Integer.numberOfTrailingZeros(GROUP_ENTRIES / 2))) << 1;
  }

  /**
   * Each candidate's decayed count over its fair share by weight (1.0 = exactly fair), written into
   * {@code out[0..size)}; false (and {@code out} unspecified) while the candidates have seen fewer
   * than 100 decisions each (too little evidence).
   */
  boolean relativeShares(ScoringContext ctx, double[] out) {
    int n = ctx.size();
    long now = seq.get();
    AtomicReferenceArray<Count> cs = counts;
    double total = 0;
    double weights = 0;
    for (int i = 0; i < n; i++) {
      int slot = ctx.slot(i);
      Count c = slot < cs.length() ? cs.get(slot) : null;
      out[i] = c == null ? 0 : decayed(c.value, c.seq, now);
      total += out[i];
      weights += ctx.backend(i).weight();
    }
    if (total < 100.0 * n) {
      return false;
    }
    for (int i = 0; i < n; i++) {
      double fair = total * ctx.backend(i).weight() / weights;
      out[i] = out[i] / fair;
    }
    return true;
  }

  /**
   * A prefix group's share of recent decisions relative to one backend's fair share ({@code n}
   * candidates): 1.0 means the group alone could keep a backend at its fair load. The whole is the
   * sum of the slots' counts (each decision adds one to one slot), so a removed backend's past
   * decisions stop counting.
   */
  double hotness(long prefix, int n) {
    if (prefix == 0) {
      return 1.0;
    }
    long now = seq.get();
    Group g = group(prefix);
    if (g == null) {
      return 0.0;
    }
    AtomicReferenceArray<Count> cs = counts;
    double all = 0;
    for (int i = 0; i < cs.length(); i++) {
      Count c = cs.get(i);
      if (c != null) {
        all += decayed(c.value, c.seq, now);
      }
    }
    return all <= 0 ? 0.0 : decayed(g.value, g.seq, now) * n / all;
  }

  /** Groups currently counted (for tests; walks the table). */
  int groupCount() {
    int n = 0;
    for (int i = 0; i < GROUP_ENTRIES; i++) {
      if (groups.get(i) != null) {
        n++;
      }
    }
    return n;
  }

  /** {@code prefix}'s count if its set holds one, else null. */
  private @Nullable Group group(long prefix) {
    int a = setOf(prefix);
    for (int i = a; i < a + 2; i++) {
      Group g = groups.get(i);
      if (g != null && g.prefix == prefix) {
        return g;
      }
    }
    return null;
  }

  /** A group's decayed count now, 0 if not counted (for tests). */
  double groupDecisions(long prefix) {
    Group g = group(prefix);
    return g == null ? 0 : decayed(g.value, g.seq, seq.get());
  }

  /** A slot's decayed count now (for tests). */
  double slotDecisions(int slot) {
    AtomicReferenceArray<Count> cs = counts;
    Count c = slot < cs.length() ? cs.get(slot) : null;
    return c == null ? 0 : decayed(c.value, c.seq, seq.get());
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
    AtomicReferenceArray<Count> cs = counts;
    if (slot < cs.length()) {
      cs.set(slot, null);
    }
    AtomicLongArray r = lastReplica;
    if (slot < r.length()) {
      r.set(slot, 0); // a backend added later in this slot starts unpaced
    }
  }

  private double decayed(double value, long at, long now) {
    long age = now - at;
    if (age <= 0) {
      return value;
    }
    return value * (age < DECAY_TABLE ? decayByAge[(int) age] : Math.pow(decayPerRoute, age));
  }

  private AtomicReferenceArray<Count> array(int slot) {
    AtomicReferenceArray<Count> cs = counts;
    if (slot < cs.length()) {
      return cs;
    }
    synchronized (growLock) {
      cs = counts;
      if (slot >= cs.length()) {
        AtomicReferenceArray<Count> bigger =
            new AtomicReferenceArray<>(Math.max(slot + 1, cs.length() * 2));
        for (int i = 0; i < cs.length(); i++) {
          bigger.set(i, cs.get(i));
        }
        AtomicLongArray replicas = new AtomicLongArray(bigger.length());
        for (int i = 0; i < lastReplica.length(); i++) {
          replicas.set(i, lastReplica.get(i));
        }
        lastReplica = replicas; // published before the counts: whoever sees the new counts sees it
        counts = bigger;
        cs = bigger;
      }
      return cs;
    }
  }
}
