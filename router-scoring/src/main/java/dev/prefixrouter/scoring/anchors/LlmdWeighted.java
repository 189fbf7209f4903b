package dev.prefixrouter.scoring.anchors;

import dev.prefixrouter.api.LoadReport;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import java.util.concurrent.atomic.AtomicLong;

/**
 * llm-d's (and the Gateway API Inference Extension's) weighted scorers with the max-score picker:
 * {@code total(b) = prefixWeight × prefix(b) + queueWeight × queue(b) + kvWeight × kv(b)}, the
 * highest total wins, weights not normalised. Each score is in [0, 1]:
 *
 * <ul>
 *   <li>{@code prefix(b)} = matched blocks / request blocks (0 for a request with no full block);
 *   <li>{@code queue(b)} = {@code (maxQ - q(b)) / (maxQ - minQ)} over the candidates, 1 for all
 *       when every queue is equal, with {@code q} the reported waiting count (0 with no report);
 *   <li>{@code kv(b)} = 1 − reported KV usage (1 with no report).
 * </ul>
 *
 * The extension's default profile is prefix 3, queue 2, KV cache 2 ({@link #defaults()}). The cost
 * set on each candidate is {@code -total}; ties rotate (the picker shuffles).
 *
 * <p>Name {@code llmd-P-Q-K} and reason {@code llm-d P:Q:K} from the weights ({@code llmd-3-2-2}
 * for the defaults). Thread-safe (one atomic counter); O(n log n) per {@code score}.
 */
public final class LlmdWeighted implements Scorer {
  private final double prefixWeight;
  private final double queueWeight;
  private final double kvWeight;
  private final String name;
  private final String reason;
  private final AtomicLong rotation = new AtomicLong();

  /**
   * @param prefixWeight weight of the prefix-cache score, finite and &ge; 0
   * @param queueWeight weight of the queue score, finite and &ge; 0
   * @param kvWeight weight of the KV-cache-utilisation score, finite and &ge; 0
   * @throws IllegalArgumentException naming the parameter and value when one is out of range
   */
  public LlmdWeighted(double prefixWeight, double queueWeight, double kvWeight) {
    this.prefixWeight = Ranking.nonNegative("prefixWeight", prefixWeight);
    this.queueWeight = Ranking.nonNegative("queueWeight", queueWeight);
    this.kvWeight = Ranking.nonNegative("kvWeight", kvWeight);
    String p = weight(prefixWeight);
    String q = weight(queueWeight);
    String k = weight(kvWeight);
    this.name = "llmd-" + p + "-" + q + "-" + k;
    this.reason = "llm-d " + p + ":" + q + ":" + k;
  }

  /** The extension's default profile: prefix 3, queue 2, KV cache 2. */
  public static LlmdWeighted defaults() {
    return new LlmdWeighted(3, 2, 2);
  }

  private static String weight(double w) {
    return w == Math.rint(w) && Math.abs(w) < 1e15 ? Long.toString((long) w) : Double.toString(w);
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public void score(ScoringContext ctx) {
    int n = ctx.size();
    int maxQ = Integer.MIN_VALUE;
    int minQ = Integer.MAX_VALUE;
    for (int i = 0; i < n; i++) {
      int q = queue(ctx.load(i));
      maxQ = Math.max(maxQ, q);
      minQ = Math.min(minQ, q);
    }
    int blocks = ctx.keyCount();
    for (int i = 0; i < n; i++) {
      LoadReport load = ctx.load(i);
      double prefix = blocks == 0 ? 0 : (double) ctx.matchedBlocks(i) / blocks;
      double queue = maxQ == minQ ? 1.0 : (double) (maxQ - queue(load)) / (maxQ - minQ);
      double kv = load == null ? 1.0 : 1.0 - load.kvUsage();
      double total = prefixWeight * prefix + queueWeight * queue + kvWeight * kv;
      ctx.setCost(i, -total);
    }
    ctx.sortByCost((int) rotation.getAndIncrement());
    ctx.setReason(reason);
  }

  private static int queue(LoadReport load) {
    return load == null ? 0 : load.waiting();
  }
}
