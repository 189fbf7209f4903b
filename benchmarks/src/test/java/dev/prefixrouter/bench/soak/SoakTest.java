package dev.prefixrouter.bench.soak;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BackendSnapshot;
import dev.prefixrouter.api.BlockRemoved;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.KvEvent;
import dev.prefixrouter.api.LoadReport;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteDecision;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.TenantSnapshot;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.api.spi.Admission;
import dev.prefixrouter.api.spi.RoutingListener;
import dev.prefixrouter.api.spi.TenantLimiter;
import dev.prefixrouter.radix.BlockHashers;
import dev.prefixrouter.radix.RadixPrefixIndex;
import dev.prefixrouter.scoring.CircuitBreakers;
import dev.prefixrouter.scoring.EstimatedTtftScorer;
import dev.prefixrouter.scoring.Quota;
import dev.prefixrouter.scoring.TenantTokenBuckets;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A bounded soak of the full stack: routing threads (with completions beyond the reservation, so
 * tenants go into debt, failures and failovers), membership churn, KV events and load reports, and
 * a listener that throws RuntimeExceptions and Errors, all at once for {@code -Dsoak.seconds}
 * (default 8) on a clock the routing threads advance. Afterwards: every backend's in-flight,
 * pending-prefill and running-decode count is zero, each tenant was charged exactly what its leases
 * used (every reservation refunded or trued up), and the heap after GC grew by less than 32 MiB
 * between the first third and the end.
 */
@Tag("stress")
class SoakTest {
  private static final int TENANTS = 40;
  private static final long MIB = 1 << 20;

  /** Counts what the engine charges each tenant, net, through to the real buckets. */
  static final class AccountingLimiter implements TenantLimiter {
    final TenantTokenBuckets buckets;
    final Map<String, LongAdder> charged = new ConcurrentHashMap<>();

    AccountingLimiter(TenantTokenBuckets buckets) {
      this.buckets = buckets;
    }

    @Override
    public Admission tryAcquire(String tenant, long tokens, long nowNanos) {
      Admission a = buckets.tryAcquire(tenant, tokens, nowNanos);
      if (a.granted()) {
        charged.computeIfAbsent(tenant, t -> new LongAdder()).add(tokens);
      }
      return a;
    }

    @Override
    public void adjust(String tenant, long deltaTokens, long nowNanos) {
      buckets.adjust(tenant, deltaTokens, nowNanos);
      charged.computeIfAbsent(tenant, t -> new LongAdder()).add(deltaTokens);
    }

    @Override
    public List<TenantSnapshot> snapshot(int maxTenants, long nowNanos) {
      return buckets.snapshot(maxTenants, nowNanos);
    }
  }

  /** What a listener throws that the engine must not swallow (it propagates to the caller). */
  static final class ListenerError extends Error {
    private static final long serialVersionUID = 1L;

    ListenerError() {
      super("listener error", null, false, false);
    }
  }

  /**
   * Throws a RuntimeException from every seventh callback (logged and ignored by the engine) and an
   * Error from every 101st (propagated to the caller after the engine settled its state).
   */
  static final class ThrowingListener implements RoutingListener {
    final AtomicLong calls = new AtomicLong();
    final LongAdder errors = new LongAdder();

    private void maybeThrow() {
      long n = calls.incrementAndGet();
      if (n % 101 == 0) {
        errors.increment();
        throw new ListenerError();
      }
      if (n % 7 == 0) {
        throw new IllegalStateException("listener failure");
      }
    }

    @Override
    public void onRouted(Routed routed) {
      maybeThrow();
    }

    @Override
    public void onCompleted(Routed routed, Usage usage, long durationNanos) {
      maybeThrow();
    }

    @Override
    public void onFailed(Routed routed, Failure failure, boolean beforeFirstToken) {
      maybeThrow();
    }

    @Override
    public void onFirstToken(Routed routed, long ttftNanos) {
      maybeThrow();
    }

    @Override
    public void onBackendRemoved(Backend backend) {
      if (calls.incrementAndGet() % 7 == 0) { // the churn thread sees RuntimeExceptions only
        throw new IllegalStateException("listener failure");
      }
    }
  }

  @Test
  @Timeout(value = 10, unit = TimeUnit.MINUTES)
  void everythingAtOnceEndsAtZero() throws Exception {
    long seconds = Long.getLong("soak.seconds", 8);
    AtomicLong clock = new AtomicLong(1);
    AccountingLimiter limiter =
        new AccountingLimiter(
            TenantTokenBuckets.builder()
                .defaultQuota(Quota.perSecond(20_000))
                .maxTenants(TENANTS * 2)
                .build());
    ThrowingListener listener = new ThrowingListener();
    RoutingEngine engine =
        RoutingEngine.builder()
            .ticker(clock::get)
            .maxBackends(16)
            .hasher(BlockHashers.tokens(16))
            .prefixIndex(
                RadixPrefixIndex.builder().maxBackends(16).defaultCapacityBlocks(4_096).build())
            .scorer(EstimatedTtftScorer.builder().sessions(Duration.ofMinutes(1), 1_000).build())
            .limiter(limiter)
            .health(CircuitBreakers.builder().maxBackends(16).build())
            .listener(listener)
            .backend(Backend.of("b0", "m"))
            .backend(Backend.of("b1", "m"))
            .build();

    Map<String, LongAdder> used = new ConcurrentHashMap<>();
    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    LongAdder routed = new LongAdder();
    LongAdder rejected = new LongAdder();
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 2; t++) {
      int seed = t;
      threads.add(
          thread(failure, () -> routeLoop(engine, clock, used, stop, seed, routed, rejected)));
    }
    threads.add(thread(failure, () -> churnLoop(engine, stop)));
    threads.add(thread(failure, () -> eventLoop(engine, stop)));
    threads.forEach(Thread::start);

    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    long checkpoint = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds) / 3;
    while (System.nanoTime() < checkpoint && failure.get() == null) {
      Thread.onSpinWait();
    }
    long heapAtThird = heapAfterGc();
    while (System.nanoTime() < end && failure.get() == null) {
      Thread.onSpinWait();
    }
    stop.set(true);
    for (Thread t : threads) {
      t.join();
    }
    if (failure.get() != null) {
      throw new AssertionError("a soak thread failed", failure.get());
    }
    long heapAtEnd = heapAfterGc();

    assertThat(routed.sum()).as("routed").isPositive();
    assertThat(rejected.sum()).as("rate limited at least once").isPositive();
    assertThat(listener.calls.get()).isPositive();
    assertThat(listener.errors.sum()).as("listener Errors thrown").isPositive();
    for (BackendSnapshot b : engine.inspect().backends()) {
      assertThat(b.inFlight()).as("in flight on %s", b.id()).isZero();
      assertThat(b.pendingPrefillTokens()).as("pending prefill on %s", b.id()).isZero();
      assertThat(b.runningDecodes()).as("running decodes on %s", b.id()).isZero();
    }
    for (int i = 0; i < TENANTS; i++) {
      String tenant = "t" + i;
      long charged = sum(limiter.charged.get(tenant));
      assertThat(charged)
          .as("net charge of %s equals its usage", tenant)
          .isEqualTo(sum(used.get(tenant)));
    }
    assertThat(heapAtEnd - heapAtThird)
        .as("heap growth after GC, bytes (%d → %d)", heapAtThird, heapAtEnd)
        .isLessThan(32 * MIB);
  }

  private static long sum(LongAdder a) {
    return a == null ? 0 : a.sum();
  }

  private static Thread thread(AtomicReference<Throwable> failure, Runnable body) {
    return new Thread(
        () -> {
          try {
            body.run();
          } catch (Throwable e) {
            failure.compareAndSet(null, e);
          }
        });
  }

  private static void routeLoop(
      RoutingEngine engine,
      AtomicLong clock,
      Map<String, LongAdder> used,
      AtomicBoolean stop,
      int seed,
      LongAdder routed,
      LongAdder rejected) {
    SplittableRandom rnd = new SplittableRandom(seed);
    int[] system = new int[512];
    for (int i = 0; i < system.length; i++) {
      system[i] = rnd.nextInt(50_000);
    }
    while (!stop.get()) {
      clock.addAndGet(rnd.nextLong(1_000_000)); // up to 1 ms per request
      String tenant = "t" + rnd.nextInt(TENANTS);
      int len = 32 + rnd.nextInt(1024);
      int[] ids = new int[len];
      int shared = Math.min(len, rnd.nextInt(system.length));
      System.arraycopy(system, 0, ids, 0, shared);
      for (int i = shared; i < len; i++) {
        ids[i] = rnd.nextInt(50_000);
      }
      RouteRequest.Builder b =
          RouteRequest.builder(tenant, "m")
              .prompt(Prompt.ofTokens(ids))
              .maxOutputTokens(rnd.nextInt(256));
      if (rnd.nextInt(4) == 0) {
        b.session("s" + rnd.nextInt(200));
      }
      if (rnd.nextInt(8) == 0) {
        b.cacheSalt("salt" + rnd.nextInt(4));
      }
      RouteDecision d;
      try {
        d = engine.route(b.build());
      } catch (ListenerError e) { // from onRouted: the lease was abandoned and refunded
        continue;
      }
      if (!(d instanceof Routed r)) {
        rejected.increment();
        continue;
      }
      routed.increment();
      LongAdder tenantUsed = used.computeIfAbsent(tenant, t -> new LongAdder());
      // end this lease, and any failover leases, in one of several ways
      while (r != null) {
        Routed next = null;
        Routed x = r;
        switch (rnd.nextInt(6)) {
          case 0, 1 -> {
            settled(() -> x.lease().firstToken());
            Usage u = Usage.of(x.promptTokens(), rnd.nextInt(300));
            settled(() -> x.lease().complete(u));
            tenantUsed.add(u.totalTokens());
          }
          case 2 -> { // far more than reserved: debt
            settled(() -> x.lease().firstToken());
            Usage u = Usage.of(x.promptTokens(), 5_000 + rnd.nextInt(20_000));
            settled(() -> x.lease().complete(u));
            tenantUsed.add(u.totalTokens());
          }
          case 3 -> { // failed before the first token: refunded, maybe failed over
            settled(() -> x.lease().fail(Failure.of(Failure.Kind.CONNECT)));
            try {
              if (x.lease().failover() instanceof Routed f) {
                next = f;
              }
            } catch (ListenerError e) { // the new lease was abandoned and refunded
              next = null;
            }
          }
          case 4 -> { // failed after the first token: the prompt is charged
            settled(() -> x.lease().firstToken());
            settled(() -> x.lease().fail(Failure.of(Failure.Kind.ENGINE_ERROR)));
            tenantUsed.add(x.promptTokens());
          }
          default -> settled(() -> x.lease().fail(Failure.of(Failure.Kind.CANCELLED)));
        }
        settled(() -> x.lease().complete(Usage.of(1, 1))); // a repeated end: ignored
        r = next;
      }
    }
  }

  /** Runs a lease call; a listener's Error arrives after the engine settled the call's effect. */
  private static void settled(Runnable leaseCall) {
    try {
      leaseCall.run();
    } catch (ListenerError e) {
      // the call took effect; only the listener failed
    }
  }

  private static void churnLoop(RoutingEngine engine, AtomicBoolean stop) {
    SplittableRandom rnd = new SplittableRandom(7);
    while (!stop.get()) {
      String id = "c" + rnd.nextInt(6);
      switch (rnd.nextInt(4)) {
        case 0 -> {
          try {
            engine
                .backends()
                .add(Backend.of(id, "m").withCapacityBlocks(1_000 + rnd.nextInt(4_000)));
          } catch (IllegalStateException full) {
            // at maxBackends: documented
          }
        }
        case 1 -> engine.backends().remove(id);
        case 2 -> {
          if (engine.backends().get(id).isPresent()) {
            try {
              engine.backends().drain(id);
            } catch (java.util.NoSuchElementException removedMeanwhile) {
              // the route threads do not remove; this thread is the only remover
              throw removedMeanwhile;
            }
          }
        }
        default -> {
          if (engine.backends().get(id).isPresent()) {
            engine.backends().undrain(id);
          }
        }
      }
      Thread.yield();
    }
    for (int i = 0; i < 6; i++) {
      engine.backends().remove("c" + i);
    }
  }

  private static void eventLoop(RoutingEngine engine, AtomicBoolean stop) {
    SplittableRandom rnd = new SplittableRandom(11);
    String[] ids = {"b0", "b1", "c0", "c1", "c2", "c3", "c4", "c5"};
    while (!stop.get()) {
      String id = ids[rnd.nextInt(ids.length)];
      List<KvEvent> batch = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        long[] hashes = rnd.longs(1 + rnd.nextInt(8)).toArray();
        if (rnd.nextBoolean()) {
          batch.add(new BlockRemoved(hashes, null));
        } else {
          batch.add(new BlockStored(hashes, null, new int[hashes.length * 16], 16, null));
        }
      }
      engine.applyKvEvents(id, batch);
      engine
          .backends()
          .reportLoad(id, LoadReport.of(rnd.nextInt(8), rnd.nextInt(8), rnd.nextDouble()));
      if (rnd.nextInt(64) == 0) {
        engine.inspect();
      }
      Thread.yield();
    }
  }

  private static long heapAfterGc() {
    for (int i = 0; i < 3; i++) {
      System.gc();
    }
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }
}
