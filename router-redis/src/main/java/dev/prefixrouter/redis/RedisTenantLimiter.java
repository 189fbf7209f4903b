package dev.prefixrouter.redis;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.prefixrouter.api.TenantSnapshot;
import dev.prefixrouter.api.spi.Admission;
import dev.prefixrouter.api.spi.TenantLimiter;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.StringCodec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tenant quotas that hold for a fleet of gateway replicas: each tenant has one bucket in Redis
 * ({@link FleetQuota}); each replica leases allowance from it in chunks, spends it locally and
 * settles true-ups later, so {@link #tryAcquire} and {@link #adjust} never make a Redis call.
 *
 * <pre>{@code
 * try (RedisTenantLimiter limiter = RedisTenantLimiter.builder("redis://127.0.0.1:6379")
 *     .keyPrefix("gw-prod:")
 *     .defaultQuota(FleetQuota.perMinute(100_000))
 *     .expectedReplicas(4)
 *     .build()) {
 *   RoutingEngine engine = RoutingEngine.builder().tenantLimiter(limiter)...build();
 * }
 * }</pre>
 *
 * <p><b>How a request is admitted.</b> Each replica holds a local balance per tenant. A request
 * takes its tokens from the balance by CAS. When the balance falls below one chunk, the tenant is
 * queued for the worker thread, which leases up to two chunks from the fleet bucket (one atomic Lua
 * script, {@link FleetBucketScript}). A request that finds too little may still be admitted on
 * credit, unless the last lease found the fleet bucket short ("starved"): the balance may go below
 * zero by the larger of one chunk and the fleet bucket's level at the last lease divided by {@link
 * Builder#expectedReplicas} (a tenant this replica has not leased for yet: its capacity so
 * divided). So a request several chunks large (up to that part of the burst) is admitted at once
 * while the fleet holds its tokens, and requests below the chunk still cost no Redis call in the
 * steady state. The credit is charged to the fleet unconditionally by the next lease (the fleet
 * bucket may go into debt, which only refill repays). So every admitted token is charged to the
 * fleet: over any window, a tenant's admissions across N replicas exceed the fleet's capacity plus
 * refill by at most the credit not yet settled: N chunks while the fleet is drawn down, and while
 * it is full at most its level once more (each replica's part, with N = {@code expectedReplicas};
 * more replicas than expected may each take their part). A request larger than its part of the
 * credit is denied with a short retry-after and the next lease asks room for it.
 *
 * <p><b>True-ups.</b> {@link #adjust} changes the local balance only (a refund adds to it, an extra
 * charge may put it in debt); the worker charges debt to the fleet and returns a balance above four
 * chunks down to two. {@link #close} gives every balance back (see there); a tenant that leaves the
 * local cache (idle or evicted) takes its balance with it: the fleet gets unspent tokens back only
 * by refill (the error is on the side of admitting less), and a debt lost that way is at most one
 * chunk plus the true-ups since the last lease.
 *
 * <p><b>Redis unreachable.</b> A failed or timed-out script call, or no connection, marks Redis
 * down (one WARN line per transition): admissions then come from a local bucket per tenant holding
 * {@code 1/expectedReplicas} of the quota, never blocking or throwing, and the worker probes Redis
 * every {@link Builder#retryInterval}. When Redis answers again (one INFO line), leases resume and
 * debts run up while down are not charged to the fleet (the local fallback bucket already limited
 * them); a refund that comes while Redis is up goes back to the local share first, up to what it
 * admitted while down (at most the share's capacity; the true-up carries no request identity, so a
 * fleet request's refund may land there instead, the error on the side of admitting less), never as
 * fleet tokens no one was charged for. <b>Redis slow:</b> while a tenant's asked lease has gone
 * unanswered for {@link Builder#leaseWait} (default 100 ms), a request that finds too little is
 * admitted from the same local share instead of being denied, until the lease arrives or the
 * command times out (counted in {@link #fallbackAdmissions}). Such an admission is charged to the
 * leased balance as debt, which the next lease charges to the fleet, and the local share is first
 * drawn down by what this replica spent from its leases since the last one (it is also drawn down
 * at every lease, never below zero by that): so a late lease lets a replica admit at most its
 * share's rate in all, and the fleet's bound above holds with that debt counted as credit (at most
 * one share per replica, all of it charged). A request larger than the local share waits for it to
 * be full and takes it into debt. A lease whose call failed or timed out changes nothing locally
 * but what it returned: if Redis applied it anyway (a timeout is ambiguous), the fleet holds what
 * it granted (up to two chunks, or a denied request's size) that no replica spends, and a debt it
 * charged is charged again by the next lease (the error on the side of admitting less). A return
 * (unspent allowance above two chunks) whose call failed is not restored to the balance: it either
 * reached the fleet or is lost until refill, never spendable twice.
 *
 * <p><b>Bounds.</b> Local tenants: a Caffeine cache of at most {@link Builder#maxTenants} (default
 * 100,000), expired after {@link Builder#expireAfterIdle} (default 10 min) without access, about
 * 250 bytes each. Lease queue: {@link Builder#maxPendingLeases} tenants (default 4,096); a tenant
 * is in it at most once, and a request that finds it full leaves its tenant unqueued (counted by
 * {@link #droppedLeaseRequests}) until a later request queues it. Redis holds one small hash per
 * active tenant, expiring once full. One worker thread per limiter; Lettuce's own threads per
 * client.
 *
 * <p><b>Concurrency and cost.</b> Thread-safe. {@code tryAcquire}: one cache lookup, one CAS and
 * one atomic add, plus one queue offer when the balance runs low; no allocation when granted.
 * Nothing starts on class load; {@link Builder#build} starts the worker, which connects.
 */
public final class RedisTenantLimiter implements TenantLimiter, AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(RedisTenantLimiter.class);

  /** Longest time {@link #close} spends giving balances back to the fleet. */
  private static final long CLOSE_SETTLE_NANOS = TimeUnit.SECONDS.toNanos(1);

  /** Shortest retry-after while a tenant waits for a lease. */
  private static final long MIN_RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  /** One tenant's local state on this replica. */
  static final class Tenant {
    final String name;
    final String key;
    final FleetQuota quota;
    final long chunk;
    final AtomicLong balance = new AtomicLong();
    final AtomicBoolean queued = new AtomicBoolean();
    final LocalBucket fallback;
    final LongAdder rejected = new LongAdder();

    /**
     * Tokens the local share admitted while Redis was down whose true-ups may still come, at most
     * the share's capacity: a refund while Redis is up goes back to the local share up to this much
     * (they were never charged to the fleet), the rest to the leased balance.
     */
    final AtomicLong fallbackOutstanding = new AtomicLong();

    /**
     * Net tokens charged to the leased balance (admissions and true-ups) since the local share was
     * last drawn down by them: the local share reflects what this replica spent while Redis was up,
     * so an overdue lease cannot admit a share on top of it.
     */
    final AtomicLong spent = new AtomicLong();

    /** Largest request denied since the last lease: the next lease asks for room for it. */
    final AtomicLong wanted = new AtomicLong();

    /**
     * How far below zero an admission may take the balance (settled by the next lease): at least
     * one chunk, else the fleet bucket's level at the last lease divided among the expected
     * replicas (a tenant not leased yet: its capacity divided so), so a request a few chunks large
     * is admitted while the fleet holds its tokens.
     */
    volatile long credit;

    volatile boolean starved;

    /** When a lease was first asked for and not answered yet (caller's clock), or 0. */
    volatile long awaitingSince;

    volatile long retryNanos = MIN_RETRY_NANOS;
    volatile long nextLeaseNanos;

    Tenant(String name, String key, FleetQuota quota, long chunk, FleetQuota fallback, long now) {
      this.name = name;
      this.key = key;
      this.quota = quota;
      this.chunk = chunk;
      this.fallback = new LocalBucket(fallback, now);
      this.credit = Math.max(chunk, fallback.capacityTokens());
    }
  }

  private final RedisURI uri;
  private final String keyPrefix;
  private final String replicaId;
  private final FleetQuota defaultQuota;
  private final Map<String, FleetQuota> overrides;
  private final int expectedReplicas;
  private final @Nullable Long chunkTokens;
  private final Duration commandTimeout;
  private final long retryIntervalNanos;
  private final long leaseWaitNanos;
  private final @Nullable LongSupplier fleetClockMicros;
  private final LongSupplier workerNanos;
  private final Cache<String, Tenant> tenants;
  private final BlockingQueue<Tenant> pending;
  private final @Nullable Thread worker;

  private final LongAdder dropped = new LongAdder();
  private final LongAdder fallbackAdmissions = new LongAdder();
  private final LongAdder leases = new LongAdder();
  private final LongAdder transitions = new LongAdder();

  private volatile boolean up;
  private volatile boolean closed;
  private long nextProbeNanos; // worker only
  private final RedisLink link;
  private @Nullable StatefulRedisConnection<String, String> connection;
  private @Nullable FleetBucketScript script;

  private RedisTenantLimiter(Builder b) {
    this.uri = b.uri;
    this.keyPrefix = b.keyPrefix;
    this.replicaId = b.replicaId;
    this.defaultQuota = b.defaultQuota;
    this.overrides = Map.copyOf(b.overrides);
    this.expectedReplicas = b.expectedReplicas;
    this.chunkTokens = b.chunkTokens;
    this.commandTimeout = b.commandTimeout;
    this.retryIntervalNanos = b.retryInterval.toNanos();
    this.leaseWaitNanos = b.leaseWait.toNanos();
    this.link = new RedisLink(b.uri, b.retryInterval);
    this.fleetClockMicros = b.fleetClockMicros;
    this.workerNanos = b.workerNanos;
    this.tenants =
        Caffeine.newBuilder()
            .maximumSize(b.maxTenants)
            .expireAfterAccess(b.expireAfterIdle)
            .executor(Runnable::run)
            .build();
    this.pending = new ArrayBlockingQueue<>(b.maxPendingLeases);
    this.nextProbeNanos = workerNanos.getAsLong();
    if (b.manualWorker) {
      this.worker = null;
    } else {
      Thread t = new Thread(this::workerLoop, "prefixrouter-redis-quota");
      t.setDaemon(true);
      this.worker = t;
      t.start();
    }
  }

  /** A builder for the Redis at {@code uri} (e.g. {@code redis://127.0.0.1:6379}). */
  public static Builder builder(String uri) {
    return new Builder(uri);
  }

  /** The fleet quota of {@code tenant}. */
  public FleetQuota quotaOf(String tenant) {
    return overrides.getOrDefault(tenant, defaultQuota);
  }

  /** The lease chunk of {@code quota}: explicit, or 100 ms of refill, within [1, capacity / 4]. */
  long chunkOf(FleetQuota q) {
    if (chunkTokens != null) {
      return Math.min(chunkTokens, q.capacityTokens());
    }
    long tenthOfSecond = (long) ((double) q.refillTokens() * 100_000_000L / q.period().toNanos());
    return Math.max(1, Math.min(Math.max(1, q.capacityTokens() / 4), tenthOfSecond));
  }

  private Tenant tenant(String name, long now) {
    return tenants.get(
        name,
        n -> {
          FleetQuota q = quotaOf(n);
          return new Tenant(
              n, keyPrefix + "quota:" + n, q, chunkOf(q), q.share(expectedReplicas), now);
        });
  }

  @Override
  public Admission tryAcquire(String tenant, long tokens, long nowNanos) {
    Objects.requireNonNull(tenant, "tenant");
    if (tokens < 0) {
      throw new IllegalArgumentException("tokens must be >= 0, was " + tokens);
    }
    Tenant t = tenant(tenant, nowNanos);
    if (tokens > t.quota.capacityTokens()) {
      t.rejected.increment();
      return Admission.tooLarge(
          "request needs "
              + tokens
              + " tokens but tenant '"
              + tenant
              + "' has a fleet burst of "
              + t.quota.capacityTokens());
    }
    if (!up) {
      return fallback(t, tokens, nowNanos);
    }
    for (; ; ) {
      long b = t.balance.get();
      long after = b - tokens;
      if (after < 0 && (t.starved || after < -t.credit)) {
        long asked = t.awaitingSince;
        // not for a starved tenant: the fleet had nothing for it (a lease that failed in an outage
        // leaves the mark set, and its local share would admit it uncharged until its next lease)
        if (asked != 0 && nowNanos - asked > leaseWaitNanos && !t.starved) {
          // Redis slow: a lease is overdue. Ask again (a no-op while one is queued): a lease
          // dropped in an outage left the mark set, and without a new one the tenant would stay on
          // its local share after Redis is back
          requestLease(t, nowNanos);
          return overdue(t, tokens, nowNanos);
        }
        t.wanted.accumulateAndGet(tokens, Math::max);
        requestLease(t, nowNanos);
        t.rejected.increment();
        return Admission.denied(
            Math.max(MIN_RETRY_NANOS, t.retryNanos),
            "tenant '"
                + tenant
                + "' is over its fleet token quota (needs "
                + tokens
                + ", this replica holds "
                + Math.max(0, b)
                + ")");
      }
      if (t.balance.compareAndSet(b, after)) {
        t.spent.addAndGet(tokens);
        if (after < t.chunk) {
          requestLease(t, nowNanos);
        }
        return Admission.GRANTED;
      }
    }
  }

  /**
   * Redis up but the tenant's lease overdue: admits from the local share (drawn down first by what
   * this replica spent since the last lease) and charges the admission to the leased balance as
   * debt, which the next lease charges to the fleet.
   */
  private Admission overdue(Tenant t, long tokens, long now) {
    t.fallback.charge(t.spent.getAndSet(0), now);
    Admission denied = fromLocalShare(t, tokens, now, "its fleet lease is late");
    if (denied != null) {
      return denied;
    }
    t.balance.addAndGet(-tokens);
    return Admission.GRANTED;
  }

  private Admission fallback(Tenant t, long tokens, long now) {
    Admission denied = fromLocalShare(t, tokens, now, "Redis is unreachable");
    if (denied != null) {
      return denied;
    }
    long cap = t.fallback.capacity();
    t.fallbackOutstanding.accumulateAndGet(tokens, (o, x) -> Math.min(cap, o + x));
    return Admission.GRANTED;
  }

  /**
   * Takes {@code tokens} from the tenant's local share: null when taken (counted as a fallback
   * admission), else the denial, saying {@code why} the local share is in use.
   */
  private @Nullable Admission fromLocalShare(Tenant t, long tokens, long now, String why) {
    long wait = t.fallback.tryTake(tokens, now);
    if (wait > 0) {
      t.rejected.increment();
      return Admission.denied(
          wait,
          "tenant '"
              + t.name
              + "' is over its local share (1/"
              + expectedReplicas
              + ") of its token quota while "
              + why
              + " (needs "
              + tokens
              + ")");
    }
    fallbackAdmissions.increment();
    return null;
  }

  /**
   * Queues {@code t} for a lease unless it is queued; while starved, at most once per retry unless
   * {@code returning} (a balance to give back is always worth a call).
   */
  private void requestLease(Tenant t, long now) {
    requestLease(t, now, false);
  }

  private void requestLease(Tenant t, long now, boolean returning) {
    if (!returning && t.starved && now - t.nextLeaseNanos < 0) {
      return;
    }
    if (t.queued.compareAndSet(false, true)) {
      if (t.awaitingSince == 0) {
        t.awaitingSince = now == 0 ? 1 : now;
      }
      t.nextLeaseNanos = now + t.retryNanos;
      if (!pending.offer(t)) {
        t.queued.set(false);
        dropped.increment();
      }
    }
  }

  @Override
  public void adjust(String tenant, long deltaTokens, long nowNanos) {
    Objects.requireNonNull(tenant, "tenant");
    if (deltaTokens == 0) {
      return;
    }
    Tenant t = tenant(tenant, nowNanos);
    if (!up) {
      t.fallback.adjust(deltaTokens, nowNanos);
      return;
    }
    if (deltaTokens < 0) {
      // a refund of a request the local share admitted goes back there: credited to the leased
      // balance it would be fleet tokens nobody was charged for (a fleet-admitted request's refund
      // taken here leaves the fleet a little short instead, at most the share's capacity)
      long back = takeOutstanding(t, -deltaTokens);
      if (back > 0) {
        t.fallback.adjust(-back, nowNanos);
        deltaTokens += back;
        if (deltaTokens == 0) {
          return;
        }
      }
    }
    long after = t.balance.addAndGet(-deltaTokens);
    t.spent.addAndGet(deltaTokens);
    if (after < 0 || after > 4 * t.chunk) {
      requestLease(t, nowNanos, after > 0);
    }
  }

  /** Takes up to {@code most} of {@code t}'s outstanding local admissions; returns how many. */
  private static long takeOutstanding(Tenant t, long most) {
    return Math.min(most, t.fallbackOutstanding.getAndUpdate(o -> o - Math.min(o, most)));
  }

  // ---------------------------------------------------------------- worker

  private void workerLoop() {
    while (!closed) {
      try {
        if (!up) {
          probe();
        }
        Tenant t = pending.poll(retryIntervalNanos, TimeUnit.NANOSECONDS);
        if (t != null) {
          step(t);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      } catch (RuntimeException e) {
        markDown(e); // never let the worker die
      }
    }
  }

  /**
   * Runs every queued lease on the calling thread (tests with a manual worker); returns how many
   * ran.
   */
  int runPending() {
    int n = 0;
    Tenant t;
    while ((t = pending.poll()) != null) {
      step(t);
      n++;
    }
    if (n == 0) {
      step(null);
    }
    return n;
  }

  private void step(@Nullable Tenant t) {
    if (t != null) {
      t.queued.set(false);
    }
    if (!up && !probe()) {
      return; // down: drop the request; the tenant's next request queues it again
    }
    if (t != null) {
      lease(t);
    }
  }

  /** Connects if needed and pings, at most once per retry interval; true when Redis is up. */
  private boolean probe() {
    long now = workerNanos.getAsLong();
    if (now - nextProbeNanos < 0) {
      return false;
    }
    nextProbeNanos = now + retryIntervalNanos;
    try {
      RedisCommands<String, String> c = commands();
      c.ping();
      markUp();
      return true;
    } catch (RuntimeException e) {
      markDown(e);
      return false;
    }
  }

  private RedisCommands<String, String> commands() {
    StatefulRedisConnection<String, String> c = connection;
    if (c == null) {
      c = link.connect(StringCodec.UTF8, commandTimeout);
      connection = c;
    }
    RedisCommands<String, String> sync = c.sync();
    if (script == null) {
      script = new FleetBucketScript(sync);
    }
    return sync;
  }

  private void lease(Tenant t) {
    t.fallback.charge(t.spent.getAndSet(0), workerNanos.getAsLong());
    long b = t.balance.get();
    long transfer = 0;
    if (b < 0) {
      transfer = -b; // charge the local debt to the fleet
    } else if (b > 4 * t.chunk) {
      transfer = -(b - 2 * t.chunk); // return what is above two chunks
      t.balance.addAndGet(transfer);
    }
    long held = b + transfer;
    long target = Math.max(2 * t.chunk, t.wanted.getAndSet(0));
    long want = Math.max(0, target - held);
    FleetBucketScript.Reply r;
    try {
      RedisCommands<String, String> c = commands();
      long now = fleetClockMicros == null ? -1 : fleetClockMicros.getAsLong();
      r = Objects.requireNonNull(script).call(c, t.key, t.quota, transfer, want, now);
    } catch (RuntimeException e) {
      // a return is not given back to the balance: a timed-out call may still be applied, and
      // the returned tokens would then exist twice; lost instead, the fleet refills them
      markDown(e);
      return;
    }
    leases.increment();
    t.awaitingSince = 0;
    t.credit = Math.max(t.chunk, Math.max(0, r.fleetTokens()) / expectedReplicas);
    t.balance.addAndGet(Math.max(0, transfer) + r.granted());
    boolean starved = r.granted() < want;
    if (starved) {
      long shortBy = Math.max(want - r.granted(), -r.fleetTokens());
      t.retryNanos =
          Math.max(
              MIN_RETRY_NANOS,
              Math.min(t.quota.period().toNanos(), t.quota.nanosToRefill(shortBy)));
    } else {
      t.retryNanos = MIN_RETRY_NANOS;
    }
    t.starved = starved;
  }

  /**
   * Gives every tenant's balance back to the fleet (a debt is charged, unspent allowance returned)
   * until {@code deadlineNanos}; stops at the first failure.
   */
  private void settleAll(long deadlineNanos) {
    for (Tenant t : tenants.asMap().values()) {
      if (System.nanoTime() - deadlineNanos > 0) {
        return;
      }
      long b = t.balance.getAndSet(0);
      if (b == 0) {
        continue;
      }
      try {
        long now = fleetClockMicros == null ? -1 : fleetClockMicros.getAsLong();
        Objects.requireNonNull(script).call(commands(), t.key, t.quota, -b, 0, now);
      } catch (RuntimeException e) {
        t.balance.addAndGet(b);
        return;
      }
    }
  }

  private void markUp() {
    if (!up) {
      up = true;
      transitions.increment();
      log.info(
          "Redis at {} reachable: replica {} shares tenant quotas again", uri.toURI(), replicaId);
    }
  }

  private void markDown(RuntimeException e) {
    nextProbeNanos = workerNanos.getAsLong() + retryIntervalNanos;
    if (up) {
      up = false;
      transitions.increment();
      log.warn(
          "Redis at {} unreachable ({}): replica {} admits 1/{} of each tenant quota",
          uri.toURI(),
          e.toString(),
          replicaId,
          expectedReplicas);
    }
  }

  // ---------------------------------------------------------------- state

  /** True while the last Redis call succeeded. */
  public boolean redisUp() {
    return up;
  }

  /** Up/down transitions so far. */
  public long transitions() {
    return transitions.sum();
  }

  /**
   * Requests admitted by the local share: while Redis was down, or while Redis was up and the
   * tenant's lease was late (those charged to the fleet by the next lease).
   */
  public long fallbackAdmissions() {
    return fallbackAdmissions.sum();
  }

  /** Leases that reached Redis. */
  public long leases() {
    return leases.sum();
  }

  /** Lease requests dropped because the queue was full. */
  public long droppedLeaseRequests() {
    return dropped.sum();
  }

  /** This replica's balance of {@code tenant} (negative while in debt to the fleet). */
  public long localBalance(String tenant) {
    Tenant t = tenants.getIfPresent(tenant);
    return t == null ? 0 : t.balance.get();
  }

  /** Local state: {@code availableTokens} is this replica's balance, not the fleet's. */
  @Override
  public List<TenantSnapshot> snapshot(int maxTenants, long nowNanos) {
    List<TenantSnapshot> out = new ArrayList<>(Math.min(maxTenants, 64));
    for (Tenant t : tenants.asMap().values()) {
      if (out.size() >= maxTenants) {
        break;
      }
      long available = up ? t.balance.get() : t.fallback.available(nowNanos);
      out.add(new TenantSnapshot(t.name, available, t.quota.capacityTokens(), t.rejected.sum()));
    }
    return out;
  }

  /**
   * Stops the worker (waits at most one second), gives each tenant's balance back to the fleet
   * bucket (unspent allowance returned, debt charged; one script call per tenant, at most one
   * second in all, skipped while Redis is down), and closes the Redis connection and client.
   * Admissions after close come from the local share and never reach Redis.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    boolean wasUp = up;
    up = false; // from here on, admissions come from the local share
    Thread w = worker;
    if (w != null) {
      w.interrupt();
      try {
        w.join(1000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (wasUp && (w == null || !w.isAlive())) {
      settleAll(System.nanoTime() + CLOSE_SETTLE_NANOS);
    }
    StatefulRedisConnection<String, String> c = connection;
    if (c != null) {
      c.close();
    }
    link.close();
  }

  @Override
  public String toString() {
    return "RedisTenantLimiter[" + uri.toURI() + ", prefix=" + keyPrefix + ", up=" + up + "]";
  }

  /** Builder; setters validate at once. */
  public static final class Builder extends RedisPartBuilder<Builder> {
    private FleetQuota defaultQuota = FleetQuota.perMinute(1_000_000);
    private final Map<String, FleetQuota> overrides = new HashMap<>();
    private int expectedReplicas = 1;
    private @Nullable Long chunkTokens;
    private long maxTenants = 100_000;
    private Duration expireAfterIdle = Duration.ofMinutes(10);
    private int maxPendingLeases = 4096;
    private Duration leaseWait = Duration.ofMillis(100);
    private @Nullable LongSupplier fleetClockMicros;
    private LongSupplier workerNanos = System::nanoTime;
    private boolean manualWorker;

    private Builder(String uri) {
      super(uri);
    }

    @Override
    Builder self() {
      return this;
    }

    public Builder defaultQuota(FleetQuota quota) {
      this.defaultQuota = Objects.requireNonNull(quota, "defaultQuota");
      return this;
    }

    public Builder quota(String tenant, FleetQuota quota) {
      Objects.requireNonNull(tenant, "tenant");
      if (tenant.isBlank()) {
        throw new IllegalArgumentException("tenant must not be blank");
      }
      overrides.put(tenant, Objects.requireNonNull(quota, "quota"));
      return this;
    }

    /**
     * Replicas sharing the quotas, {@code [1, 1024]}: while Redis is unreachable each replica
     * admits {@code 1/expectedReplicas} of each quota. Default 1 (a replica alone admits the whole
     * quota).
     */
    public Builder expectedReplicas(int replicas) {
      if (replicas < 1 || replicas > 1024) {
        throw new IllegalArgumentException(
            "expectedReplicas must be in [1, 1024], was " + replicas);
      }
      this.expectedReplicas = replicas;
      return this;
    }

    /**
     * Tokens per lease, {@code [1, 2^50]} (capped at each quota's capacity). Default: 100 ms of the
     * quota's refill, within [1, capacity / 4]. Larger chunks mean fewer Redis calls and a larger
     * bound on over-admission (one chunk of credit per replica).
     */
    public Builder chunkTokens(long tokens) {
      if (tokens < 1 || tokens > FleetQuota.MAX_TOKENS) {
        throw new IllegalArgumentException("chunkTokens must be in [1, 2^50], was " + tokens);
      }
      this.chunkTokens = tokens;
      return this;
    }

    /** Most tenants held locally, {@code [1, 100_000_000]}. */
    public Builder maxTenants(long maxTenants) {
      if (maxTenants < 1 || maxTenants > 100_000_000) {
        throw new IllegalArgumentException("maxTenants must be in [1, 1e8], was " + maxTenants);
      }
      this.maxTenants = maxTenants;
      return this;
    }

    /** Idle time after which a tenant's local state is dropped, in [1 s, 1 day]. */
    public Builder expireAfterIdle(Duration idle) {
      Objects.requireNonNull(idle, "expireAfterIdle");
      if (idle.compareTo(Duration.ofSeconds(1)) < 0 || idle.compareTo(Duration.ofDays(1)) > 0) {
        throw new IllegalArgumentException("expireAfterIdle must be in [1 s, 1 day], was " + idle);
      }
      this.expireAfterIdle = idle;
      return this;
    }

    /** Capacity of the lease queue, {@code [1, 1_000_000]} tenants. */
    public Builder maxPendingLeases(int max) {
      if (max < 1 || max > 1_000_000) {
        throw new IllegalArgumentException("maxPendingLeases must be in [1, 1e6], was " + max);
      }
      this.maxPendingLeases = max;
      return this;
    }

    /**
     * How long a tenant waits for an asked lease before a request that finds too little is admitted
     * from the local share instead (Redis slow but not yet timed out), in [1 ms, 10 s]. Default 100
     * ms. Shorter than {@link #commandTimeout}, so a slow Redis never turns into rejections while
     * its command has not yet failed.
     */
    public Builder leaseWait(Duration wait) {
      this.leaseWait =
          Settings.within(
              wait, "leaseWait", Duration.ofMillis(1), Duration.ofSeconds(10), "1 ms, 10 s");
      return this;
    }

    /**
     * The fleet buckets' clock in microseconds, one timeline for every replica (e.g. a wall clock).
     * Default: Redis's own {@code TIME}, which every replica shares without clock sync.
     */
    public Builder fleetClockMicros(LongSupplier micros) {
      this.fleetClockMicros = Objects.requireNonNull(micros, "fleetClockMicros");
      return this;
    }

    /** The worker's clock for probe intervals (tests). */
    Builder workerNanos(LongSupplier nanos) {
      this.workerNanos = Objects.requireNonNull(nanos, "workerNanos");
      return this;
    }

    /** No worker thread: leases run when the test calls {@link #runPending}. */
    Builder manualWorker() {
      this.manualWorker = true;
      return this;
    }

    /** Builds the limiter and starts its worker, which connects to Redis in the background. */
    public RedisTenantLimiter build() {
      return new RedisTenantLimiter(this);
    }
  }
}
