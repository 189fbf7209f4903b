package dev.prefixrouter.scoring;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;
import com.github.benmanes.caffeine.cache.RemovalCause;
import com.github.benmanes.caffeine.cache.Ticker;
import dev.prefixrouter.api.TenantSnapshot;
import dev.prefixrouter.api.spi.Admission;
import dev.prefixrouter.api.spi.TenantLimiter;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
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
 * until its buckets are full again, whichever is later, plus 1.1 s (Caffeine's tolerance for moving
 * an expiration time on a read, and the front's window; see {@code IdleUntilFull}). A tenant
 * evicted by size (more tenants than {@code maxTenants}) comes back with a full bucket, debt
 * included: size the cache above the number of active tenants. About 200 bytes per tenant.
 *
 * <p><b>Concurrency.</b> Each bucket is three longs updated in place under its own short lock (see
 * {@code TokenBucket}); integer arithmetic in nanoseconds. Thread-safe; {@code tryAcquire} costs
 * one cache lookup and one lock acquisition per bucket, and allocates nothing for a known tenant. A
 * tenant read from the cache in the last 100 ms whose expiry is at its floor (no request limit, not
 * in debt, two bursts refill within the idle time: a busy tenant under the defaults) is found in a
 * small front instead, without the cache's read bookkeeping ({@code fromFront}); the front never
 * hands out a tenant the cache has evicted, and skipping those reads shortens no tenant's life (the
 * slack above carries the window).
 */
public final class TenantTokenBuckets implements TenantLimiter {

  /** The buckets of one tenant (package-private: tests interleave its reads and takes). */
  static final class Tenant {
    final String name;
    final TokenBucket tokens;
    final TokenBucket requests; // null when no request limit
    final LongAdder rejected = new LongAdder();

    /** False once Caffeine has evicted this tenant: the front must not hand it out again. */
    volatile boolean live = true;

    /**
     * Until when (engine nanos) the front may hand this tenant out without a Caffeine read: set by
     * a Caffeine read that found the tenant's expiry at its floor, to {@link #FRONT_NANOS} later
     * (release store after the read, acquire load by the front). Starts closed (at creation time).
     */
    @SuppressWarnings("unused") // through FRONT_UNTIL
    private long frontUntil;

    Tenant(String name, Quota q, long now) {
      this.name = name;
      this.frontUntil = now;
      long period = q.period().toNanos();
      tokens = new TokenBucket(q.capacityTokens(), q.refillTokens(), period, now);
      requests =
          q.maxRequestsPerPeriod() == 0
              ? null
              : new TokenBucket(q.maxRequestsPerPeriod(), q.maxRequestsPerPeriod(), period, now);
    }
  }

  private static final VarHandle FRONT_UNTIL;

  static {
    try {
      FRONT_UNTIL =
          MethodHandles.privateLookupIn(Tenant.class, MethodHandles.lookup())
              .findVarHandle(Tenant.class, "frontUntil", long.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  /** Slots of the front (a power of two). */
  private static final int FRONT_SLOTS = 64;

  /**
   * References between two slots of the front: 16 references (64 bytes with compressed oops) put
   * each slot on a cache line of its own, so a slot written for one tenant does not invalidate the
   * line a thread reads another tenant's slot from.
   */
  private static final int FRONT_SPACING = 16;

  /**
   * How long a Caffeine read lets the front skip the next ones for that tenant: 100 ms. Every
   * expiry carries this much more slack (see {@code IdleUntilFull}), so an entry read at {@code r}
   * lives at least until {@code r + FRONT_NANOS} plus what any access before then would need.
   */
  static final long FRONT_NANOS = 100_000_000L;

  private final Quota defaultQuota;
  private final Map<String, Quota> overrides;
  private final Cache<String, Tenant> tenants;
  private final long idleNanos;

  /**
   * The front: recently read tenants, direct-mapped by name hash ({@link #FRONT_SLOTS} slots, one
   * per cache line), read without a lock. A slot is only a hint: a tenant found there is used only
   * under the conditions of {@link #fromFront}.
   */
  private final Tenant[] front = new Tenant[FRONT_SLOTS * FRONT_SPACING];

  private TenantTokenBuckets(Builder b) {
    this.idleNanos = b.expireAfterIdle.toNanos();
    this.defaultQuota = b.defaultQuota;
    this.overrides = Map.copyOf(b.overrides);
    Caffeine<Object, Object> caffeine =
        Caffeine.newBuilder()
            .maximumSize(b.maxTenants)
            .executor(Runnable::run); // maintenance on the routing threads, amortized
    Caffeine<String, Tenant> listened =
        caffeine.evictionListener((String k, Tenant t, RemovalCause cause) -> t.live = false);
    if (b.ticker != null) {
      caffeine.ticker(b.ticker);
    }
    Caffeine<String, Tenant> typed = listened.expireAfter(new IdleUntilFull(idleNanos));
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
   * regression in {@code TokenBucketDebtTest}). The slack also carries {@link #FRONT_NANOS}: the
   * reads the front skips after a Caffeine read would each have asked for at most that much more
   * (see {@link TenantTokenBuckets#fromFront}).
   */
  private static final class IdleUntilFull implements Expiry<String, Tenant> {
    /** Caffeine's read tolerance for variable expiry (1 s in 3.2.x), plus the front's window. */
    static final long SLACK_NANOS = 1_000_000_000L + FRONT_NANOS;

    private final long idleNanos;

    IdleUntilFull(long idleNanos) {
      this.idleNanos = idleNanos;
    }

    private long expiry(Tenant t) {
      long expiry = t.tokens.nanosUntilFullAfterBurst(idleNanos); // max(idle, until full)
      if (t.requests != null) {
        // as for the tokens, every permit this read may be followed by: concurrent admissions
        // all read before any of them takes, so an expiry for one more take would drop the tenant
        // (and recreate it full) while permits taken after it are still refilling
        expiry = Math.max(expiry, t.requests.nanosUntilFullAfter(t.requests.capacity));
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

  /** The tenant's buckets, read through the front or Caffeine (which renews its expiry). */
  Tenant tenant(String name, long now) {
    Tenant t = fromFront(name, now);
    if (t != null) {
      return t;
    }
    t = tenants.getIfPresent(name); // a hit allocates no capturing lambda
    if (t == null) {
      t = tenants.get(name, k -> new Tenant(k, quotaOf(k), now));
    }
    toFront(t, now);
    return t;
  }

  private static int frontSlot(String name) {
    int h = name.hashCode();
    return ((h ^ (h >>> 16)) & (FRONT_SLOTS - 1)) * FRONT_SPACING;
  }

  /**
   * The tenant {@code name} from the front, without a Caffeine read, or null. Only when the tenant
   * is still in the cache ({@link Tenant#live}), a Caffeine read of it happened less than {@link
   * #FRONT_NANOS} ago ({@link Tenant#frontUntil}), it has no request limit, and its expiry is at
   * its floor: not in debt, and refilling twice its burst takes at most the idle time (so the read
   * skipped would have asked for exactly the idle time). Such a read would only have moved the
   * expiry to {@code now + idle + slack}; the last Caffeine read, less than {@link #FRONT_NANOS}
   * before, already set at least {@code now + idle} (its slack carries the window), so skipping it
   * keeps the tenant for the idle time after this access and until its bucket is full again, as the
   * read would have.
   */
  private @Nullable Tenant fromFront(String name, long now) {
    Tenant t = front[frontSlot(name)];
    if (t == null
        || !t.name.equals(name)
        || !t.live
        || now - (long) FRONT_UNTIL.getAcquire(t) >= 0) {
      return null;
    }
    return atFloor(t) ? t : null;
  }

  /**
   * Whether the expiry {@code t} needs now is the idle time alone: no request limit, not in debt,
   * and twice its burst refills within the idle time. One optimistic read of the bucket.
   */
  private boolean atFloor(Tenant t) {
    return t.requests == null && t.tokens.nanosUntilFullAfterBurst(idleNanos) == idleNanos;
  }

  /**
   * After a Caffeine read of {@code t} at {@code now}: if its expiry is at its floor ({@link
   * #atFloor}), opens its front window and puts it in its slot if another tenant is there.
   */
  private void toFront(Tenant t, long now) {
    if (!atFloor(t)) {
      return;
    }
    FRONT_UNTIL.setRelease(t, now + FRONT_NANOS);
    int slot = frontSlot(t.name);
    if (front[slot] != t) {
      front[slot] = t;
    }
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

  /** Refunds the tokens and, under a request quota, the request permit the admission took. */
  @Override
  public void release(String tenant, long tokens, long nowNanos) {
    Objects.requireNonNull(tenant, "tenant");
    if (tokens < 0) {
      throw new IllegalArgumentException("tokens must be >= 0, was " + tokens);
    }
    Tenant t = tenant(tenant, nowNanos);
    if (tokens > 0) {
      t.tokens.adjust(-tokens, nowNanos);
    }
    if (t.requests != null) {
      t.requests.adjust(-1, nowNanos);
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
