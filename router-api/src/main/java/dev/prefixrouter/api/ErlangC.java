package dev.prefixrouter.api;

import java.util.OptionalInt;

/**
 * The M/M/c queue (Erlang C): Poisson arrivals at rate λ, exponential service of mean {@code S},
 * {@code c} identical servers sharing one first-come-first-served queue. Used by the capacity
 * planner ({@link CapacityPlan}) to size a pool of backends for a time-to-first-token objective,
 * where a server is one backend's prefill pipeline and the service time its mean prefill time; TTFT
 * is taken as that mean plus the M/M/c wait.
 *
 * <p>All methods are pure, thread-safe and allocation-free. Erlang B is computed with the stable
 * recursion {@code B(k) = a·B(k−1) / (k + a·B(k−1))} (no factorials, no overflow), so a call costs
 * O(c); {@link #serversFor} walks c upwards and costs O(answer). Rates are per second, times in
 * seconds.
 */
public final class ErlangC {
  /** Largest server count {@link #serversFor} considers (the engine's backend limit). */
  public static final int MAX_SERVERS = RoutingEngineBuilder.MAX_BACKENDS_LIMIT;

  private ErlangC() {}

  /**
   * The probability that an arrival waits (the Erlang C formula).
   *
   * @param servers c, at least 1
   * @param offeredLoad a = λ·S in Erlangs, finite and non-negative
   * @return P(wait &gt; 0) in [0, 1]; 1 when {@code a >= c} (the queue grows without bound)
   * @throws IllegalArgumentException for c &lt; 1 or a negative or non-finite load
   */
  public static double waitProbability(int servers, double offeredLoad) {
    checkServers(servers);
    checkLoad(offeredLoad);
    if (offeredLoad >= servers) {
      return 1.0;
    }
    double b = 1.0;
    for (int k = 1; k <= servers; k++) {
      b = offeredLoad * b / (k + offeredLoad * b);
    }
    return erlangC(servers, offeredLoad, b);
  }

  private static double erlangC(int c, double a, double erlangB) {
    return c * erlangB / (c - a * (1 - erlangB));
  }

  /**
   * The probability that a request waits longer than {@code t} before its service starts: {@code
   * C(c, a)·exp(−(c/S − λ)·t)}.
   *
   * @param servers c, at least 1
   * @param arrivalsPerSecond λ, finite and non-negative
   * @param serviceSeconds S, finite and positive
   * @param tSeconds the threshold, finite and non-negative
   * @return P(W &gt; t) in [0, 1]; 1 when the queue is unstable ({@code λ·S >= c})
   */
  public static double waitExceedance(
      int servers, double arrivalsPerSecond, double serviceSeconds, double tSeconds) {
    checkServers(servers);
    checkRate(arrivalsPerSecond);
    checkService(serviceSeconds);
    if (!(tSeconds >= 0) || Double.isInfinite(tSeconds)) {
      throw new IllegalArgumentException("tSeconds must be finite and >= 0, was " + tSeconds);
    }
    double a = arrivalsPerSecond * serviceSeconds;
    if (a >= servers) {
      return 1.0;
    }
    double theta = servers / serviceSeconds - arrivalsPerSecond;
    return waitProbability(servers, a) * Math.exp(-theta * tSeconds);
  }

  /**
   * The {@code percentile} quantile of the wait: 0 when at most {@code 1 − percentile} of arrivals
   * wait at all, else {@code ln(C / (1 − percentile)) / (c/S − λ)}.
   *
   * @param percentile in (0, 1), e.g. 0.95
   * @return seconds, or {@link Double#POSITIVE_INFINITY} when the queue is unstable
   */
  public static double waitQuantile(
      int servers, double arrivalsPerSecond, double serviceSeconds, double percentile) {
    checkServers(servers);
    checkRate(arrivalsPerSecond);
    checkService(serviceSeconds);
    checkPercentile(percentile);
    double a = arrivalsPerSecond * serviceSeconds;
    if (a >= servers) {
      return Double.POSITIVE_INFINITY;
    }
    return waitQuantile(
        servers, arrivalsPerSecond, serviceSeconds, percentile, waitProbability(servers, a));
  }

  private static double waitQuantile(int c, double lambda, double s, double p, double pWait) {
    double tail = 1 - p;
    if (pWait <= tail) {
      return 0.0;
    }
    return Math.log(pWait / tail) / (c / s - lambda);
  }

  /**
   * The fewest servers such that the mean service time plus the wait is at most {@code tSeconds}
   * for at least {@code percentile} of the requests: {@code S + waitQuantile(c) <= t}. The service
   * time enters as its mean (its own variance is left out: the prefill time of a given prompt is
   * nearly deterministic; the wait's distribution is the exponential-service M/M/c one).
   *
   * @return the count (0 when nothing arrives), or empty when no count meets the objective: the
   *     mean service time alone exceeds it or more than {@link #MAX_SERVERS} would be needed
   */
  public static OptionalInt serversFor(
      double arrivalsPerSecond, double serviceSeconds, double tSeconds, double percentile) {
    checkRate(arrivalsPerSecond);
    checkService(serviceSeconds);
    checkPercentile(percentile);
    if (!(tSeconds > 0) || Double.isInfinite(tSeconds)) {
      throw new IllegalArgumentException("tSeconds must be finite and > 0, was " + tSeconds);
    }
    if (serviceSeconds > tSeconds) {
      return OptionalInt.empty();
    }
    if (arrivalsPerSecond == 0) {
      return OptionalInt.of(0);
    }
    double slack = tSeconds - serviceSeconds;
    double a = arrivalsPerSecond * serviceSeconds;
    double b = 1.0; // Erlang B of c servers, kept up to date as c grows
    for (int c = 1; c <= MAX_SERVERS; c++) {
      b = a * b / (c + a * b);
      if (a < c
          && waitQuantile(c, arrivalsPerSecond, serviceSeconds, percentile, erlangC(c, a, b))
              <= slack) {
        return OptionalInt.of(c);
      }
    }
    return OptionalInt.empty();
  }

  private static void checkServers(int c) {
    if (c < 1) {
      throw new IllegalArgumentException("servers must be >= 1, was " + c);
    }
  }

  private static void checkLoad(double a) {
    if (!(a >= 0) || Double.isInfinite(a)) {
      throw new IllegalArgumentException("offeredLoad must be finite and >= 0, was " + a);
    }
  }

  private static void checkRate(double lambda) {
    if (!(lambda >= 0) || Double.isInfinite(lambda)) {
      throw new IllegalArgumentException(
          "arrivalsPerSecond must be finite and >= 0, was " + lambda);
    }
  }

  private static void checkService(double s) {
    if (!(s > 0) || Double.isInfinite(s)) {
      throw new IllegalArgumentException("serviceSeconds must be finite and > 0, was " + s);
    }
  }

  private static void checkPercentile(double p) {
    if (!(p > 0 && p < 1)) {
      throw new IllegalArgumentException("percentile must be in (0, 1), was " + p);
    }
  }
}
