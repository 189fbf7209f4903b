package dev.prefixrouter.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.spi.Admission;
import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Against the shared Redis at 127.0.0.1:6379, with simulated time and manual workers. */
class RedisTenantLimiterTest {
  private static final long MS = 1_000_000L;
  private static final long SECOND = 1_000 * MS;

  private final SharedRedis redis = new SharedRedis();
  private final AtomicLong clock = new AtomicLong(1_000 * SECOND);
  private final List<RedisTenantLimiter> limiters = new ArrayList<>();

  @AfterEach
  void tearDown() {
    limiters.forEach(RedisTenantLimiter::close);
    redis.close();
  }

  private RedisTenantLimiter limiter(String uri, FleetQuota quota, int replicas) {
    RedisTenantLimiter l =
        RedisTenantLimiter.builder(uri)
            .keyPrefix(redis.prefix)
            .defaultQuota(quota)
            .expectedReplicas(replicas)
            .fleetClockMicros(() -> clock.get() / 1_000)
            .workerNanos(clock::get)
            .manualWorker()
            .commandTimeout(Duration.ofSeconds(2)) // the default 250 ms: down on one host stall
            .build();
    limiters.add(l);
    return l;
  }

  /**
   * Redis slow (the worker has not answered the asked lease): denied while the lease is younger
   * than leaseWait (100 ms), then admitted from the local share (1/2 of the quota here, less what
   * this replica spent), and back to fleet leases once the lease arrives. The fleet bucket holds
   * 10,000 tokens (other replicas spent the rest), so this replica's credit is small.
   */
  @Test
  void anOverdueLeaseAdmitsFromTheLocalShareInsteadOfDenying() {
    RedisTenantLimiter l = limiter(SharedRedis.URI, FleetQuota.perMinute(60_000), 2);
    l.runPending();
    assertThat(l.redisUp()).isTrue();
    long t0 = fleetHolds("slow", 10_000);
    assertThat(l.tryAcquire("slow", 100, t0).granted()).isTrue();
    l.runPending(); // fleet 9,700, credit 4,850, holds 200
    assertThat(l.tryAcquire("slow", 5_100, t0).granted()).as("beyond the credit: asks").isFalse();
    assertThat(l.tryAcquire("slow", 5_100, t0 + 99 * MS).granted()).isFalse();
    assertThat(l.tryAcquire("slow", 5_100, t0 + 101 * MS).granted()).isTrue(); // overdue
    assertThat(l.fallbackAdmissions()).isEqualTo(1);
    Admission a = l.tryAcquire("slow", 24_900, t0 + 102 * MS);
    assertThat(a.granted())
        .as("the local share (30,000) less what this replica spent (5,200) bounds it")
        .isFalse();
    assertThat(a.message()).contains("local share (1/2)").contains("fleet lease is late");
    l.runPending(); // the lease arrives
    assertThat(l.localBalance("slow")).isPositive();
    assertThat(l.tryAcquire("slow", 500, t0 + 103 * MS).granted()).isTrue();
    assertThat(l.fallbackAdmissions()).isEqualTo(1);
  }

  /**
   * What the local share admits while a lease is late is charged to the fleet by the next lease (as
   * debt), and a refund of it is credited back to the leased balance. It used to be admitted
   * uncharged: tokens the fleet never saw.
   */
  @Test
  void anOverdueLeasesLocalAdmissionIsChargedToTheFleet() {
    RedisTenantLimiter l = limiter(SharedRedis.URI, FleetQuota.perMinute(60_000), 2);
    l.runPending();
    long t0 = fleetHolds("r", 10_000);
    assertThat(l.tryAcquire("r", 100, t0).granted()).isTrue();
    l.runPending(); // fleet 9,700, credit 4,850, holds 200
    assertThat(l.tryAcquire("r", 5_100, t0).granted()).isFalse(); // beyond the credit: asks
    assertThat(l.tryAcquire("r", 5_100, t0 + 101 * MS).granted()).isTrue(); // overdue
    assertThat(l.fallbackAdmissions()).isEqualTo(1);
    l.runPending(); // the lease arrives and charges the 5,100
    long leased = l.localBalance("r");
    l.adjust("r", -300, t0 + 102 * MS); // the locally admitted request used 4,800 of its 5,100
    assertThat(l.localBalance("r")).isEqualTo(leased + 300);
    l.close(); // gives the balance back
    assertThat(fleetTokens(redis.prefix + "quota:r")).isEqualTo(10_000 - 100 - 4_800);
  }

  /**
   * Two replicas at 60,000 tokens a minute; once a minute replica A's lease is more than leaseWait
   * late while it wants more. Over three minutes the fleet admits at most its burst plus two
   * minutes of refill plus a few chunks: the late lease's local admissions are charged to the fleet
   * and the local share is drawn down by what the replica spent (it admitted ~360,000 before).
   */
  @Test
  void lateLeasesDoNotLetTheFleetExceedItsQuota() {
    FleetQuota quota = FleetQuota.perMinute(60_000);
    RedisTenantLimiter a = limiter(SharedRedis.URI, quota, 2);
    RedisTenantLimiter b = limiter(SharedRedis.URI, quota, 2);
    a.runPending();
    b.runPending();
    long admitted = 0;
    for (int minute = 0; minute < 3; minute++) {
      long t0 = clock.get();
      while (a.tryAcquire("t", 100, t0).granted()) { // spends what it holds; the denial asks
        admitted += 100;
      }
      long late = t0 + 101 * MS; // the lease is late
      while (a.tryAcquire("t", 1_000, late).granted()) {
        admitted += 1_000;
      }
      a.runPending(); // the lease arrives
      while (a.tryAcquire("t", 100, late).granted()) {
        admitted += 100;
      }
      a.runPending();
      for (int k = 0; k < 2_000; k++) {
        if (b.tryAcquire("t", 100, late).granted()) {
          admitted += 100;
        } else {
          b.runPending();
        }
      }
      clock.addAndGet(60 * SECOND);
    }
    long chunk = a.chunkOf(quota);
    assertThat(admitted).isLessThanOrEqualTo(60_000 + 120_000 + 2 * 2 * chunk);
  }

  /**
   * Four replicas, each trying far more than the quota every 20 ms of simulated time, with true-ups
   * of -30..+70 tokens (20 on average) on every 100-token reservation; leases run after each step.
   * The tokens the fleet actually charged (reservations plus true-ups) over the steady window [20
   * s, 80 s) are within 5 % of the refill rate times 60 s, and over the whole run never above burst
   * plus refill plus one chunk of credit and two of holdings per replica.
   */
  @Test
  void fourReplicasHoldTheTenantWithinFivePercentOfItsRate() {
    FleetQuota quota = new FleetQuota(20_000, 600_000, Duration.ofMinutes(1)); // 10,000 tokens/s
    List<RedisTenantLimiter> replicas = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      replicas.add(limiter(SharedRedis.URI, quota, 4));
    }
    replicas.forEach(RedisTenantLimiter::runPending);
    assertThat(replicas).allMatch(RedisTenantLimiter::redisUp);

    SplittableRandom random = new SplittableRandom(7);
    long start = clock.get();
    long charged = 0;
    long chargedInWindow = 0;
    long denied = 0;
    for (long t = 0; t < 80 * SECOND; t += 20 * MS) {
      clock.set(start + t);
      for (RedisTenantLimiter r : replicas) {
        for (int i = 0; i < 20; i++) {
          Admission a = r.tryAcquire("acme", 100, clock.get());
          if (!a.granted()) {
            assertThat(a.outcome()).isEqualTo(Admission.Outcome.DENIED);
            assertThat(a.retryAfterNanos()).isPositive();
            denied++;
            break;
          }
          long trueUp = random.nextLong(-30, 71);
          r.adjust("acme", trueUp, clock.get());
          charged += 100 + trueUp;
          if (t >= 20 * SECOND) {
            chargedInWindow += 100 + trueUp;
          }
        }
      }
      replicas.forEach(RedisTenantLimiter::runPending);
    }
    long ratePerWindow = 600_000; // 60 s at 10,000 tokens/s
    double ratio = (double) chargedInWindow / ratePerWindow;
    System.out.printf("fleet quota: charged/rate over [20 s, 80 s) = %.4f%n", ratio);
    assertThat(ratio).isBetween(0.95, 1.05);
    long chunk = replicas.get(0).chunkOf(quota);
    assertThat(chunk).isEqualTo(1_000);
    assertThat(charged).isLessThanOrEqualTo(20_000 + 800_000 + 4 * 3 * chunk);
    assertThat(denied).isGreaterThan(1_000);
    assertThat(replicas).allMatch(r -> r.droppedLeaseRequests() == 0);
    // leases, not requests, reach Redis: far fewer calls than admissions
    long leases = replicas.stream().mapToLong(RedisTenantLimiter::leases).sum();
    assertThat(leases).isLessThan(charged / 100 / 2);
  }

  /**
   * A request a few chunks large is admitted while the fleet bucket holds its tokens (chunk 1,666
   * at 1,000,000 tokens a minute): it used to be denied until a lease happened to hold it, and the
   * lease after it returned the room again, so a steady stream of such requests alternated.
   */
  @Test
  void aRequestSeveralChunksLargeIsAdmittedWhileTheFleetHoldsItsTokens() {
    FleetQuota quota = FleetQuota.perMinute(1_000_000);
    RedisTenantLimiter l = limiter(SharedRedis.URI, quota, 1);
    l.runPending();
    assertThat(l.chunkOf(quota)).isEqualTo(1_666);
    String key = redis.prefix + "quota:t";
    for (int i = 0; i < 5; i++) {
      long now = clock.addAndGet(MS);
      assertThat(l.tryAcquire("t", 34_000, now).granted()).as("request %d", i).isTrue();
      l.adjust("t", -30_000, now); // it used 4,000 of its 34,000
      l.runPending();
    }
    l.close(); // settles: the fleet was charged what was used, no more
    assertThat(fleetTokens(key)).isBetween(1_000_000L - 5 * 4_000, 1_000_000L - 5 * 4_000 + 100);
  }

  /**
   * Fifty requests of 5,000 tokens before any lease answers, the fleet bucket full: all admitted.
   */
  @Test
  void manyConcurrentRequestsSeveralChunksLargeAreAdmittedFromAFullFleet() throws Exception {
    RedisTenantLimiter l = limiter(SharedRedis.URI, FleetQuota.perMinute(1_000_000), 1);
    l.runPending();
    long now = clock.get();
    java.util.concurrent.atomic.AtomicInteger granted =
        new java.util.concurrent.atomic.AtomicInteger();
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      threads.add(
          new Thread(
              () -> {
                if (l.tryAcquire("burst", 5_000, now).granted()) {
                  granted.incrementAndGet();
                }
              }));
    }
    threads.forEach(Thread::start);
    for (Thread th : threads) {
      th.join();
    }
    assertThat(granted.get()).isEqualTo(50);
    l.runPending(); // one lease charges them all
    assertThat(l.leases()).isEqualTo(1);
    assertThat(fleetTokens(redis.prefix + "quota:burst"))
        .isEqualTo(1_000_000 - 250_000 - 2 * 1_666);
  }

  /**
   * Requests larger than the chunk at 100,000 tokens a minute (chunk 166): one lease each, not
   * three (a denial, a lease for its size, a retry).
   */
  @Test
  void requestsLargerThanTheChunkTakeOneLeaseEach() {
    RedisTenantLimiter l = limiter(SharedRedis.URI, FleetQuota.perMinute(100_000), 1);
    l.runPending();
    long leases0 = l.leases();
    int denied = 0;
    for (int i = 0; i < 40; i++) {
      long now = clock.addAndGet(500 * MS);
      if (!l.tryAcquire("seq", 4_096, now).granted()) {
        denied++;
      }
      l.runPending();
      l.adjust("seq", -3_500, now);
      l.runPending();
    }
    assertThat(denied).isZero();
    assertThat(l.leases() - leases0).isLessThanOrEqualTo(80);
  }

  @Test
  void debtAndRefundsSettleWithTheFleetBucket() {
    // chunk 2,500 (a quarter of the burst); the clock stands still, so nothing refills
    FleetQuota quota = new FleetQuota(10_000, 100_000, Duration.ofSeconds(1));
    RedisTenantLimiter r = limiter(SharedRedis.URI, quota, 1);
    r.runPending();
    String key = redis.prefix + "quota:t";

    assertThat(r.tryAcquire("t", 100, clock.get()).granted()).isTrue(); // on credit
    assertThat(r.localBalance("t")).isEqualTo(-100);
    r.runPending(); // charges the 100 and leases two chunks (2 x 2,500)
    assertThat(r.localBalance("t")).isEqualTo(5_000);
    assertThat(fleetTokens(key)).isEqualTo(10_000 - 100 - 5_000);

    r.adjust("t", 6_000, clock.get()); // extra charge beyond what is held: debt of 1,000
    r.runPending(); // charges the debt (fleet 3,900) and leases 3,900 of the 5,000 wanted
    assertThat(fleetTokens(key)).isZero();
    assertThat(r.localBalance("t")).isEqualTo(3_900);

    r.adjust("t", -8_000, clock.get()); // refund: 11,900 held, above four chunks
    r.runPending(); // returns all above two chunks: 6,900
    assertThat(r.localBalance("t")).isEqualTo(5_000);
    assertThat(fleetTokens(key)).isEqualTo(6_900);
    assertThat(redis.commands().pttl(key)).isPositive();
  }

  @Test
  void closeGivesUnspentAllowanceBackAndChargesDebt() {
    FleetQuota quota = new FleetQuota(10_000, 100_000, Duration.ofSeconds(1)); // chunk 2,500
    RedisTenantLimiter a = limiter(SharedRedis.URI, quota, 2);
    RedisTenantLimiter b = limiter(SharedRedis.URI, quota, 2);
    a.runPending();
    b.runPending();
    String key = redis.prefix + "quota:c";
    assertThat(a.tryAcquire("c", 100, clock.get()).granted()).isTrue();
    a.runPending(); // a holds 5,000 after charging its 100 of credit
    assertThat(b.tryAcquire("c", 300, clock.get()).granted()).isTrue();
    b.runPending(); // b holds 4,600 (all that was left) after charging its 300
    assertThat(fleetTokens(key)).isZero();
    b.adjust("c", 5_000, clock.get()); // b ends 400 in debt, never settled before close

    a.close();
    assertThat(fleetTokens(key)).isEqualTo(5_000);
    b.close();
    assertThat(fleetTokens(key)).isEqualTo(5_000 - 400);
    // after close: the local share, no Redis call, no exception
    assertThat(a.tryAcquire("c", 100, clock.get()).granted()).isTrue();
    assertThat(a.fallbackAdmissions()).isEqualTo(1);
  }

  @Test
  void aStarvedReplicaDeniesWithTheTimeToRefill() {
    FleetQuota quota = new FleetQuota(1_000, 1_000, Duration.ofSeconds(10)); // 100 tokens/s
    RedisTenantLimiter r = limiter(SharedRedis.URI, quota, 1);
    r.runPending();
    long admitted = 0;
    for (int i = 0; i < 40; i++) {
      if (r.tryAcquire("s", 100, clock.get()).granted()) {
        admitted += 100;
      }
      r.runPending();
    }
    assertThat(admitted).isEqualTo(1_000); // the burst, nothing more: no time passed
    Admission a = r.tryAcquire("s", 100, clock.get());
    assertThat(a.outcome()).isEqualTo(Admission.Outcome.DENIED);
    assertThat(a.retryAfterNanos()).isBetween(MS, 10 * SECOND);
    assertThat(a.message()).contains("tenant 's' is over its fleet token quota (needs 100");
  }

  /**
   * After an outage the tenant leases from the fleet again: the lease it asked for before is
   * overdue, so the next request is admitted from the local share and asks for a new lease (it used
   * not to ask, and the tenant stayed on its local share until a true-up happened to ask).
   */
  @Test
  void afterAnOutageATenantLeasesAgainInsteadOfStayingOnItsLocalShare() throws Exception {
    try (PrivateRedisServer server = new PrivateRedisServer()) {
      RedisTenantLimiter l = limiter(server.uri(), FleetQuota.perMinute(60_000), 2);
      l.runPending();
      assertThat(l.redisUp()).isTrue();
      assertThat(l.tryAcquire("t", 30_000, clock.get()).granted()).as("on credit").isTrue();
      assertThat(l.tryAcquire("t", 500, clock.get()).granted()).as("asks for a lease").isFalse();
      server.kill();
      l.runPending(); // the lease fails
      assertThat(l.redisUp()).isFalse();
      server.restart();
      long deadline = System.nanoTime() + 15 * SECOND;
      while (!l.redisUp() && System.nanoTime() - deadline < 0) { // the client reconnects
        clock.addAndGet(5 * SECOND); // past the retry interval
        l.runPending(); // probes
        java.util.concurrent.locks.LockSupport.parkNanos(20 * MS);
      }
      assertThat(l.redisUp()).isTrue();
      long t1 = clock.get();
      assertThat(l.tryAcquire("t", 500, t1).granted())
          .as("the lease asked before the outage is overdue: the local share, and a new lease")
          .isTrue();
      long fallbacks = l.fallbackAdmissions();
      l.runPending();
      long leased = l.localBalance("t");
      assertThat(leased).as("leased").isPositive();
      assertThat(l.tryAcquire("t", leased, t1 + MS).granted()).isTrue();
      assertThat(l.localBalance("t")).isZero();
      assertThat(l.fallbackAdmissions()).as("back on fleet leases").isEqualTo(fallbacks);
    }
  }

  /**
   * A starved tenant whose lease failed in an outage: once Redis is back it is denied as over its
   * fleet quota. The failed lease's mark stayed set, so it looked overdue and the tenant was
   * admitted from its local share, uncharged to the fleet, until its next lease was due.
   */
  @Test
  void aStarvedTenantIsNotAdmittedFromItsLocalShareAfterAnOutage() throws Exception {
    try (PrivateRedisServer server = new PrivateRedisServer()) {
      RedisTenantLimiter l = limiter(server.uri(), FleetQuota.perMinute(1_000), 2);
      l.runPending();
      for (int i = 0; i < 20; i++) { // lease until the fleet has nothing left for the tenant
        l.tryAcquire("t", 400, clock.get());
        l.runPending();
        clock.addAndGet(MS);
      }
      clock.addAndGet(60 * SECOND); // its next lease is due: a denial queues one
      assertThat(l.tryAcquire("t", 400, clock.get()).granted()).isFalse();
      server.kill();
      l.runPending(); // the lease fails
      assertThat(l.redisUp()).isFalse();
      server.restart();
      long deadline = System.nanoTime() + 15 * SECOND;
      while (!l.redisUp() && System.nanoTime() - deadline < 0) {
        clock.addAndGet(100 * MS);
        l.runPending(); // probes
        java.util.concurrent.locks.LockSupport.parkNanos(20 * MS);
      }
      assertThat(l.redisUp()).isTrue();
      long fallbacks = l.fallbackAdmissions();
      long held = l.localBalance("t");
      assertThat(l.tryAcquire("t", Math.max(0, held) + 100, clock.get() + 5 * SECOND).granted())
          .as("over its fleet quota: denied, not admitted from the local share")
          .isFalse();
      assertThat(l.fallbackAdmissions()).isEqualTo(fallbacks);
    }
  }

  /**
   * A return of unspent tokens whose reply times out while Redis still applies it (a paused Redis)
   * is not restored to the local balance: the tokens used to exist twice, returned to the fleet and
   * spendable locally.
   */
  @Test
  void aTimedOutReturnIsNotSpendableTwice() throws Exception {
    try (PrivateRedisServer server = new PrivateRedisServer()) {
      FleetQuota quota = new FleetQuota(100_000, 1, Duration.ofDays(1)); // no refill to speak of
      RedisTenantLimiter l =
          RedisTenantLimiter.builder(server.uri())
              .keyPrefix(redis.prefix)
              .defaultQuota(quota)
              .chunkTokens(1_000)
              .fleetClockMicros(() -> clock.get() / 1_000)
              .workerNanos(clock::get)
              .manualWorker()
              .commandTimeout(Duration.ofMillis(100))
              .build();
      limiters.add(l);
      io.lettuce.core.RedisClient admin = io.lettuce.core.RedisClient.create(server.uri());
      try (var connection = admin.connect()) {
        var c = connection.sync();
        l.runPending();
        long now = clock.get();
        assertThat(l.tryAcquire("t", 50_000, now).granted()).isTrue();
        l.runPending(); // charges the 50,000 and leases two chunks
        l.adjust("t", -45_000, now); // the request used 5,000 of its 50,000: a return is asked
        String key = redis.prefix + "quota:t";
        double before = Double.parseDouble(c.hget(key, "tokens"));
        c.clientPause(400); // Redis stalls longer than the command timeout
        l.runPending(); // the return times out; Redis applies it after the pause
        assertThat(l.redisUp()).isFalse();
        long deadline = System.nanoTime() + 10 * SECOND;
        double fleet = before;
        while (fleet == before && System.nanoTime() - deadline < 0) {
          fleet = Double.parseDouble(c.hget(key, "tokens")); // blocks until the pause ends
        }
        assertThat(fleet).isGreaterThan(before);
        assertThat(l.localBalance("t") + (long) fleet).isEqualTo(100_000 - 5_000);
      } finally {
        admin.shutdown();
      }
    }
  }

  @Test
  void unreachableRedisFallsBackToTheLocalShareWithoutThrowing() throws IOException {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort(); // nothing listens there once closed
    }
    RedisTenantLimiter r =
        limiter(
            "redis://127.0.0.1:" + port, new FleetQuota(4_000, 4_000, Duration.ofSeconds(1)), 4);
    r.runPending();
    assertThat(r.redisUp()).isFalse();
    long admitted = 0;
    Admission last = Admission.GRANTED;
    for (int i = 0; i < 30; i++) {
      last = r.tryAcquire("x", 100, clock.get());
      if (last.granted()) {
        admitted += 100;
      }
    }
    assertThat(admitted).isEqualTo(1_000); // a quarter of the burst
    assertThat(r.fallbackAdmissions()).isEqualTo(10);
    assertThat(last.retryAfterNanos()).isEqualTo(100 * MS); // 100 tokens at 1,000/s
    assertThat(last.message()).contains("local share (1/4)").contains("Redis is unreachable");
    clock.addAndGet(SECOND);
    assertThat(r.tryAcquire("x", 100, clock.get()).granted()).isTrue();
  }

  @Test
  void tooLargeAndBadArguments() {
    RedisTenantLimiter r =
        limiter(SharedRedis.URI, new FleetQuota(500, 500, Duration.ofSeconds(1)), 1);
    Admission a = r.tryAcquire("big", 501, clock.get());
    assertThat(a.outcome()).isEqualTo(Admission.Outcome.TOO_LARGE);
    assertThat(a.message())
        .isEqualTo("request needs 501 tokens but tenant 'big' has a fleet burst of 500");
    assertThatThrownBy(() -> r.tryAcquire("big", -1, 0)).hasMessage("tokens must be >= 0, was -1");
    assertThatThrownBy(() -> RedisTenantLimiter.builder(SharedRedis.URI).expectedReplicas(0))
        .hasMessage("expectedReplicas must be in [1, 1024], was 0");
    assertThatThrownBy(() -> RedisTenantLimiter.builder(SharedRedis.URI).keyPrefix(""))
        .hasMessage("keyPrefix must be 1 to 128 characters, was 0");
    assertThatThrownBy(() -> RedisTenantLimiter.builder(SharedRedis.URI).chunkTokens(0))
        .hasMessage("chunkTokens must be in [1, 2^50], was 0");
  }

  /** Sets tenant's fleet bucket to {@code tokens} now; returns now (the clock stands still). */
  private long fleetHolds(String tenant, long tokens) {
    long now = clock.get();
    redis
        .commands()
        .hset(
            redis.prefix + "quota:" + tenant,
            java.util.Map.of("tokens", Long.toString(tokens), "ts", Long.toString(now / 1_000)));
    return now;
  }

  private long fleetTokens(String key) {
    return (long) Math.floor(Double.parseDouble(redis.commands().hget(key, "tokens")));
  }
}
