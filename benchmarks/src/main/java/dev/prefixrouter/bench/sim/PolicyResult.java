package dev.prefixrouter.bench.sim;

import java.util.Arrays;
import java.util.Map;

/**
 * What one policy did on one workload. Times in milliseconds; hit rates from the simulated
 * backends' own caches (ground truth), not the router's beliefs.
 */
record PolicyResult(
    String workload,
    String policy,
    int requests,
    int completed,
    int rejected,
    int failed,
    int failovers,
    double tokenHitRate,
    double blockHitRate,
    double ttftMean,
    double ttftP50,
    double ttftP95,
    double ttftP99,
    double e2eMean,
    double e2eP95,
    double throughputTokensPerSec,
    double loadImbalance,
    int[] routedPerBackend,
    Map<String, double[]> tenants,
    double simulatedSeconds,
    double wallSeconds,
    double[] ttftSample) {

  static double percentile(double[] sorted, double p) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    int i = (int) Math.ceil(p * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
  }

  static double mean(double[] xs) {
    return xs.length == 0 ? Double.NaN : Arrays.stream(xs).average().orElse(Double.NaN);
  }

  /** max / mean of requests routed per backend. */
  static double imbalance(int[] routed) {
    double mean = Arrays.stream(routed).average().orElse(0);
    int max = Arrays.stream(routed).max().orElse(0);
    return mean == 0 ? 0 : max / mean;
  }
}
