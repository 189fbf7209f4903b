package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Routing threads, lease-ending threads and a membership thread hammer one engine for a bounded
 * time; afterwards every count must be back to zero and no decision may have named a backend after
 * its removal returned.
 */
@Tag("stress")
class EngineStressTest {

  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void routeCompleteAddRemoveDrainKeepInvariants() throws Exception {
    Fakes.CountingLimiter limiter = new Fakes.CountingLimiter(Long.MAX_VALUE / 4);
    Fakes.RecordingIndex index = new Fakes.RecordingIndex();
    RoutingEngine engine =
        RoutingEngine.builder()
            .limiter(limiter)
            .maxBackends(8)
            .hasher(new Fakes.SimpleHasher())
            .prefixIndex(
                new Fakes.NoOpIndex() {
                  // checks it is never written for a slot not in use
                  final Set<Integer> live = ConcurrentHashMap.newKeySet();

                  @Override
                  public void addBackend(int slot, Backend backend) {
                    assertThat(live.add(slot)).as("slot %d reused before removal", slot).isTrue();
                  }

                  @Override
                  public void recordRouted(long[] keys, int keyCount, int slot, long nowNanos) {
                    if (!live.contains(slot)) {
                      stale.incrementAndGet();
                    }
                  }

                  @Override
                  public void removeBackend(int slot) {
                    live.remove(slot);
                  }
                })
            .backend(Backend.of("b0", "m"))
            .backend(Backend.of("b1", "m"))
            .build();
    assertThat(index.calls).isEmpty();

    // id -> epoch after its removal returned; a route that started at or after that epoch must not
    // name the id (routes concurrent with the removal may)
    java.util.Map<String, Long> removedAt = new ConcurrentHashMap<>();
    AtomicLong epoch = new AtomicLong();
    Queue<Routed> open = new ConcurrentLinkedQueue<>();
    AtomicBoolean stop = new AtomicBoolean();
    AtomicBoolean routersDone = new AtomicBoolean();
    AtomicLong routed = new AtomicLong();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    CountDownLatch started = new CountDownLatch(4);

    for (int t = 0; t < 2; t++) {
      int seed = t;
      threads.add(
          new Thread(
              () -> {
                SplittableRandom rnd = new SplittableRandom(seed);
                started.countDown();
                while (!stop.get()) {
                  RouteRequest r =
                      RouteRequest.builder("t" + rnd.nextInt(3), "m")
                          .prompt(Prompt.ofTokens(Fakes.tokens(16 + rnd.nextInt(64), 0)))
                          .maxOutputTokens(16)
                          .build();
                  long startEpoch = epoch.get();
                  RouteDecision d = engine.route(r);
                  if (d instanceof Routed x) {
                    Long removed = removedAt.get(x.backendId());
                    if (removed != null && removed <= startEpoch) {
                      failure.compareAndSet(null, new AssertionError("routed to removed " + x));
                    }
                    routed.incrementAndGet();
                    open.add(x);
                  }
                }
              }));
    }
    threads.add(
        new Thread(
            () -> {
              SplittableRandom rnd = new SplittableRandom(7);
              started.countDown();
              // runs until the routing threads are done and every lease they opened has ended
              while (!routersDone.get() || !open.isEmpty()) {
                Routed x = open.poll();
                if (x == null) {
                  Thread.onSpinWait();
                  continue;
                }
                switch (rnd.nextInt(4)) {
                  case 0 -> x.lease().complete(Usage.of(x.promptTokens(), 5));
                  case 1 -> {
                    x.lease().firstToken();
                    x.lease().complete(Usage.of(x.promptTokens(), 5));
                  }
                  case 2 -> {
                    x.lease().fail(Failure.of(Failure.Kind.CONNECT));
                    if (x.lease().failover() instanceof Routed y) {
                      open.add(y);
                    }
                  }
                  default -> {
                    x.lease().firstToken();
                    x.lease().fail(Failure.of(Failure.Kind.CANCELLED));
                  }
                }
                x.lease().complete(Usage.of(1, 1)); // repeated end: ignored
              }
            }));
    threads.add(
        new Thread(
            () -> {
              SplittableRandom rnd = new SplittableRandom(11);
              int next = 2;
              long lastTotal = 0;
              started.countDown();
              while (!stop.get()) {
                // the routed total is a counter: removals fold their backends' counts in, never
                // losing or double-counting them, so it never goes down
                long total = engine.inspect().routed();
                if (total < lastTotal) {
                  failure.compareAndSet(
                      null, new AssertionError("routed total fell " + lastTotal + " -> " + total));
                }
                lastTotal = total;
                List<Backend> all = engine.backends().all();
                int action = rnd.nextInt(4);
                if (action == 0 && all.size() < 6) {
                  engine.backends().add(Backend.of("b" + next++, "m"));
                } else if (action == 1 && all.size() > 1) {
                  String id = all.get(rnd.nextInt(all.size())).id();
                  engine.backends().remove(id);
                  removedAt.put(id, epoch.incrementAndGet()); // ids are never re-added
                } else if (action == 2 && !all.isEmpty()) {
                  String id = all.get(rnd.nextInt(all.size())).id();
                  try {
                    engine.backends().drain(id);
                    Thread.yield();
                    engine.backends().undrain(id);
                  } catch (java.util.NoSuchElementException raced) {
                    // removed concurrently: fine
                  }
                } else if (!all.isEmpty()) {
                  engine
                      .backends()
                      .reportLoad(all.get(0).id(), new LoadReport(1, 2, 0.3, Duration.ZERO));
                }
                Thread.yield();
              }
            }));
    Thread.UncaughtExceptionHandler handler = (th, ex) -> failure.compareAndSet(null, ex);
    threads.forEach(
        th -> {
          th.setUncaughtExceptionHandler(handler);
          th.start();
        });
    started.await();
    Thread.sleep(2_000); // bounded run time, not a wait for state
    stop.set(true);
    for (Thread th : threads.subList(0, 2)) { // the routing threads first
      th.join(20_000);
      assertThat(th.isAlive()).isFalse();
    }
    routersDone.set(true);
    for (Thread th : threads) {
      th.join(20_000);
      assertThat(th.isAlive()).isFalse();
    }
    assertThat(failure.get()).isNull();
    assertThat(stale.get()).as("index writes for a freed slot").isZero();
    assertThat(routed.get()).isPositive();
    RouterSnapshot s = engine.inspect();
    assertThat(s.routed())
        .as("every first attempt that routed, removed backends included")
        .isEqualTo(routed.get());
    assertThat(s.inFlight()).isZero();
    assertThat(s.backends())
        .allSatisfy(
            b -> {
              assertThat(b.pendingPrefillTokens()).isZero();
              assertThat(b.runningDecodes()).isZero();
              assertThat(b.draining()).isFalse();
            });
  }

  private final AtomicLong stale = new AtomicLong();
}
