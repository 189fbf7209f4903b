package dev.prefixrouter.scoring;

import dev.prefixrouter.api.spi.ScoringContext;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.jspecify.annotations.Nullable;

/**
 * Each slot's share of recent routing decisions: a count decayed by {@code 2^(-1/halfLife)} per
 * decision (lazily, from the global decision sequence), so no clock is needed. Lock-free: one CAS
 * per recorded decision, reads take immutable snapshots.
 */
final class RouteShares {
  private record Count(double value, long seq) {}

  private final double decayPerRoute;
  private final AtomicLong seq = new AtomicLong();
  private volatile AtomicReferenceArray<Count> counts = new AtomicReferenceArray<>(64);
  private final Object growLock = new Object();

  RouteShares(int halfLifeRoutes) {
    this.decayPerRoute = Math.pow(0.5, 1.0 / halfLifeRoutes);
  }

  void record(int slot) {
    long now = seq.incrementAndGet();
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
   * Each candidate's decayed count over its fair share by weight (1.0 = exactly fair), or {@code
   * null} while the candidates have seen fewer than 100 decisions each (too little evidence).
   */
  double @Nullable [] relativeShares(ScoringContext ctx) {
    int n = ctx.size();
    double[] out = new double[n];
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
      return null;
    }
    for (int i = 0; i < n; i++) {
      double fair = total * ctx.backend(i).weight() / weights;
      out[i] = out[i] / fair;
    }
    return out;
  }

  void forget(int slot) {
    AtomicReferenceArray<Count> cs = counts;
    if (slot < cs.length()) {
      cs.set(slot, null);
    }
  }

  private double decayed(Count c, long now) {
    long age = now - c.seq;
    return age <= 0 ? c.value : c.value * Math.pow(decayPerRoute, age);
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
        counts = bigger;
        cs = bigger;
      }
      return cs;
    }
  }
}
