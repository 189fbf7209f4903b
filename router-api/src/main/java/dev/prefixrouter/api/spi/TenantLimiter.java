package dev.prefixrouter.api.spi;

import dev.prefixrouter.api.TenantSnapshot;
import java.util.List;

/**
 * Per-tenant admission on tokens. The engine charges {@code promptTokens + maxOutputTokens} at
 * admission and trues up with {@link #adjust} when the lease ends (refund or extra charge).
 *
 * <p><b>Call site:</b> {@link #tryAcquire} once per {@code route()} before any other work, {@link
 * #adjust} once per ended lease whose true-up is not zero (a completion that used exactly its
 * reservation is not reported); concurrently from many threads. <b>Budget:</b> lock-free, well
 * under 1 µs. Memory must be bounded (idle tenants expire).
 */
public interface TenantLimiter {

  /** Takes {@code tokens} from the tenant's bucket if they are there. */
  Admission tryAcquire(String tenant, long tokens, long nowNanos);

  /**
   * Unconditionally adds {@code deltaTokens} to the tenant's charge (positive: extra charge, may
   * leave the bucket in debt; negative: refund, never above capacity).
   */
  void adjust(String tenant, long deltaTokens, long nowNanos);

  /**
   * Gives back a whole admission that was never used: the engine admitted the request and then
   * rejected it (no eligible backend, shed by its SLO) or a scorer threw. Returns the {@code
   * tokens} and anything else {@link #tryAcquire} took for it (a request permit), so that a client
   * that retries is not refused for a request that never ran. The default refunds the tokens with
   * {@link #adjust}; a limiter that counts more than tokens overrides it.
   */
  default void release(String tenant, long tokens, long nowNanos) {
    adjust(tenant, -tokens, nowNanos);
  }

  /** State of at most {@code maxTenants} tenants, for {@code inspect()}. */
  default List<TenantSnapshot> snapshot(int maxTenants, long nowNanos) {
    return List.of();
  }

  /** Admits everything. */
  static TenantLimiter unlimited() {
    return UnlimitedLimiter.INSTANCE;
  }
}
