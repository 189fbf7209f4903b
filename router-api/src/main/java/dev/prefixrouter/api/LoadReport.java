package dev.prefixrouter.api;

import java.time.Duration;
import java.util.Objects;

/**
 * Load of one backend as the host measured it (for example from vLLM's {@code
 * vllm:num_requests_running}, {@code vllm:num_requests_waiting} and {@code
 * vllm:kv_cache_usage_perc}).
 *
 * <p>The time of measurement is given as an {@link #age() age} at the moment the report is handed
 * to {@link BackendRegistry#reportLoad}: the engine stamps it as {@code now - age} with its own
 * clock, so host and engine clocks never need to agree.
 *
 * @param running requests in the running batch, {@code >= 0}
 * @param waiting requests queued, {@code >= 0}
 * @param kvUsage KV-cache usage in {@code [0, 1]}
 * @param age how old the measurement already is; not negative
 */
public record LoadReport(int running, int waiting, double kvUsage, Duration age) {

  public LoadReport {
    if (running < 0) {
      throw new IllegalArgumentException("running must be >= 0, was " + running);
    }
    if (waiting < 0) {
      throw new IllegalArgumentException("waiting must be >= 0, was " + waiting);
    }
    if (!(kvUsage >= 0 && kvUsage <= 1)) {
      throw new IllegalArgumentException("kvUsage must be in [0, 1], was " + kvUsage);
    }
    Objects.requireNonNull(age, "age");
    if (age.isNegative()) {
      throw new IllegalArgumentException("age must not be negative, was " + age);
    }
  }

  /** A report measured just now. */
  public static LoadReport of(int running, int waiting, double kvUsage) {
    return new LoadReport(running, waiting, kvUsage, Duration.ZERO);
  }

  /** A copy saying the measurement is {@code age} old. */
  public LoadReport withAge(Duration age) {
    return new LoadReport(running, waiting, kvUsage, age);
  }
}
