package dev.prefixrouter.scoring;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.prefixrouter.api.TenantSnapshot;
import dev.prefixrouter.api.spi.Admission;
import dev.prefixrouter.api.spi.TenantLimiter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.LongAdder;

/**
 * Per-tenant token buckets: each request is charged {@code promptTokens + reservedOutputTokens} at
 * admission and trued up on completion with the actual usage (refund, or an extra charge that may
 * leave the bucket in debt). An optional request-count bucket limits requests per period too.
 *
 * <pre>{@code
 * TenantLimiter limiter = TenantTokenBuckets.builder()
 *     .defaultQuota(Quota.perMinute(100_000))
 *     .quota("batch-team", Quota.perMinute(1_000_000).withMaxRequests(600))
 *     .build();
 * }</pre>
 *
 * <p>A request larger than its tenant's whole bucket is answered {@code TOO_LARGE} (never an
 * endless retry-after). A denial's retry-after is exact: the time until the bucket holds the
 * request's tokens, given the refill rate and the carried remainder.
 *
 * <p><b>Bounds.</b> Tenants live in a Caffeine cache of at most {@link Builder#maxTenants} entries
 * (default 100,000) that expires tenants idle for {@link Builder#expireAfterIdle} (default 1 h,
 * longer than any refill period). A tenant evicted by size or idleness comes back with a full
 * bucket; size the cache above the number of active tenants. About 200 bytes per tenant.
 *
 * <p><b>Concurrency.</b> Lock-free: each bucket is an immutable state swapped by CAS; integer
 * arithmetic in nanoseconds. Thread-safe; {@code tryAcquire} costs one cache lookup and one CAS.
 */
public final class TenantTokenBuckets implements TenantLimiter {

  /** The buckets of one tenant. */
  private static final class Tenant {
    final TokenBucket tokens;
    final TokenBucket requests; // null when no request limit
    final LongAdder rejected = new LongAdder();

    Tenant(Quota q, long now) {
      long period = q.period().toNanos();
      tokens = new TokenBucket(q.capacityTokens(), q.refillTokens(), period, now);
      requests =
          q.maxRequestsPerPeriod() == 0
              ? null
              : new TokenBucket(q.maxRequestsPerPeriod(), q.maxRequestsPerPeriod(), period, now);
    }
  }

  private final Quota defaultQuota;
  private final Map<String, Quota> overrides;
  private final Cache<String, Tenant> tenants;

  private TenantTokenBuckets(Builder b) {
    this.defaultQuota = b.defaultQuota;
    this.overrides = Map.copyOf(b.overrides);
    this.tenants =
        Caffeine.newBuilder()
            .maximumSize(b.maxTenants)
            .expireAfterAccess(b.expireAfterIdle)
            .executor(Runnable::run) // maintenance on the routing threads, amortized
            .build();
  }

  /** Every tenant gets {@code tokensPerMinute}, with a one-minute burst. */
  public static TenantTokenBuckets perMinute(long tokensPerMinute) {
    return builder().defaultQuota(Quota.perMinute(tokensPerMinute)).build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The quota a tenant gets. */
  public Quota quotaOf(String tenant) {
    return overrides.getOrDefault(tenant, defaultQuota);
  }

  private Tenant tenant(String name, long now) {
    return tenants.get(name, t -> new Tenant(quotaOf(t), now));
  }

  @Override
  public Admission tryAcquire(String tenant, long tokens, long nowNanos) {
    Objects.requireNonNull(tenant, "tenant");
    if (tokens < 0) {
      throw new IllegalArgumentException("tokens must be >= 0, was " + tokens);
    }
    Tenant t = tenant(tenant, nowNanos);
    if (tokens > t.tokens.capacity) {
      t.rejected.increment();
      return Admission.tooLarge(
          "request needs "
              + tokens
              + " tokens but tenant '"
              + tenant
              + "' has a burst of "
              + t.tokens.capacity);
    }
    if (t.requests != null) {
      long wait = t.requests.tryTake(1, nowNanos);
      if (wait > 0) {
        t.rejected.increment();
        return Admission.denied(
            wait,
            "tenant '" + tenant + "' is over its " + t.requests.capacity + " requests per period");
      }
    }
    long wait = t.tokens.tryTake(tokens, nowNanos);
    if (wait > 0) {
      if (t.requests != null) {
        t.requests.adjust(-1, nowNanos);
      }
      t.rejected.increment();
      return Admission.denied(
          wait, "tenant '" + tenant + "' is over its token quota (needs " + tokens + ")");
    }
    return Admission.GRANTED;
  }

  @Override
  public void adjust(String tenant, long deltaTokens, long nowNanos) {
    Objects.requireNonNull(tenant, "tenant");
    if (deltaTokens == 0) {
      return;
    }
    tenant(tenant, nowNanos).tokens.adjust(deltaTokens, nowNanos);
  }

  /** Tokens in a tenant's bucket now (negative while in debt). */
  public long available(String tenant, long nowNanos) {
    return tenant(tenant, nowNanos).tokens.available(nowNanos);
  }

  @Override
  public List<TenantSnapshot> snapshot(int maxTenants, long nowNanos) {
    List<TenantSnapshot> out = new ArrayList<>(Math.min(maxTenants, 64));
    for (Map.Entry<String, Tenant> e : tenants.asMap().entrySet()) {
      if (out.size() >= maxTenants) {
        break;
      }
      Tenant t = e.getValue();
      out.add(
          new TenantSnapshot(
              e.getKey(), t.tokens.available(nowNanos), t.tokens.capacity, t.rejected.sum()));
    }
    return out;
  }

  /** Tenants currently held (approximate, as Caffeine reports). */
  public long tenantCount() {
    return tenants.estimatedSize();
  }

  @Override
  public String toString() {
    return "TenantTokenBuckets[default=" + defaultQuota + ", overrides=" + overrides.size() + "]";
  }

  /** Builder; setters validate at once. */
  public static final class Builder {
    private Quota defaultQuota = Quota.perMinute(1_000_000);
    private final Map<String, Quota> overrides = new HashMap<>();
    private long maxTenants = 100_000;
    private Duration expireAfterIdle = Duration.ofHours(1);

    private Builder() {}

    public Builder defaultQuota(Quota quota) {
      this.defaultQuota = Objects.requireNonNull(quota, "defaultQuota");
      return this;
    }

    public Builder quota(String tenant, Quota quota) {
      Objects.requireNonNull(tenant, "tenant");
      if (tenant.isBlank()) {
        throw new IllegalArgumentException("tenant must not be blank");
      }
      overrides.put(tenant, Objects.requireNonNull(quota, "quota"));
      return this;
    }

    /** Most tenants held at once, {@code [1, 100_000_000]}. */
    public Builder maxTenants(long maxTenants) {
      if (maxTenants < 1 || maxTenants > 100_000_000) {
        throw new IllegalArgumentException("maxTenants must be in [1, 1e8], was " + maxTenants);
      }
      this.maxTenants = maxTenants;
      return this;
    }

    /** Idle time after which a tenant's state is dropped (it returns full); at least 1 s. */
    public Builder expireAfterIdle(Duration idle) {
      Objects.requireNonNull(idle, "expireAfterIdle");
      if (idle.compareTo(Duration.ofSeconds(1)) < 0) {
        throw new IllegalArgumentException("expireAfterIdle must be >= 1 s, was " + idle);
      }
      this.expireAfterIdle = idle;
      return this;
    }

    public TenantTokenBuckets build() {
      return new TenantTokenBuckets(this);
    }
  }
}
