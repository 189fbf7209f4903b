package dev.prefixrouter.scoring;

import dev.prefixrouter.api.spi.IndexSignal;
import dev.prefixrouter.api.spi.ScoringContext;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * Cache pressure: a candidate whose cache turns over much faster than the slowest candidate's
 * ({@link IndexSignal#LRU_AGE_NANOS} below {@code 1 / turnoverRatio} of the largest) pays {@code
 * weight × (1 − turnoverRatio × lruAge / largest) × (its uncached prefill beyond alpha)}, divided
 * by the backend's weight: the re-prefill its insert will cause. A full candidate pays in full when
 * another has room; nothing is paid when no cache is known to be full or no clock moves. Tuning:
 * {@link EstimatedTtftScorer.Builder#cachePressure}.
 *
 * <p>Its {@link #reason}: when the winner, ranked without this term, would not even have tied with
 * the best estimate, {@code "est-ttft, cache pressure"}.
 */
final class CachePressureTerm implements CostTerm {
  static final String NAME = "cache-pressure";

  private final double weight;
  private final double turnoverRatio;

  CachePressureTerm(double weight, double turnoverRatio) {
    this.weight = weight;
    this.turnoverRatio = turnoverRatio;
  }

  /**
   * Per thread: the candidates' pressure shares, whether any applies this decision, and whether any
   * candidate was charged (a cost other than 0).
   */
  private static final class State {
    double[] pressure = new double[16];
    boolean active;
    boolean charged;
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public void costs(Candidates c, double[] out) {
    State s = prepare(c);
    int n = c.size();
    boolean charged = false;
    if (s.active) {
      double[] pressure = s.pressure;
      int prompt = c.ctx().promptTokens();
      for (int i = 0; i < n; i++) {
        double v = evictionMs(c, i, pressure[i], prompt);
        out[i] = v;
        charged |= v != 0;
      }
    } else {
      Arrays.fill(out, 0, n, 0.0);
    }
    s.charged = charged;
  }

  private State prepare(Candidates c) {
    State s = c.state(this, State::new);
    s.pressure = c.fit(s.pressure);
    s.active = pressure(c.ctx(), s.pressure);
    return s;
  }

  /**
   * Per candidate, the share of its uncached prefill it pays for what its insert evicts: {@code 1 −
   * turnoverRatio × lruAge / largest lruAge}, at least 0 (0 for one with room, 1 for a full one
   * when another has room); false when no candidate's cache is known to be full or no clock moves.
   */
  private boolean pressure(ScoringContext ctx, double[] buf) {
    int n = ctx.size();
    long largest = 0;
    boolean full = false;
    for (int i = 0; i < n; i++) {
      long signal = ctx.signal(i, IndexSignal.LRU_AGE_NANOS);
      long age = IndexSignal.isPresent(signal) ? Math.max(0, signal) : Long.MAX_VALUE;
      buf[i] = age;
      largest = Math.max(largest, age);
      full |= age != Long.MAX_VALUE;
    }
    if (!full || largest == 0) {
      return false;
    }
    for (int i = 0; i < n; i++) {
      if (buf[i] == Long.MAX_VALUE) {
        buf[i] = 0; // room: the insert evicts nothing
      } else if (largest == Long.MAX_VALUE) {
        buf[i] = 1; // another candidate has room
      } else {
        buf[i] = Math.max(0, 1 - turnoverRatio * buf[i] / largest);
      }
    }
    return true;
  }

  /** The re-prefill this request's insert is expected to cause on candidate {@code i}, in ms. */
  private double evictionMs(Candidates c, int i, double pressure, int prompt) {
    if (pressure <= 0) {
      return 0;
    }
    double cached = c.cachedTokens(i);
    double uncached = prompt - cached;
    if (uncached <= 0) {
      return 0;
    }
    double ms = c.prefillMs(i, uncached, cached) - c.prefillMs(i, 0, cached);
    return weight * pressure * ms / c.weight(i);
  }

  @Override
  public @Nullable String reason(Candidates c) {
    State s = (State) c.state(this);
    if (s == null || !s.charged) {
      // no candidate was charged: without this term every cost is the same value (x + 0 == x),
      // so the winner's estimate is the best one and within the band of itself
      return null;
    }
    // the winner without the steering terms, and the best estimate without this term either
    int n = c.size();
    double bestPlain = Double.POSITIVE_INFINITY;
    int plainWinner = 0;
    for (int i = 0; i < n; i++) {
      double e = c.plainCost(i);
      if (e < bestPlain) {
        bestPlain = e;
        plainWinner = i;
      }
    }
    if (c.order()[0] != plainWinner) {
      return null;
    }
    double bestEstimate = Double.POSITIVE_INFINITY;
    for (int i = 0; i < n; i++) {
      bestEstimate = Math.min(bestEstimate, c.costWithout(i, this));
    }
    if (c.costWithout(plainWinner, this) > c.bandLimit(bestEstimate)) {
      // without the pressure the winner would not even have tied: a cheaper estimate lost for
      // what its insert would evict
      return "est-ttft, cache pressure";
    }
    return null;
  }
}
