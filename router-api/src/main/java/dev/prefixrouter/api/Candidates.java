package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.IndexSignal;
import dev.prefixrouter.api.spi.PrefixIndex;
import dev.prefixrouter.api.spi.ScoringContext;
import java.util.Arrays;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The per-route {@link ScoringContext}: arrays over the eligible entries. Single-threaded; reused
 * by one thread for its routes ({@link #reset} before, {@link #clear} after), so a decision
 * allocates no candidate arrays once the thread has seen the fleet's size.
 *
 * <p>A candidate is kept as its position in the decision's entry table (the membership's array),
 * not as a reference: the arrays are long-lived, and every reference stored into one costs the
 * collector's card-marking write barrier (a fence on G1), 16 of them per route on a 16-backend
 * fleet.
 */
final class Candidates implements ScoringContext {
  private static final long[] NO_KEYS = new long[0];
  private static final BackendEntry[] NO_ENTRIES = new BackendEntry[0];

  private @Nullable RouteRequest request;
  private @Nullable PrefixIndex index;
  private @Nullable String model;
  private int promptTokens;
  private int tokensPerBlock;
  private long now;
  private BackendEntry[] table = NO_ENTRIES; // the decision's entries, candidates index into it
  private int[] at; // per candidate: its position in table
  int[] slots;
  int[] matched;
  private int[] offloaded;
  private boolean offloadedKnown; // offloaded[] holds this decision's answer
  private double[] costs;
  private int[] order;
  private boolean[] seen;
  private int[] sortBuffer = new int[0];
  private long[] keys = NO_KEYS;
  private int keyCount;
  int size;
  @Nullable String reason;

  Candidates(int max) {
    allocate(max);
  }

  private void allocate(int max) {
    this.at = new int[max];
    this.slots = new int[max];
    this.matched = new int[max];
    this.offloaded = new int[max];
    this.costs = new double[max];
    this.order = new int[max];
    this.seen = new boolean[max];
  }

  /**
   * Starts a decision whose candidates are taken from {@code table} ({@link #add(int)}, at most its
   * length); the table must not change during the decision.
   */
  Candidates reset(
      RouteRequest request,
      String model,
      int promptTokens,
      int tokensPerBlock,
      long now,
      BackendEntry[] table,
      @Nullable PrefixIndex index) {
    if (at.length < table.length) {
      allocate(table.length);
    }
    this.table = table;
    this.request = request;
    this.index = index;
    this.model = model;
    this.promptTokens = promptTokens;
    this.tokensPerBlock = tokensPerBlock;
    this.now = now;
    this.size = 0;
    this.reason = null;
    this.keys = NO_KEYS;
    this.keyCount = 0;
    this.offloadedKnown = false;
    return this;
  }

  /** Drops every reference the decision held (request, entries, keys) once it is over. */
  void clear() {
    table = NO_ENTRIES;
    request = null;
    index = null;
    model = null;
    keys = NO_KEYS;
    keyCount = 0;
    reason = null;
    size = 0;
  }

  /** The decision's entry table. */
  BackendEntry[] table() {
    return table;
  }

  /** Adds {@code table()[i]} as the next candidate. */
  void add(int i) {
    BackendEntry e = table[i];
    at[size] = i;
    slots[size] = e.slot;
    order[size] = size;
    costs[size] = 0;
    matched[size] = 0;
    offloadedKnown = false;
    size++;
  }

  void keys(long[] keys, int keyCount) {
    this.keys = keys;
    this.keyCount = keyCount;
    this.offloadedKnown = false;
  }

  @Override
  public RouteRequest request() {
    return Objects.requireNonNull(request, "request");
  }

  @Override
  public String model() {
    return Objects.requireNonNull(model, "model");
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
    return keyCount;
  }

  @Override
  public long key(int i) {
    if (i < 0 || i >= keyCount) {
      throw new IndexOutOfBoundsException("key " + i + " of " + keyCount);
    }
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

  /** From the candidate's own array: the entry (another cache line per candidate) is not read. */
  @Override
  public int slot(int candidate) {
    check(candidate);
    return slots[candidate];
  }

  @Override
  public int matchedBlocks(int candidate) {
    check(candidate);
    return matched[candidate];
  }

  /**
   * Asks the index once per decision, for every candidate, on the first call (after {@link #keys}
   * and the match): scorers that never ask cost nothing.
   */
  @Override
  public int offloadedBlocks(int candidate) {
    check(candidate);
    if (!offloadedKnown) {
      PrefixIndex ix = index;
      if (ix == null) {
        return 0;
      }
      ix.matchOffloaded(keys, keyCount, slots, size, matched, offloaded);
      offloadedKnown = true;
    }
    return offloaded[candidate];
  }

  @Override
  public int inFlight(int candidate) {
    return entry(candidate).inFlight();
  }

  @Override
  public long pendingPrefillTokens(int candidate) {
    return entry(candidate).pendingPrefillTokens();
  }

  @Override
  public long activeTokens(int candidate) {
    return entry(candidate).activeTokens();
  }

  @Override
  public int runningDecodes(int candidate) {
    return entry(candidate).runningDecodes();
  }

  @Override
  public @Nullable LoadReport load(int candidate) {
    BackendEntry.TimedLoad l = entry(candidate).load;
    return l == null ? null : l.report();
  }

  @Override
  public long loadAgeNanos(int candidate) {
    BackendEntry.TimedLoad l = entry(candidate).load;
    return l == null ? -1 : l.ageNanos(now);
  }

  @Override
  public long signal(int candidate, IndexSignal signal) {
    check(candidate);
    PrefixIndex ix = index;
    return ix == null ? IndexSignal.ABSENT : ix.signal(slots[candidate], signal, now);
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

  /** The entry of a candidate. */
  BackendEntry entry(int candidate) {
    check(candidate);
    return table[at[candidate]];
  }

  private void check(int candidate) {
    if (candidate < 0 || candidate >= size) {
      throw new IndexOutOfBoundsException("candidate " + candidate + " of " + size);
    }
  }

  /**
   * {@link ScoringContext#sortByCost}, the same ranking without its per-comparison work: the order
   * starts in rotation order (candidate {@code rotation mod size} first), so a stable sort by cost
   * alone breaks exact ties exactly as the default's rotation rule does. Insertion sort up to 32
   * candidates, else a bottom-up merge sort into a buffer kept for the thread.
   */
  @Override
  public void sortByCost(int rotation) {
    int n = size;
    if (n == 0) {
      return;
    }
    int[] o = order;
    double[] cost = costs;
    int start = Math.floorMod(rotation, n);
    for (int i = 0, c = start; i < n; i++) {
      o[i] = c;
      c = c + 1 == n ? 0 : c + 1;
    }
    if (n <= 32) {
      for (int i = 1; i < n; i++) {
        int c = o[i];
        double cc = cost[c];
        int j = i - 1;
        while (j >= 0 && cc < cost[o[j]]) {
          o[j + 1] = o[j];
          j--;
        }
        o[j + 1] = c;
      }
      return;
    }
    int[] a = o;
    int[] b = sortBuffer.length >= n ? sortBuffer : (sortBuffer = new int[n]);
    for (int width = 1; width < n; width *= 2) {
      for (int lo = 0; lo < n; lo += 2 * width) {
        int mid = Math.min(lo + width, n);
        int hi = Math.min(lo + 2 * width, n);
        int i = lo;
        int j = mid;
        int k = lo;
        while (i < mid && j < hi) {
          b[k++] = cost[a[j]] < cost[a[i]] ? a[j++] : a[i++];
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
    if (a != o) {
      System.arraycopy(a, 0, o, 0, n);
    }
  }

  /**
   * Whether {@link #order()} is a permutation of {@code 0..size-1}. Up to 64 candidates the ones
   * seen are bits of one long (no array to clear and read back).
   */
  boolean orderIsPermutation() {
    if (size <= Long.SIZE) {
      long seenBits = 0;
      for (int i = 0; i < size; i++) {
        int c = order[i];
        if (c < 0 || c >= size || (seenBits & (1L << c)) != 0) {
          return false;
        }
        seenBits |= 1L << c;
      }
      return true;
    }
    Arrays.fill(seen, 0, size, false);
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
