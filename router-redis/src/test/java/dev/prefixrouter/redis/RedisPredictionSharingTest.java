package dev.prefixrouter.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Replicas sharing predictions through the shared Redis at 127.0.0.1:6379, one prefix per test. */
class RedisPredictionSharingTest {
  private final SharedRedis redis = new SharedRedis();
  private final List<AutoCloseable> open = new ArrayList<>();

  /** One router replica: its engine, its index and its sharing. */
  private record Replica(
      RoutingEngine engine, KeyRecordingIndex index, RedisPredictionSharing sharing) {
    Routed route(int... tokens) {
      return (Routed)
          engine.route(
              RouteRequest.builder("t", "m")
                  .prompt(Prompt.ofTokens(tokens))
                  .maxOutputTokens(1)
                  .build());
    }
  }

  private Replica replica(String id, boolean onlyNew) {
    RedisPredictionSharing sharing =
        RedisPredictionSharing.builder(SharedRedis.URI)
            .keyPrefix(redis.prefix)
            .replicaId(id)
            .shareOnlyNewBlocks(onlyNew)
            .flushInterval(Duration.ofMillis(2))
            .commandTimeout(Duration.ofSeconds(2)) // the default 250 ms: down on one host stall
            .build();
    open.add(sharing);
    KeyRecordingIndex index = new KeyRecordingIndex();
    RoutingEngine engine =
        RoutingEngine.builder()
            .hasher(new KeyRecordingIndex.TokenHasher())
            .prefixIndex(index)
            .predictionSink(sharing)
            .backend(Backend.of(id.equals("c") ? "other" : "b0", "m"))
            .backend(Backend.of("b1", "m"))
            .build();
    sharing.attach(engine);
    await(sharing::redisUp);
    return new Replica(engine, index, sharing);
  }

  @AfterEach
  void close() throws Exception {
    for (AutoCloseable c : open) {
      c.close();
    }
    redis.close();
  }

  @Test
  void aRouteOnOneReplicaReachesTheOthersIndexAndNotItsOwnTwice() {
    Replica a = replica("a", false);
    Replica b = replica("b", false);
    Routed r = a.route(5, 6, 7);
    int slot = r.backendId().equals("b0") ? 0 : 1;
    String expected =
        KeyRecordingIndex.entry(slot, new long[] {5, 5 * 31 + 6, (5 * 31 + 6) * 31 + 7}, 3);
    await(() -> b.index().recorded.contains(expected));
    assertThat(a.index().recorded).containsExactly(expected); // its own route, no echo
    await(() -> b.sharing().stats().applied() == 1);
    // counted by a's publisher after Redis answered the XADD, which b's reader may see first
    await(() -> a.sharing().stats().published() >= 1);
    assertThat(a.sharing().stats().published()).isEqualTo(1);
    assertThat(b.engine().inspect().routed()).isZero(); // applied, not counted as routed
  }

  @Test
  void aReplicaThatJoinsLateCatchesUpFromTheStreamAndSkipsUnknownBackends() {
    Replica a = replica("a", false);
    for (int i = 0; i < 5; i++) {
      a.route(i, i + 1);
    }
    await(() -> a.sharing().stats().published() == 5);
    Replica c = replica("c", false); // knows b1 but not b0
    int onB1 = (int) a.index().recorded.stream().filter(e -> e.startsWith("1:")).count();
    await(() -> c.sharing().stats().applied() + c.sharing().stats().unknownBackend() == 5);
    assertThat(c.sharing().stats().applied()).isEqualTo(onB1);
    assertThat(c.index().recorded)
        .containsExactlyElementsOf(
            a.index().recorded.stream()
                .filter(e -> e.startsWith("1:"))
                .map(e -> "1" + e.substring(1))
                .toList());
  }

  @Test
  void withKvEventsOnlyRoutesThatPredictNewBlocksAreShared() {
    Replica a = replica("a", true);
    Replica b = replica("b", false);
    a.index().held = 3;
    a.route(1, 2, 3); // all three held already: nothing new to share
    a.route(1, 2, 3, 4); // one new block
    await(() -> b.sharing().stats().applied() == 1);
    assertThat(a.sharing().stats().skippedHeld()).isEqualTo(1);
    assertThat(b.index().recorded)
        .hasSize(1)
        .allMatch(e -> e.endsWith(", " + (((31 + 2) * 31 + 3) * 31 + 4) + "]"));
  }

  @Test
  void builderNamesTheFieldAndBound() {
    RedisPredictionSharing.Builder b = RedisPredictionSharing.builder(SharedRedis.URI);
    assertThatThrownBy(() -> b.flushInterval(Duration.ZERO))
        .hasMessage("flushInterval must be in [1 ms, 1 s], was PT0S");
    assertThatThrownBy(() -> b.maxKeysPerRecord(0))
        .hasMessage("maxKeysPerRecord must be in [1, 65536], was 0");
    assertThatThrownBy(() -> b.replicaId(""))
        .hasMessage("replicaId must be 1 to 256 UTF-8 bytes, was 0");
    assertThatThrownBy(() -> b.buffer(10, 100).build())
        .hasMessage("buffer keys (100) must be >= maxKeysPerRecord (4096)");
  }

  /** Polls a condition that another thread (the reader, Redis) makes true, at most 15 s. */
  static void await(BooleanSupplier condition) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime() - deadline).as("condition not met within 15 s").isNegative();
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
    }
  }
}
