package dev.prefixrouter.scoring.anchors;

import dev.prefixrouter.api.spi.ScoringContext;
import java.util.concurrent.atomic.AtomicLong;

/** Helpers the anchors share: a reproducible random sequence and forcing a winner to rank 0. */
final class Ranking {
  private Ranking() {}

  /** SplitMix64 over a counter: reproducible, lock-free. */
  static long splitMix(AtomicLong seq) {
    long z = seq.addAndGet(0x9E3779B97F4A7C15L);
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** Puts {@code first} at rank 0 and the rest by cost. */
  static void chooseFirst(ScoringContext ctx, int first, int rotation) {
    ctx.sortByCost(rotation);
    int[] order = ctx.order();
    int pos = 0;
    while (order[pos] != first) {
      pos++;
    }
    System.arraycopy(order, 0, order, 1, pos);
    order[0] = first;
  }

  /** Checks a finite, non-negative parameter; the message names it and the value. */
  static double nonNegative(String field, double value) {
    if (!(value >= 0) || Double.isInfinite(value)) {
      throw new IllegalArgumentException(field + " must be finite and >= 0, was " + value);
    }
    return value;
  }
}
