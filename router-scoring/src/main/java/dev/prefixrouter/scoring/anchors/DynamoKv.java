package dev.prefixrouter.scoring.anchors;

import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import java.util.HashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * NVIDIA Dynamo's KV router cost, classic form (lower wins, temperature 0):
 *
 * <pre>{@code
 * prefill(w) = pendingPrefillTokens(w) + max(0, promptTokens - matchedTokens(w))
 * decode(w)  = activeBlocks(w) + newBlocks(w)
 * cost(w)    = overlapWeight × prefill(w) / B + decode(w)
 * }</pre>
 *
 * with {@code B} tokens per block. As Dynamo's router tracks them (its {@code ActiveSequences},
 * output blocks not tracked, the default): {@code activeBlocks(w)} counts the distinct prompt
 * blocks of the requests open on {@code w}, each block once however many requests share it, and
 * {@code newBlocks(w)} the request's blocks not among them. A request's blocks join its backend's
 * active set when it is routed and leave when its lease ends. The overlap weight scales the prefill
 * load; a match helps only by shrinking it, and weight 0 balances load alone. Dynamo breaks ties by
 * the smaller cache and then at random; here ties rotate. Dynamo's default weight is 1 ({@link
 * #defaults()}).
 *
 * <p>Name and reason: {@code dynamo-kv}. Thread-safe (a lock per backend around its active set).
 * Per {@code score}: O(n·k) hash lookups for n candidates and k prompt blocks, plus the sort.
 * Memory: the block keys of the open requests (one entry per distinct block and backend, and each
 * open lease keeps its request's keys), released as leases end or backends leave (a backend's table
 * of more than 4,096 keys is dropped once its last lease ends). A pair's blocks leave with its
 * prefill leg, at the first token (the decode leg is not scored).
 */
public final class DynamoKv implements Scorer {
  private final double overlapWeight;
  private final AtomicLong rotation = new AtomicLong();
  private final ConcurrentHashMap<Integer, Active> active = new ConcurrentHashMap<>();

  /** The distinct prompt blocks of a backend's open requests, with how many requests hold each. */
  private static final class Active {
    private static final int SHRINK_ABOVE = 1 << 12; // a table this large is dropped once empty
    private HashMap<Long, Integer> holders = new HashMap<>();
    private int peak; // the most keys held since the table was last replaced

    /** Active blocks plus the request's blocks not among them, read in one state. */
    synchronized int decodeBlocks(ScoringContext ctx) {
      int n = holders.size();
      for (int j = 0; j < ctx.keyCount(); j++) {
        if (!holders.containsKey(ctx.key(j))) {
          n++;
        }
      }
      return n;
    }

    synchronized void add(long[] keys) {
      for (long k : keys) {
        holders.merge(k, 1, Integer::sum);
      }
      peak = Math.max(peak, holders.size());
    }

    synchronized void remove(long[] keys) {
      for (long k : keys) {
        holders.computeIfPresent(k, (key, c) -> c == 1 ? null : c - 1);
      }
      if (holders.isEmpty() && peak > SHRINK_ABOVE) { // a HashMap's table never shrinks
        holders = new HashMap<>();
        peak = 0;
      }
    }
  }

  /** What an open lease keeps: its backend's active set and the keys it added there. */
  private record Held(Active active, long[] keys) {}

  /**
   * @param overlapWeight weight of the prefill load, finite and &ge; 0
   * @throws IllegalArgumentException naming the parameter and value when it is out of range
   */
  public DynamoKv(double overlapWeight) {
    this.overlapWeight = Ranking.nonNegative("overlapWeight", overlapWeight);
  }

  /** Dynamo's default: overlap weight 1. */
  public static DynamoKv defaults() {
    return new DynamoKv(1.0);
  }

  @Override
  public String name() {
    return "dynamo-kv";
  }

  @Override
  public void score(ScoringContext ctx) {
    double b = ctx.tokensPerBlock();
    int blocks = ctx.keyCount();
    for (int i = 0; i < ctx.size(); i++) {
      double potentialPrefill =
          ctx.pendingPrefillTokens(i) + Math.max(0, ctx.promptTokens() - ctx.matchedTokens(i));
      Active a = active.get(ctx.slot(i));
      double potentialDecodeBlocks = a == null ? blocks : a.decodeBlocks(ctx);
      ctx.setCost(i, overlapWeight * potentialPrefill / b + potentialDecodeBlocks);
    }
    ctx.sortByCost((int) rotation.getAndIncrement());
    ctx.setReason("dynamo-kv");
  }

  @Override
  public Object onRoutedLease(ScoringContext ctx, int candidate) {
    long[] keys = new long[ctx.keyCount()];
    for (int j = 0; j < keys.length; j++) {
      keys[j] = ctx.key(j);
    }
    Active a = active.computeIfAbsent(ctx.slot(candidate), s -> new Active());
    a.add(keys);
    return new Held(a, keys);
  }

  @Override
  public void onEnded(int slot, @Nullable Object token) {
    if (token instanceof Held h) { // the set it joined, even if the slot was re-used since
      h.active().remove(h.keys());
    }
  }

  @Override
  public void removeBackend(int slot) {
    active.remove(slot);
  }
}
