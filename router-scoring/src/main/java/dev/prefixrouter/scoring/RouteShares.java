package dev.prefixrouter.scoring;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.prefixrouter.api.spi.ScoringContext;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Each slot's share of recent routing decisions: a count decayed by {@code 2^(-1/halfLife)} per
 * decision (lazily, from the global decision sequence), so no clock is needed. Lock-free: one CAS
 * per recorded decision, reads take immutable snapshots.
 */
final class RouteShares {
  private record Count(double value, long seq) {}

  private final double decayPerRoute;
  private final AtomicLong seq = new AtomicLong();
  private final java.util.concurrent.atomic.AtomicReference<Count> total =
      new java.util.concurrent.atomic.AtomicReference<>(new Count(0, 0));

  /** Decayed decision counts per prefix group (bounded; evicted groups start again at zero). */
  private final Cache<Long, Count> prefixes =
      Caffeine.newBuilder().maximumSize(65_536).executor(Runnable::run).build(); // no pool hops

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
    long now = seq.incrementAndGet();
    total.updateAndGet(c -> new Count(decayed(c, now) + 1, now));
    if (prefix != 0) {
      prefixes
          .asMap()
          .compute(prefix, (k, c) -> new Count(c == null ? 1 : decayed(c, now) + 1, now));
    }
    AtomicReferenceArray<Count> cs = array(slot);
    while (true) {
      Count c = cs.get(slot);
      double v = c == null ? 0 : decayed(c, now);
      if (cs.compareAndSet(slot, c, new Count(v + 1, now))) {
        return;
      }
    }
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
      out[i] = c == null ? 0 : decayed(c, now);
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
   * candidates): 1.0 means the group alone could keep a backend at its fair load.
   */
  double hotness(long prefix, int n) {
    if (prefix == 0) {
      return 1.0;
    }
    long now = seq.get();
    Count c = prefixes.getIfPresent(prefix);
    double all = decayed(total.get(), now);
    if (c == null || all <= 0) {
      return 0.0;
    }
    return decayed(c, now) * n / all;
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

  private double decayed(Count c, long now) {
    long age = now - c.seq;
    if (age <= 0) {
      return c.value;
    }
    return c.value * (age < DECAY_TABLE ? decayByAge[(int) age] : Math.pow(decayPerRoute, age));
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
