package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.RouteRequest;
import java.lang.ref.WeakReference;
import org.junit.jupiter.api.Test;

/**
 * A scorer that is no longer referenced is collected, although the thread that scored with it lives
 * on: its per-thread buffers (the value of its ThreadLocal) must not reach it. Before the fix every
 * scorer ever used on a routing thread stayed reachable through that thread (about 2 MB each, its
 * balance shares): an application that rebuilds its engine leaked one per rebuild, and the route
 * fuzzer ran out of memory after ~3,500 engines.
 */
class ScorerRetentionTest {

  @Test
  void aScorerUsedOnThisThreadIsCollectedOnceUnreferenced() throws InterruptedException {
    WeakReference<EstimatedTtftScorer> ref = scoreOnceAndDrop();
    for (int i = 0; i < 50 && ref.get() != null; i++) {
      System.gc();
      Thread.sleep(20);
    }
    assertThat(ref.get()).as("scorer still reachable after it was dropped").isNull();
  }

  private static WeakReference<EstimatedTtftScorer> scoreOnceAndDrop() {
    EstimatedTtftScorer s = EstimatedTtftScorer.builder().build();
    FakeContext ctx = new FakeContext(3);
    ctx.request = RouteRequest.builder("t", "m").session("chat").build();
    s.score(ctx);
    s.onRouted(ctx, ctx.best());
    s.score(ctx); // the thread's buffers exist and have been through a whole decision
    return new WeakReference<>(s);
  }
}
