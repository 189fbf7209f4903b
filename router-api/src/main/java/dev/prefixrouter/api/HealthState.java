package dev.prefixrouter.api;

/** Circuit-breaker state of a backend. */
public enum HealthState {
  /** Healthy: requests flow. */
  CLOSED,
  /** Failing: no requests until the cooldown ends. */
  OPEN,
  /** Cooldown over: a bounded number of probe requests decide whether to close or re-open. */
  HALF_OPEN
}
