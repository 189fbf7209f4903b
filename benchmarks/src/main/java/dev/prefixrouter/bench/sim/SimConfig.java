package dev.prefixrouter.bench.sim;

import java.util.List;

/**
 * Fleet and router settings of one simulation.
 *
 * @param backends number of backends
 * @param profile speed and KV size of each (the first {@code slowBackends} may be slower)
 * @param scrapeIntervalNanos how often backends publish load to the router
 * @param kvEvents whether backends publish KV events to the router's index
 * @param kvEventDelayNanos event delivery delay
 * @param kvEventDropRate share of event batches lost
 * @param faults scripted faults
 * @param quotaTokensPerMinute per-tenant token quota, or 0 for none
 * @param seed seed for drops and randomised policies
 */
record SimConfig(
    int backends,
    BackendProfile profile,
    long scrapeIntervalNanos,
    boolean kvEvents,
    long kvEventDelayNanos,
    double kvEventDropRate,
    List<Fault> faults,
    long quotaTokensPerMinute,
    long seed) {

  /** A scripted fault at a fraction of the workload's arrival span. */
  record Fault(Kind kind, int backend, double atFraction) {
    enum Kind {
      CRASH,
      SLOW_3X,
      SLOW_2X
    }
  }

  static SimConfig defaults(int backends, int capacityBlocks) {
    return new SimConfig(
        backends,
        BackendProfile.h100(capacityBlocks),
        100_000_000L,
        false,
        50_000_000L,
        0.0,
        List.of(),
        0,
        1);
  }

  SimConfig withFaults(List<Fault> faults) {
    return new SimConfig(
        backends,
        profile,
        scrapeIntervalNanos,
        kvEvents,
        kvEventDelayNanos,
        kvEventDropRate,
        faults,
        quotaTokensPerMinute,
        seed);
  }

  SimConfig withScrapeInterval(long nanos) {
    return new SimConfig(
        backends,
        profile,
        nanos,
        kvEvents,
        kvEventDelayNanos,
        kvEventDropRate,
        faults,
        quotaTokensPerMinute,
        seed);
  }

  SimConfig withBackends(int n) {
    return new SimConfig(
        n,
        profile,
        scrapeIntervalNanos,
        kvEvents,
        kvEventDelayNanos,
        kvEventDropRate,
        faults,
        quotaTokensPerMinute,
        seed);
  }

  SimConfig withProfile(BackendProfile p) {
    return new SimConfig(
        backends,
        p,
        scrapeIntervalNanos,
        kvEvents,
        kvEventDelayNanos,
        kvEventDropRate,
        faults,
        quotaTokensPerMinute,
        seed);
  }

  SimConfig withQuota(long tokensPerMinute) {
    return new SimConfig(
        backends,
        profile,
        scrapeIntervalNanos,
        kvEvents,
        kvEventDelayNanos,
        kvEventDropRate,
        faults,
        tokensPerMinute,
        seed);
  }

  SimConfig withKvEvents(boolean on, long delayNanos, double dropRate) {
    return new SimConfig(
        backends,
        profile,
        scrapeIntervalNanos,
        on,
        delayNanos,
        dropRate,
        faults,
        quotaTokensPerMinute,
        seed);
  }
}
