package dev.prefixrouter.scoring;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;
import com.github.benmanes.caffeine.cache.Ticker;
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
import org.jspecify.annotations.Nullable;

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
 * endless retry-after). A denial's retry-after is exact: the time until both buckets hold the
 * request (its tokens, and one request when there is a request limit), given the refill rates and
 * the carried remainders; retrying then succeeds if nothing else was charged meanwhile.
 *
 * <p><b>Debt.</b> A true-up beyond the reservation leaves the bucket in debt (down to 2^62 tokens,
 * where it saturates). Debt is repaid only by refill at the quota's rate: idle time never forgives
 * it, and a tenant is never expired for idleness before its buckets would be full again.
 *
 * <p><b>Bounds.</b> Tenants live in a Caffeine cache of at most {@link Builder#maxTenants} entries
 * (default 100,000) that expires a tenant idle for {@link Builder#expireAfterIdle} (default 1 h) or
 * until its buckets are full again, whichever is later, plus one second (Caffeine's tolerance for
 * moving an expiration time on a read; see {@code IdleUntilFull}). A tenant evicted by size (more
 * tenants than {@code maxTenants}) comes back with a full bucket, debt included: size the cache
 * above the number of active tenants. About 200 bytes per tenant.
 *
 * <p><b>Concurrency.</b> Each bucket is three longs updated in place under its own short lock (see
 * {@code TokenBucket}); integer arithmetic in nanoseconds. Thread-safe; {@code tryAcquire} costs
 * one cache lookup and one lock acquisition per bucket, and allocates nothing for a known tenant.
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
    Caffeine<Object, Object> caffeine =
        Caffeine.newBuilder()
            .maximumSize(b.maxTenants)
            .executor(Runnable::run); // maintenance on the routing threads, amortized
    if (b.ticker != null) {
      caffeine.ticker(b.ticker);
    }
    Caffeine<String, Tenant> typed =
        caffeine.expireAfter(new IdleUntilFull(b.expireAfterIdle.toNanos()));
    this.tenants = typed.build();
  }

  /**
   * Expires a tenant after {@code idleNanos} without access, but never before its buckets are full
   * again: dropping a tenant in debt (or below full) would hand it a full bucket early. The expiry
   * is computed at each access, before the access's own take, so it allows for one more take of a
   * whole burst; a true-up re-reads it after charging.
   *
   * <p>Every expiry returned is {@link #SLACK_NANOS} longer than needed: on a read Caffeine keeps
   * the old expiration time when the new one is within its tolerance of it (one second in 3.2.x,
   * {@code BoundedLocalCache.EXPIRE_TOLERANCE}), so a read that should extend the life of a tenant
   * by less than that second does not. With the slack, an expiration kept that way is still at
   * least the needed one (old &ge; now + needed + slack &minus; tolerance). Without it a tenant
   * could be dropped, and recreated full, up to a second before its bucket was full again (the
   * regression in {@code TokenBucketDebtTest}).
   */
  private static final class IdleUntilFull implements Expiry<String, Tenant> {
    /** At least Caffeine's read tolerance for variable expiry (1 s in 3.2.x). */
    static final long SLACK_NANOS = 1_000_000_000L;

    private final long idleNanos;

    IdleUntilFull(long idleNanos) {
      this.idleNanos = idleNanos;
    }

    private long expiry(Tenant t) {
      long expiry = t.tokens.nanosUntilFullAfterBurst(idleNanos); // max(idle, until full)
      if (t.requests != null) {
        expiry = Math.max(expiry, t.requests.nanosUntilFullAfter(1));
      }
      return Math.min(Long.MAX_VALUE / 2, expiry) + SLACK_NANOS;
    }

    @Override
    public long expireAfterCreate(String key, Tenant t, long currentTime) {
      return expiry(t);
    }

    @Override
    public long expireAfterUpdate(String key, Tenant t, long currentTime, long currentDuration) {
      return expiry(t);
    }

    @Override
    public long expireAfterRead(String key, Tenant t, long currentTime, long currentDuration) {
      return expiry(t);
    }
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
    Tenant t = tenants.getIfPresent(name); // a hit allocates no capturing lambda
    return t != null ? t : tenants.get(name, k -> new Tenant(quotaOf(k), now));
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
            Math.max(wait, t.tokens.waitFor(tokens, nowNanos)),
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

  /**
   * Trues up a tenant's charge; a positive delta may leave it in debt, which only refill repays.
   */
  @Override
  public void adjust(String tenant, long deltaTokens, long nowNanos) {
    Objects.requireNonNull(tenant, "tenant");
    if (deltaTokens == 0) {
      return;
    }
    tenant(tenant, nowNanos).tokens.adjust(deltaTokens, nowNanos);
    if (deltaTokens > 0) {
      tenants.getIfPresent(tenant); // re-reads the expiry: a tenant in debt outlives its idle TTL
    }
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
    private @Nullable Ticker ticker;

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

    /**
     * Idle time after which a tenant's state is dropped once its buckets are full again, in [1 s,
     * 3650 days].
     */
    public Builder expireAfterIdle(Duration idle) {
      Objects.requireNonNull(idle, "expireAfterIdle");
      if (idle.compareTo(Duration.ofSeconds(1)) < 0 || idle.compareTo(Duration.ofDays(3650)) > 0) {
        throw new IllegalArgumentException(
            "expireAfterIdle must be in [1 s, 3650 days], was " + idle);
      }
      this.expireAfterIdle = idle;
      return this;
    }

    /** The clock Caffeine expires tenants by (tests: the same fake clock as {@code nowNanos}). */
    Builder ticker(Ticker ticker) {
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      return this;
    }

    public TenantTokenBuckets build() {
      return new TenantTokenBuckets(this);
    }
  }
}
