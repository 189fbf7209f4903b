package dev.prefixrouter.api.spi;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.LoadReport;
import dev.prefixrouter.api.RouteRequest;
import org.jspecify.annotations.Nullable;

/**
 * Everything a {@link Scorer} may use to rank the eligible candidates of one request. Candidates
 * are numbered {@code 0 .. size()-1}. The context lives for one {@code route()} call on one thread
 * and must not be retained.
 *
 * <p>A scorer writes a {@link #setCost cost} for every candidate (lower is better) and leaves the
 * ranking, best first, in {@link #order()}, which starts as the identity permutation. {@link
 * #sortByCost(int)} does the usual thing.
 */
public interface ScoringContext {

  RouteRequest request();

  /** The model after alias resolution and A/B split. */
  String model();

  /** Prompt tokens (exact for token prompts, estimated otherwise). */
  int promptTokens();

  /** Tokens per block of the engine's hasher. */
  int tokensPerBlock();

  /** The engine clock for this decision. */
  long nowNanos();

  /** Number of block keys of the prompt. */
  int keyCount();

  /** Block key {@code i} of the prompt. */
  long key(int i);

  /** Number of candidates. */
  int size();

  Backend backend(int candidate);

  /** The candidate's dense slot. */
  int slot(int candidate);

  /** Leading blocks of the prompt believed cached on the candidate. */
  int matchedBlocks(int candidate);

  /** Matched blocks in tokens, capped at the prompt length. */
  default int matchedTokens(int candidate) {
    return (int) Math.min(promptTokens(), (long) matchedBlocks(candidate) * tokensPerBlock());
  }

  /**
   * Blocks of the prompt right after its {@link #matchedBlocks} that the candidate's backend is
   * believed to hold on a lower tier than its GPU (CPU memory, disk: its KV events said so, see
   * {@link PrefixIndex#matchOffloaded}); loading them back is cheaper than computing them again.
   * Computed on the first call of a decision for every candidate (one index lookup per candidate
   * with such a tier), so scorers that never ask pay nothing. Default 0.
   */
  default int offloadedBlocks(int candidate) {
    return 0;
  }

  /**
   * {@link #offloadedBlocks} in tokens, capped at the prompt tokens not already {@link
   * #matchedTokens matched}.
   */
  default int offloadedTokens(int candidate) {
    int blocks = offloadedBlocks(candidate);
    if (blocks == 0) {
      return 0;
    }
    long left = (long) promptTokens() - matchedTokens(candidate);
    return (int) Math.max(0, Math.min(left, (long) blocks * tokensPerBlock()));
  }

  /** The router's own count of open leases on the candidate. */
  int inFlight(int candidate);

  /** Uncached prompt tokens routed to the candidate that have not reached their first token. */
  long pendingPrefillTokens(int candidate);

  /** Prompt plus reserved output tokens of the candidate's open leases (its active KV demand). */
  long activeTokens(int candidate);

  /** Leases on the candidate past their first token (decoding). */
  int runningDecodes(int candidate);

  /** The candidate's last load report, or {@code null}. */
  @Nullable LoadReport load(int candidate);

  /** Age of {@link #load} now, or {@code -1} without one. */
  long loadAgeNanos(int candidate);

  /**
   * The prefix index's {@link PrefixIndex#signal} for the candidate's backend now, in the unit the
   * signal documents, or {@link IndexSignal#ABSENT} when the index does not know. O(1), no
   * allocation.
   */
  default long signal(int candidate, IndexSignal signal) {
    return IndexSignal.ABSENT;
  }

  /** Sets the cost of a candidate (lower wins). */
  void setCost(int candidate, double cost);

  double cost(int candidate);

  /** The ranking, best first: a permutation of candidate numbers the scorer may rearrange. */
  int[] order();

  /** A short human-readable explanation of the ranking, shown in {@code Routed.reason()}. */
  void setReason(String reason);

  /**
   * Sorts {@link #order()} by ascending cost. Exact ties are broken by rotation: among equal costs,
   * the candidate at or after position {@code rotation mod size()} in candidate order comes first,
   * so that a rotating counter spreads ties round-robin.
   */
  default void sortByCost(int rotation) {
    int n = size();
    int[] order = order();
    int start = n == 0 ? 0 : Math.floorMod(rotation, n);
    for (int i = 0; i < n; i++) {
      order[i] = i;
    }
    if (n <= 32) {
      // insertion sort: small candidate sets, mostly presorted
      for (int i = 1; i < n; i++) {
        int c = order[i];
        int j = i - 1;
        while (j >= 0 && before(c, order[j], start, n)) {
          order[j + 1] = order[j];
          j--;
        }
        order[j + 1] = c;
      }
      return;
    }
    // bottom-up merge sort: O(n log n) for hundreds of candidates, stable
    int[] a = order;
    int[] b = new int[n];
    for (int width = 1; width < n; width *= 2) {
      for (int lo = 0; lo < n; lo += 2 * width) {
        int mid = Math.min(lo + width, n);
        int hi = Math.min(lo + 2 * width, n);
        int i = lo;
        int j = mid;
        int k = lo;
        while (i < mid && j < hi) {
          b[k++] = before(a[j], a[i], start, n) ? a[j++] : a[i++];
        }
        while (i < mid) {
          b[k++] = a[i++];
        }
        while (j < hi) {
          b[k++] = a[j++];
        }
      }
      int[] t = a;
      a = b;
      b = t;
    }
    if (a != order) {
      System.arraycopy(a, 0, order, 0, n);
    }
  }

  /** Whether candidate {@code x} ranks strictly before {@code y}: lower cost, then rotation. */
  private boolean before(int x, int y, int start, int n) {
    double cx = cost(x);
    double cy = cost(y);
    if (cx != cy) {
      return cx < cy;
    }
    return Math.floorMod(x - start, n) < Math.floorMod(y - start, n);
  }
}
