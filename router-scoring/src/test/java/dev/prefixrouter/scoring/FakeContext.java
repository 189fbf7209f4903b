package dev.prefixrouter.scoring;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.LoadReport;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.spi.IndexSignal;
import dev.prefixrouter.api.spi.ScoringContext;
import org.jspecify.annotations.Nullable;

/**
 * A hand-built scoring context: candidate arrays set by the test (public for the anchors' tests).
 */
public final class FakeContext implements ScoringContext {
  public RouteRequest request = RouteRequest.builder("t", "m").build();
  public int promptTokens = 1024;
  public int tokensPerBlock = 16;
  public long now;
  public long[] keys = new long[0];
  public final Backend[] backends;
  public final int[] matchedBlocks;
  public final int[] offloadedBlocks;
  public final int[] inFlight;
  public final long[] pending;
  public final long[] active;
  public final int[] decodes;
  public final LoadReport[] loads;
  public final long[] loadAge;
  public final long[] lruAge;
  public final double[] costs;
  public final int[] order;
  public String reason = "";

  public FakeContext(int n) {
    backends = new Backend[n];
    for (int i = 0; i < n; i++) {
      backends[i] = Backend.of("b" + i, "m");
    }
    matchedBlocks = new int[n];
    offloadedBlocks = new int[n];
    inFlight = new int[n];
    pending = new long[n];
    active = new long[n];
    decodes = new int[n];
    loads = new LoadReport[n];
    loadAge = new long[n];
    java.util.Arrays.fill(loadAge, -1);
    lruAge = new long[n];
    java.util.Arrays.fill(lruAge, IndexSignal.ABSENT); // room everywhere: no cache pressure
    costs = new double[n];
    order = new int[n];
    for (int i = 0; i < n; i++) {
      order[i] = i;
    }
  }

  /** Two candidates; a request of {@code session} with {@code prompt} tokens at {@code nowMs}. */
  public static FakeContext sessionRequest(String session, int prompt, long nowMs) {
    FakeContext ctx = new FakeContext(2);
    ctx.request = RouteRequest.builder("t", "m").session(session).build();
    ctx.promptTokens = prompt;
    ctx.now = nowMs * 1_000_000L;
    return ctx;
  }

  public int best() {
    return order[0];
  }

  @Override
  public long signal(int candidate, IndexSignal signal) {
    return signal == IndexSignal.LRU_AGE_NANOS ? lruAge[candidate] : IndexSignal.ABSENT;
  }

  @Override
  public RouteRequest request() {
    return request;
  }

  @Override
  public String model() {
    return "m";
  }

  @Override
  public int promptTokens() {
    return promptTokens;
  }

  @Override
  public int tokensPerBlock() {
    return tokensPerBlock;
  }

  @Override
  public long nowNanos() {
    return now;
  }

  @Override
  public int keyCount() {
    return keys.length;
  }

  @Override
  public long key(int i) {
    return keys[i];
  }

  @Override
  public int size() {
    return backends.length;
  }

  @Override
  public Backend backend(int c) {
    return backends[c];
  }

  @Override
  public int slot(int c) {
    return c;
  }

  @Override
  public int matchedBlocks(int c) {
    return matchedBlocks[c];
  }

  @Override
  public int offloadedBlocks(int c) {
    return offloadedBlocks[c];
  }

  @Override
  public int inFlight(int c) {
    return inFlight[c];
  }

  @Override
  public long pendingPrefillTokens(int c) {
    return pending[c];
  }

  @Override
  public long activeTokens(int c) {
    return active[c];
  }

  @Override
  public int runningDecodes(int c) {
    return decodes[c];
  }

  @Override
  public @Nullable LoadReport load(int c) {
    return loads[c];
  }

  @Override
  public long loadAgeNanos(int c) {
    return loadAge[c];
  }

  @Override
  public void setCost(int c, double cost) {
    costs[c] = cost;
  }

  @Override
  public double cost(int c) {
    return costs[c];
  }

  @Override
  public int[] order() {
    return order;
  }

  @Override
  public void setReason(String reason) {
    this.reason = reason;
  }
}
