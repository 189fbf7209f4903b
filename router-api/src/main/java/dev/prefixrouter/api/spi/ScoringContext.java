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
    // insertion sort: candidate sets are small (tens to a few hundred) and mostly presorted
    for (int i = 1; i < n; i++) {
      int c = order[i];
      double cc = cost(c);
      int rc = Math.floorMod(c - start, n);
      int j = i - 1;
      while (j >= 0) {
        int o = order[j];
        double oc = cost(o);
        if (oc < cc || (oc == cc && Math.floorMod(o - start, n) < rc)) {
          break;
        }
        order[j + 1] = o;
        j--;
      }
      order[j + 1] = c;
    }
  }
}
