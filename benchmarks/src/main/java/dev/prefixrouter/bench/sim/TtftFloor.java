package dev.prefixrouter.bench.sim;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A lower bound on each request's time to first token that holds for every routing policy on this
 * simulator (issue #18 research): no router, however it places requests, can give a request a TTFT
 * below its floor, so no router can bring a run's p95 (or mean) below the floors' p95 (mean).
 *
 * <p>It relaxes everything a policy decides: every backend is idle when a request arrives, every
 * backend holds every block computed anywhere so far (an unbounded cache shared by the fleet), and
 * a request's own prefill runs alone. What it keeps is causality, which session 18's {@code floor}
 * ({@link ScorerProbe#floor}) dropped: a block can serve as a cache hit only once some request has
 * computed it, and computing it takes that request's own prefill time from its arrival. A sibling
 * that arrives while the first request of its prompt is still being prefilled cannot finish before
 * that prefill does.
 *
 * <p>The simulator's step takes at least {@code a + b·p} for {@code p} prefill tokens (decode
 * tokens, a slowdown ≥ 1 and encode time only add), a request's prompt is computed in order in
 * chunks of at most the token budget {@code B}, and a prompt block enters the cache when the chunk
 * covering it is scheduled: a request admitted in the same step or later hits it, and its own first
 * token comes at the end of that step at the earliest. So, with {@code f(u) = ceil(u / B)·a + b·u}
 * the least time to compute {@code u} tokens:
 *
 * <pre>
 * avail(k, r)   earliest end of a step in which a request other than r computes block k
 * A_j(r)        max over i &lt; j of avail(r.block i, r)                 (A_0 = -infinity)
 * floor(r)      min over j ≤ cap(r) of max(A_j(r) - t_r, f(len(r) - 16 j))
 * E_r(k)        min over j ≤ min(k, cap(r)) of max(A_j(r), t_r + h_j(k))
 * h_j(k)        max(f(16 (k + 1 - j)), a + b·min(len(r) - 16 j, B - maxSeqs))
 * </pre>
 *
 * where {@code cap(r)} is the prompt's full blocks before its last token (the engine always
 * computes that token) and {@code h_j} is explained at {@link #compute}: the step that finishes a
 * block carries the rest of its request's chunk, so a sibling cannot hit the blocks of a prompt
 * still being prefilled before that prefill's step ends. The true times of any schedule are at
 * least their own image under {@code Φ: avail ↦ (min over r' ≠ r holding k of E_r'(k))}, whoever
 * computed a block took some hit j whose blocks were computed by others no later than the step that
 * used them; Φ is monotone, so iterating it from a value below the true times (one step after each
 * holder's arrival) never passes them: every iterate is a sound bound, and stopping early only
 * loosens it. Blocks are identified by a 64-bit chained hash of their tokens; a collision could
 * only add hits and lower a floor.
 *
 * <p>Valid for the simulator's default engine model (no CPU tier, no CacheBlend reuse, no P/D
 * transfer: each would let a block arrive without its prefill). Research only; not on any hot path.
 * Cost O(R · L · log L) per iteration for R requests of L blocks.
 */
final class TtftFloor {
  private TtftFloor() {}

  /** Most iterations of the availability bound (each a sound bound; it stops once settled). */
  static final int ITERATIONS = 20;

  /**
   * The floor of every request, in ms, indexed like {@code requests} (which must be in arrival
   * order, as every workload generator returns them).
   */
  static double[] floorsMs(List<SimRequest> requests, BackendProfile profile) {
    int n = requests.size();
    long[][] keys = new long[n][];
    Map<Long, Integer> ids = new HashMap<>();
    int[][] blockIds = new int[n][];
    for (int r = 0; r < n; r++) {
      SimRequest q = requests.get(r);
      if (r > 0 && q.arrivalNanos() < requests.get(r - 1).arrivalNanos()) {
        throw new IllegalArgumentException("requests must be in arrival order (request " + r + ")");
      }
      keys[r] = chain(q.tokens());
      blockIds[r] = new int[keys[r].length];
      for (int k = 0; k < keys[r].length; k++) {
        Integer id = ids.putIfAbsent(keys[r][k], ids.size());
        blockIds[r][k] = id == null ? ids.size() - 1 : id;
      }
    }
    double a = profile.stepBaseMs();
    double b = profile.prefillMsPerToken();
    int budget = profile.tokenBudget();
    // per block the two earliest computations and who made the earliest: a request cannot hit a
    // block it computes itself, so it reads the earliest by another request
    Avail avail = new Avail(ids.size());
    for (int r = 0; r < n; r++) {
      double t = requests.get(r).arrivalNanos() / 1e6;
      for (int id : blockIds[r]) {
        avail.offer(id, r, t + f(BackendProfile.BLOCK, a, b, budget));
      }
    }
    double[] prefixMax = new double[1];
    for (int it = 0; it < ITERATIONS; it++) {
      // Phi(avail): from a bound below the true times, Phi's image is below them too (Phi is
      // monotone and the true times are at least their own image), and above its input
      Avail next = new Avail(ids.size());
      for (int r = 0; r < n; r++) {
        int[] ks = blockIds[r];
        int len = requests.get(r).tokens().length;
        int cap = cap(requests.get(r), ks.length);
        prefixMax = prefixMax(ks, avail, r, prefixMax);
        double t = requests.get(r).arrivalNanos() / 1e6;
        for (int k = 0; k < ks.length; k++) {
          next.offer(ks[k], r, earliest(prefixMax, Math.min(k, cap), t, k, len, profile));
        }
      }
      boolean settled = next.sameAs(avail);
      avail = next;
      if (settled) {
        break;
      }
    }
    double[] floors = new double[n];
    for (int r = 0; r < n; r++) {
      int[] ks = blockIds[r];
      int len = requests.get(r).tokens().length;
      int cap = cap(requests.get(r), ks.length);
      prefixMax = prefixMax(ks, avail, r, prefixMax);
      double t = requests.get(r).arrivalNanos() / 1e6;
      double best = Double.POSITIVE_INFINITY;
      for (int j = 0; j <= cap; j++) {
        double wait = j == 0 ? 0 : prefixMax[j] - t;
        best = Math.min(best, Math.max(wait, f(len - j * BackendProfile.BLOCK, a, b, budget)));
        if (wait >= best) {
          break; // A_j only grows with j
        }
      }
      floors[r] = best;
    }
    return floors;
  }

  /** The prompt's full blocks before its last token: the most a hit can cover. */
  private static int cap(SimRequest q, int blocks) {
    return Math.min(Math.max(0, (q.tokens().length - 1) / BackendProfile.BLOCK), blocks);
  }

  /**
   * {@code out[j]} = the latest of the first {@code j} blocks' availability to request {@code r}
   * ({@code out[0]} = -inf); returns {@code out}, grown when too short.
   */
  private static double[] prefixMax(int[] ks, Avail avail, int r, double[] out) {
    double[] o = out.length < ks.length + 1 ? new double[ks.length + 1] : out;
    o[0] = Double.NEGATIVE_INFINITY;
    for (int k = 0; k < ks.length; k++) {
      o[k + 1] = Math.max(o[k], avail.forOther(ks[k], r));
    }
    return o;
  }

  /** Per block: the earliest computation, by whom, and the earliest by anyone else. */
  private static final class Avail {
    final double[] best;
    final int[] owner;
    final double[] second;

    Avail(int blocks) {
      best = new double[blocks];
      second = new double[blocks];
      owner = new int[blocks];
      Arrays.fill(best, Double.POSITIVE_INFINITY);
      Arrays.fill(second, Double.POSITIVE_INFINITY);
      Arrays.fill(owner, -1);
    }

    void offer(int id, int r, double time) {
      if (time < best[id]) {
        if (owner[id] != r) {
          second[id] = best[id];
        }
        best[id] = time;
        owner[id] = r;
      } else if (owner[id] != r && time < second[id]) {
        second[id] = time;
      }
    }

    /** When block {@code id} is available to request {@code r}: computed by another request. */
    double forOther(int id, int r) {
      return owner[id] == r ? second[id] : best[id];
    }

    boolean sameAs(Avail o) {
      return Arrays.equals(best, o.best) && Arrays.equals(second, o.second);
    }
  }

  /**
   * {@code E_r(k)}: the earliest end of a step in which request r (arriving at {@code t}, prompt
   * {@code len}) computes block k, over the hits j ≤ {@code maxJ} it could have taken: {@code min_j
   * max(A_j, t + h_j)}, a max of a sequence rising in j and one falling in j, so the minimum is at
   * their crossing (binary search). See {@link #compute}.
   */
  private static double earliest(
      double[] prefixMax, int maxJ, double t, int k, int len, BackendProfile p) {
    int lo = 0;
    int hi = maxJ; // the smallest j with A_j >= t + h_j
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (prefixMax[mid] >= t + compute(mid, k, len, p)) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    double best = Math.max(prefixMax[lo], t + compute(lo, k, len, p));
    if (lo > 0) {
      best = Math.min(best, Math.max(prefixMax[lo - 1], t + compute(lo - 1, k, len, p)));
    }
    return best;
  }

  /**
   * {@code h_j}: the least time from arrival until the step that computes block k ends, for a
   * request of {@code len} tokens that took a hit of j blocks. Two bounds: it computes the tokens
   * of blocks j..k ({@code f(16 (k + 1 - j))}); and the step that finishes block k holds at least
   * {@code min(len - 16 j, B - maxSeqs)} prefill tokens, as the scheduler gives a request the rest
   * of its prompt or the rest of the step's budget (then the step is full: its decodes, at most
   * {@code maxSeqs}, take the remainder). The second is what makes a chunk's blocks complete
   * together: a sibling cannot hit a block of a 2,000-token prompt before the step that prefills
   * all 2,000 tokens ends.
   */
  private static double compute(int j, int k, int len, BackendProfile p) {
    double a = p.stepBaseMs();
    double b = p.prefillMsPerToken();
    int step = Math.min(len - j * BackendProfile.BLOCK, p.tokenBudget() - p.maxSeqs());
    return Math.max(
        f((k + 1 - j) * BackendProfile.BLOCK, a, b, p.tokenBudget()), a + b * Math.max(1, step));
  }

  /** The least time to compute {@code u} tokens: {@code ceil(u / B) a + b u} (u ≥ 1). */
  static double f(int u, double a, double b, int budget) {
    int tokens = Math.max(1, u);
    return ((tokens + budget - 1) / budget) * a + b * tokens;
  }

  /** 64-bit chained hashes of the prompt's full blocks (as {@link ScorerProbe#floor} hashes). */
  static long[] chain(int[] tokens) {
    int blocks = tokens.length / BackendProfile.BLOCK;
    long[] out = new long[blocks];
    long h = 0x9E3779B97F4A7C15L;
    for (int k = 0; k < blocks; k++) {
      for (int i = k * BackendProfile.BLOCK; i < (k + 1) * BackendProfile.BLOCK; i++) {
        h = (h ^ tokens[i]) * 0x100000001B3L;
        h ^= h >>> 29;
      }
      out[k] = h;
    }
    return out;
  }
}
