package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.ScoringContext;
import org.jspecify.annotations.Nullable;

/** The per-route {@link ScoringContext}: arrays over the eligible entries. Single-threaded. */
final class Candidates implements ScoringContext {
  private final RouteRequest request;
  private final String model;
  private final int promptTokens;
  private final int tokensPerBlock;
  private final long now;
  final BackendEntry[] entries;
  final int[] slots;
  final int[] matched;
  private final double[] costs;
  private final int[] order;
  private long[] keys = new long[0];
  int size;
  @Nullable String reason;

  Candidates(
      RouteRequest request, String model, int promptTokens, int tokensPerBlock, long now, int max) {
    this.request = request;
    this.model = model;
    this.promptTokens = promptTokens;
    this.tokensPerBlock = tokensPerBlock;
    this.now = now;
    this.entries = new BackendEntry[max];
    this.slots = new int[max];
    this.matched = new int[max];
    this.costs = new double[max];
    this.order = new int[max];
  }

  void add(BackendEntry e) {
    entries[size] = e;
    slots[size] = e.slot;
    order[size] = size;
    size++;
  }

  void keys(long[] keys) {
    this.keys = keys;
  }

  @Override
  public RouteRequest request() {
    return request;
  }

  @Override
  public String model() {
    return model;
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
    return size;
  }

  @Override
  public Backend backend(int candidate) {
    return entry(candidate).backend;
  }

  @Override
  public int slot(int candidate) {
    return entry(candidate).slot;
  }

  @Override
  public int matchedBlocks(int candidate) {
    check(candidate);
    return matched[candidate];
  }

  @Override
  public int inFlight(int candidate) {
    return entry(candidate).inFlight.get();
  }

  @Override
  public long pendingPrefillTokens(int candidate) {
    return entry(candidate).pendingPrefillTokens.get();
  }

  @Override
  public long activeTokens(int candidate) {
    return entry(candidate).activeTokens.get();
  }

  @Override
  public int runningDecodes(int candidate) {
    return entry(candidate).runningDecodes.get();
  }

  @Override
  public @Nullable LoadReport load(int candidate) {
    BackendEntry.TimedLoad l = entry(candidate).load;
    return l == null ? null : l.report();
  }

  @Override
  public long loadAgeNanos(int candidate) {
    BackendEntry.TimedLoad l = entry(candidate).load;
    return l == null ? -1 : Math.max(0, now - l.measuredAt());
  }

  @Override
  public void setCost(int candidate, double cost) {
    check(candidate);
    if (Double.isNaN(cost)) {
      throw new IllegalArgumentException("cost of candidate " + candidate + " is NaN");
    }
    costs[candidate] = cost;
  }

  @Override
  public double cost(int candidate) {
    check(candidate);
    return costs[candidate];
  }

  @Override
  public int[] order() {
    return order;
  }

  @Override
  public void setReason(String reason) {
    this.reason = reason;
  }

  private BackendEntry entry(int candidate) {
    check(candidate);
    return entries[candidate];
  }

  private void check(int candidate) {
    if (candidate < 0 || candidate >= size) {
      throw new IndexOutOfBoundsException("candidate " + candidate + " of " + size);
    }
  }

  /** Whether {@link #order()} is a permutation of {@code 0..size-1}. */
  boolean orderIsPermutation() {
    boolean[] seen = new boolean[size];
    for (int i = 0; i < size; i++) {
      int c = order[i];
      if (c < 0 || c >= size || seen[c]) {
        return false;
      }
      seen[c] = true;
    }
    return true;
  }
}
