package dev.prefixrouter.radix;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BlockRemoved;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.IndexStats;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteDecision;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two routing threads, one KV-event thread and one membership thread on a real engine with the
 * radix index, for a bounded time. Afterwards: capacities hold, counts are not negative, and once
 * every backend is removed the index is empty and back to its baseline memory.
 */
@Tag("stress")
class IndexStressTest {

  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void routingEventsAndMembershipKeepTheIndexBounded() throws Exception {
    RadixPrefixIndex index =
        RadixPrefixIndex.builder().maxBackends(16).predictionTtl(Duration.ofMillis(5)).build();
    long baseline = index.stats().approximateBytes();
    AtomicLong clock = new AtomicLong();
    RoutingEngine engine =
        RoutingEngine.builder()
            .maxBackends(16)
            .ticker(() -> clock.addAndGet(1_000))
            .hasher(BlockHashers.tokens(16))
            .prefixIndex(index)
            .backend(Backend.of("b0", "m").withCapacityBlocks(500))
            .backend(Backend.of("b1", "m").withCapacityBlocks(300))
            .build();
    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<Thread> threads = new ArrayList<>();
    int[][] docs = new int[32][];
    for (int d = 0; d < docs.length; d++) {
      docs[d] = new int[16 * (4 + d % 12)];
      for (int i = 0; i < docs[d].length; i++) {
        docs[d][i] = i < 64 ? d % 4 : d * 1000 + i; // four shared system prompts
      }
    }
    for (int t = 0; t < 2; t++) {
      int seed = t;
      threads.add(
          new Thread(
              () -> {
                SplittableRandom rnd = new SplittableRandom(seed);
                while (!stop.get()) {
                  int[] doc = docs[rnd.nextInt(docs.length)];
                  RouteDecision d =
                      engine.route(
                          RouteRequest.builder("t", "m")
                              .prompt(Prompt.ofTokens(doc))
                              .maxOutputTokens(8)
                              .build());
                  if (d instanceof Routed r) {
                    r.lease().firstToken();
                    r.lease().complete(Usage.of(doc.length, 8));
                  }
                }
              }));
    }
    threads.add(
        new Thread(
            () -> {
              SplittableRandom rnd = new SplittableRandom(99);
              while (!stop.get()) {
                List<Backend> all = engine.backends().all();
                if (all.isEmpty()) {
                  continue;
                }
                String id = all.get(rnd.nextInt(all.size())).id();
                int[] doc = docs[rnd.nextInt(docs.length)];
                int blocks = doc.length / 16;
                long[] engineHashes = new long[blocks];
                for (int i = 0; i < blocks; i++) {
                  engineHashes[i] = rnd.nextLong();
                }
                engine.applyKvEvents(
                    id, List.of(new BlockStored(engineHashes, null, doc, 16, "GPU")));
                if (rnd.nextBoolean()) {
                  engine.applyKvEvents(id, List.of(BlockRemoved.of(engineHashes[blocks - 1])));
                }
                if (rnd.nextInt(50) == 0) {
                  engine.applyKvEvents(id, List.of(new BlockRemoved(new long[] {42}, null)));
                }
              }
            }));
    threads.add(
        new Thread(
            () -> {
              SplittableRandom rnd = new SplittableRandom(7);
              int next = 2;
              while (!stop.get()) {
                List<Backend> all = engine.backends().all();
                if (all.size() < 6 && rnd.nextBoolean()) {
                  engine
                      .backends()
                      .add(
                          Backend.of("b" + next++, "m").withCapacityBlocks(100 + rnd.nextInt(400)));
                } else if (all.size() > 1) {
                  Backend b = all.get(rnd.nextInt(all.size()));
                  if (rnd.nextBoolean()) {
                    engine.backends().remove(b.id());
                  } else {
                    engine.backends().add(b.withCapacityBlocks(50 + rnd.nextInt(500)));
                  }
                }
                try {
                  Thread.sleep(1);
                } catch (InterruptedException e) {
                  return;
                }
              }
            }));
    threads.forEach(
        th -> {
          th.setUncaughtExceptionHandler((x, ex) -> failure.compareAndSet(null, ex));
          th.start();
        });
    Thread.sleep(2_000); // bounded run time
    stop.set(true);
    for (Thread th : threads) {
      th.join(20_000);
      assertThat(th.isAlive()).isFalse();
    }
    assertThat(failure.get()).isNull();

    // quiescent: every backend within its capacity, counts not negative
    engine.inspect().backends().forEach(b -> assertThat(b.inFlight()).isZero());
    IndexStats stats = index.stats();
    assertThat(stats.predictedBlocks()).isNotNegative();
    assertThat(stats.confirmedBlocks()).isNotNegative();
    long capacitySum = 0;
    for (Backend b : engine.backends().all()) {
      capacitySum += b.capacityBlocks();
    }
    assertThat(stats.predictedBlocks() + stats.confirmedBlocks()).isLessThanOrEqualTo(capacitySum);
    assertThat(stats.nodes()).isLessThanOrEqualTo(capacitySum);
    for (int slot = 0; slot < 16; slot++) {
      assertThat(index.heldBlocks(slot)).isNotNegative();
    }
    java.util.Map<String, Long> held = engine.inspect().index().blocksPerBackend();
    assertThat(held).hasSameSizeAs(engine.backends().all());
    for (Backend b : engine.backends().all()) {
      assertThat(held.get(b.id())).as("held by %s", b.id()).isBetween(0L, b.capacityBlocks());
    }

    for (Backend b : engine.backends().all()) {
      engine.backends().remove(b.id());
    }
    IndexStats empty = index.stats();
    assertThat(empty.nodes()).isZero();
    assertThat(empty.predictedBlocks() + empty.confirmedBlocks()).isZero();
    assertThat(empty.approximateBytes()).isEqualTo(baseline);
  }
}
