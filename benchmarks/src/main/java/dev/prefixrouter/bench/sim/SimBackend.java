package dev.prefixrouter.bench.sim;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A vLLM-like backend: continuous batching with a per-step token budget, chunked prefill (decodes
 * scheduled first, prefill chunks fill the rest of the budget, FCFS admission), a KV cache of
 * 16-token blocks with prefix reuse (a request pins the leading blocks it hits; its uncached full
 * prompt blocks enter the cache as the prefill chunks covering them are scheduled, as in vLLM v1,
 * so a request admitted after that hits them while they are still being computed), LRU eviction of
 * unreferenced cached blocks (a finished request's tail blocks are evicted before its head), and
 * preemption (the newest running request is sent back to the waiting queue and recomputed: its
 * prompt and the output it generated are prefilled again, with the hits found then; its reported
 * hit stays the first admission's) when decode growth finds no free block. Opt-in: a lower tier
 * ({@link #lowerTier}) and position-independent chunk reuse ({@link #blend}).
 */
final class SimBackend {

  /** What the fleet hears from a backend. */
  interface Listener {
    void onFirstToken(Seq seq, long now);

    void onFinished(Seq seq, long now);

    void onStored(SimBackend backend, long[] keys, int from, int to, int[] tokens);

    void onRemoved(SimBackend backend, long key);

    /** A block evicted from the GPU was kept on the lower tier (before its GPU removal). */
    default void onOffloaded(SimBackend backend, long key) {}

    /** A block left the lower tier. */
    default void onDroppedLower(SimBackend backend, long key) {}
  }

  /** One request on this backend. */
  static final class Seq {
    final SimRequest request;
    final Object lease; // the router's Routed, opaque here
    final long[] keys; // full prompt blocks
    int hitBlocks; // leading blocks served from cache at its first admission (what is reported)
    boolean hitRecorded; // admitted once: a re-admission after preemption keeps hitBlocks
    int recompute; // output tokens generated before its last preemption: prefilled again
    int cachedBlocks; // leading prompt blocks in the cache pinned by this request
    int prefilled; // prompt tokens computed (including the cached ones)
    int generated;
    int privateBlocks;
    boolean admitted;
    boolean firstTokenSent;
    long routedAt;
    long firstTokenAt;
    int attempt;
    int plannedChunk;
    boolean encoded;
    boolean transferred; // its prompt's KV cache arrives whole (a decode leg): no prefill compute
    int blendBlocks; // prompt blocks past the exact hit reused from chunks held elsewhere (blend)

    Seq(SimRequest request, Object lease, long[] keys, long routedAt) {
      this.request = request;
      this.lease = lease;
      this.keys = keys;
      this.routedAt = routedAt;
    }

    int promptLength() {
      return request.tokens().length;
    }

    /** Tokens its prefill computes: the prompt, and after a preemption the output so far too. */
    int prefillTarget() {
      return promptLength() + recompute;
    }
  }

  final String id;
  final BackendProfile profile;
  private final Listener listener;

  /** Told of every decode step's token (a sequence and the step's end time); null: nobody. */
  java.util.function.ObjLongConsumer<Seq> onToken;

  double slowdown = 1.0;
  boolean dead;

  private final Map<Long, Integer> refs = new HashMap<>(); // cached blocks → pin count
  private final LinkedHashMap<Long, Boolean> evictable = new LinkedHashMap<>(); // refs == 0, LRU
  private int privateBlocks;
  final ArrayDeque<Seq> waiting = new ArrayDeque<>();
  final List<Seq> running = new ArrayList<>();
  boolean stepping;
  long stepEndsAt; // while stepping: when the planned step ends (the shadow's starting point)
  long busyNanos;
  long prefillTokens;
  long decodeTokens;
  long preemptions;

  // lower tier (CPU memory): off unless lowerTier() gave it a capacity
  private int lowerCapacity;
  private double reloadFraction;
  private final LinkedHashMap<Long, Boolean> lower = new LinkedHashMap<>(16, 0.75f, true);
  long reloadedTokens;

  /**
   * Gives this backend a lower tier of {@code blocks}: blocks evicted from the GPU move there
   * (least recently used out first), and a request whose prompt continues past its GPU hit with
   * blocks held there loads them back, paying {@code reloadFraction} of their prefill compute
   * instead of all of it (added to the step that admits it, as encode time is).
   */
  void lowerTier(int blocks, double reloadFraction) {
    this.lowerCapacity = blocks;
    this.reloadFraction = reloadFraction;
  }

  // position-independent chunk reuse (CacheBlend-style): off unless blend() gave a fraction
  private static final int SOURCES_PER_CHUNK = 4;
  private double blendFraction = -1;
  private final Map<Integer, ArrayDeque<long[]>> chunkSources = new HashMap<>();

  /**
   * Position-independent chunk reuse, as LMCache's CacheBlend does: a chunk's KV computed in
   * another context is reused wherever the chunk stands in a new prompt, and only {@code
   * recomputeFraction} of its tokens are recomputed (to restore the attention across chunks). Here
   * a chunk ({@link SimRequest#chunks()}) is held while every block of one earlier prompt's copy of
   * it is still in this backend's cache (pinned or in the LRU; the last {@value #SOURCES_PER_CHUNK}
   * copies are remembered); a held chunk's blocks past the request's exact prefix hit then cost
   * {@code recomputeFraction} of their prefill, computed in the prefill steps like any other
   * prefill token. The reused copy is touched (most recently used). Everything else is unchanged:
   * the exact prefix hit is taken first (the system prompt and a leading chunk are plain prefix
   * hits), the request still allocates its own blocks for every prompt block past that hit (the
   * reused KV is copied into them: the held copy keeps its blocks, so reuse never frees KV), those
   * blocks enter the cache under the request's own prefix keys when its prefill completes (what the
   * router's index and KV events see), and a chunk partly evicted is not reused at all. Chunks are
   * looked up after the request's own blocks are allocated, so that allocation may evict the copy
   * it would have reused.
   */
  void blend(double recomputeFraction) {
    if (!(recomputeFraction >= 0 && recomputeFraction <= 1)) {
      throw new IllegalArgumentException("recomputeFraction must be in [0, 1]");
    }
    this.blendFraction = recomputeFraction;
  }

  SimBackend(String id, BackendProfile profile, Listener listener) {
    this.id = id;
    this.profile = profile;
    this.listener = listener;
  }

  int usedBlocks() {
    return refs.size() + privateBlocks;
  }

  /** vLLM's usage: cached-but-unreferenced blocks count as free. */
  double kvUsage() {
    int pinnedOrPrivate = refs.size() - evictable.size() + privateBlocks;
    return Math.min(1.0, (double) pinnedOrPrivate / profile.capacityBlocks());
  }

  void enqueue(Seq seq) {
    waiting.addLast(seq);
  }

  boolean hasWork() {
    return !running.isEmpty() || !waiting.isEmpty();
  }

  /** Leading prompt blocks cached here now (ground truth), capped as vLLM does at (L−1)/16. */
  int cachedPrefixBlocks(Seq s) {
    int cap = Math.max(0, (s.prefillTarget() - 1) / BackendProfile.BLOCK);
    int n = Math.min(cap, s.keys.length);
    int hit = 0;
    while (hit < n && refs.containsKey(s.keys[hit])) {
      hit++;
    }
    return hit;
  }

  /**
   * Plans one step; returns its duration, or -1 if there is nothing to do. As vLLM v1's {@code
   * allocate_slots} caches a request's full blocks for the tokens it schedules, every full prompt
   * block a prefill chunk covers enters the cache as the chunk is scheduled (pinned by its request,
   * told as stored): a request admitted later, in this step or a later one, hits it.
   */
  long planStep() {
    int budget = profile.tokenBudget();
    int decodes = 0;
    for (Seq s : running) {
      if (s.prefilled >= s.prefillTarget()) {
        decodes++;
      }
    }
    budget -= decodes;
    int prefill = 0;
    for (Seq s : running) {
      if (budget <= 0) {
        break;
      }
      if (s.prefilled < s.prefillTarget()) {
        int chunk = Math.min(budget, s.prefillTarget() - s.prefilled);
        s.plannedChunk = chunk;
        cacheUpTo(s, (s.prefilled + chunk) / BackendProfile.BLOCK);
        prefill += chunk;
        budget -= chunk;
      }
    }
    while (budget > 0 && running.size() < profile.maxSeqs() && !waiting.isEmpty()) {
      Seq s = waiting.peekFirst();
      if (!admit(s)) {
        break; // head-of-line: wait for blocks
      }
      waiting.pollFirst();
      running.add(s);
      encodeExtraMs += encode(s);
      if (s.prefilled >= s.prefillTarget()) { // a decode leg: its KV arrived whole, it decodes now
        s.plannedChunk = 0;
        decodes++;
        budget--;
        continue;
      }
      int chunk = Math.min(budget, s.prefillTarget() - s.prefilled);
      s.plannedChunk = chunk;
      cacheUpTo(s, (s.prefilled + chunk) / BackendProfile.BLOCK);
      prefill += chunk;
      budget -= chunk;
    }
    if (decodes == 0 && prefill == 0) {
      return -1;
    }
    plannedDecodes = decodes;
    plannedPrefill = prefill;
    long extra = (long) (encodeExtraMs * slowdown * 1e6);
    encodeExtraMs = 0;
    return profile.stepNanos(prefill, decodes, slowdown) + extra;
  }

  private double encodeExtraMs;
  private final java.util.LinkedHashMap<Integer, Boolean> encoderCache =
      new java.util.LinkedHashMap<>(16, 0.75f, true);
  long encoderHits;
  long encoderMisses;

  /** The encode time of a newly admitted request's media item: 0 on an encoder-cache hit. */
  private double encode(Seq s) {
    int media = s.request.media();
    if (media < 0 || s.encoded || profile.encoderItems() <= 0) {
      return 0;
    }
    s.encoded = true;
    if (encoderCache.get(media) != null) {
      encoderHits++;
      return 0;
    }
    encoderMisses++;
    encoderCache.put(media, Boolean.TRUE);
    if (encoderCache.size() > profile.encoderItems()) {
      Integer eldest = encoderCache.keySet().iterator().next();
      encoderCache.remove(eldest);
    }
    return profile.encodeMs();
  }

  private int plannedDecodes;
  private int plannedPrefill;

  /**
   * Research oracle (issue #18 diagnosis): the time to first token, in ms, that a request with full
   * prompt blocks {@code keys} and {@code promptLength} tokens would see if it were enqueued here
   * at {@code now} and nothing else arrived. Replays this backend's scheduler (the step in
   * progress, then decodes first, running prefills in order, FCFS admission within the token budget
   * and {@code maxSeqs}) on copies of its sequences; a sequence's hit at admission counts the
   * blocks cached now plus those that sequences ahead have been scheduled to prefill in the replay
   * (a prefix block becomes a hit for whoever is admitted after the chunk covering it is scheduled,
   * as in {@link #planStep}). Ignores KV capacity (no admission stall, eviction or preemption) and
   * encode time. Changes nothing.
   */
  double shadowTtftMs(long[] newKeys, int promptLength, long now) {
    int n = running.size() + waiting.size() + 1;
    long[][] ks = new long[n][];
    int[] len = new int[n];
    int[] done = new int[n]; // prefilled tokens
    int[] gen = new int[n];
    int[] out = new int[n];
    int[] chunk = new int[n];
    boolean[] in = new boolean[n]; // admitted (running)
    boolean[] gone = new boolean[n];
    int m = 0;
    for (Seq s : running) {
      ks[m] = s.keys;
      len[m] = s.prefillTarget();
      done[m] = s.prefilled;
      gen[m] = s.generated;
      out[m] = s.request.outputTokens();
      chunk[m] = stepping ? s.plannedChunk : 0;
      in[m] = true;
      m++;
    }
    for (Seq s : waiting) {
      ks[m] = s.keys;
      len[m] = s.prefillTarget();
      done[m] = s.prefilled;
      gen[m] = s.generated;
      out[m] = s.request.outputTokens();
      m++;
    }
    int me = m;
    ks[me] = newKeys;
    len[me] = promptLength;
    out[me] = 1;
    java.util.Set<Long> fresh = new java.util.HashSet<>(); // blocks prefilled in the replay
    long t = stepping ? stepEndsAt : now;
    boolean decodesPlanned = stepping;
    int runningCount = running.size();
    for (int iter = 0; iter < 1_000_000; iter++) {
      if (decodesPlanned) { // apply the step planned (in progress, or just planned below)
        for (int i = 0; i < n; i++) {
          if (!in[i] || gone[i]) {
            continue;
          }
          if (done[i] >= len[i] && chunk[i] == 0) {
            if (++gen[i] >= out[i]) {
              gone[i] = true;
              runningCount--;
            }
          } else if (chunk[i] > 0) {
            done[i] += chunk[i];
            chunk[i] = 0;
            if (done[i] >= len[i]) {
              if (i == me) {
                return (t - now) / 1e6;
              }
              gen[i]++; // the first token, or a recompute's next one
              if (gen[i] >= out[i]) {
                gone[i] = true;
                runningCount--;
              }
            }
          }
        }
      }
      // plan the next step
      int budget = profile.tokenBudget();
      int decodes = 0;
      for (int i = 0; i < n; i++) {
        if (in[i] && !gone[i] && done[i] >= len[i]) {
          decodes++;
        }
      }
      budget -= decodes;
      int prefill = 0;
      for (int i = 0; i < n && budget > 0; i++) {
        if (in[i] && !gone[i] && done[i] < len[i]) {
          chunk[i] = Math.min(budget, len[i] - done[i]);
          scheduled(ks[i], done[i], chunk[i], fresh);
          prefill += chunk[i];
          budget -= chunk[i];
        }
      }
      for (int i = 0; i < n && budget > 0 && runningCount < profile.maxSeqs(); i++) {
        if (in[i] || gone[i]) {
          continue;
        }
        in[i] = true;
        runningCount++;
        if (done[i] == 0) {
          int cap = Math.min(Math.max(0, (len[i] - 1) / BackendProfile.BLOCK), ks[i].length);
          int hit = 0;
          while (hit < cap && (refs.containsKey(ks[i][hit]) || fresh.contains(ks[i][hit]))) {
            hit++;
          }
          done[i] = hit * BackendProfile.BLOCK;
        }
        chunk[i] = Math.min(budget, len[i] - done[i]);
        scheduled(ks[i], done[i], chunk[i], fresh);
        prefill += chunk[i];
        budget -= chunk[i];
      }
      if (decodes == 0 && prefill == 0) {
        return Double.NaN; // cannot happen with the new request waiting; defensive
      }
      t += profile.stepNanos(prefill, decodes, slowdown);
      decodesPlanned = true;
    }
    return Double.NaN;
  }

  /** The shadow's {@link #cacheUpTo}: the full blocks a chunk of {@code chunk} tokens covers. */
  private static void scheduled(long[] keys, int done, int chunk, java.util.Set<Long> fresh) {
    int to = Math.min(keys.length, (done + chunk) / BackendProfile.BLOCK);
    for (int b = done / BackendProfile.BLOCK; b < to; b++) {
      fresh.add(keys[b]);
    }
  }

  /**
   * Applies the planned step at its end time: tokens are produced, requests that finished free
   * their blocks, then requests whose output filled a block get another one (preempting the newest
   * other running request when none is free), as vLLM frees finished requests before it allocates
   * the next step's slots. A request that finished is never a preemption victim.
   */
  void finishStep(long now, long duration) {
    busyNanos += duration;
    prefillTokens += plannedPrefill;
    decodeTokens += plannedDecodes;
    List<Seq> done = new ArrayList<>();
    List<Seq> grow = new ArrayList<>();
    for (Seq s : running) {
      if (s.prefilled >= s.prefillTarget()) {
        // decode step
        s.generated++;
        if (onToken != null) {
          onToken.accept(s, now);
        }
        if (s.generated % BackendProfile.BLOCK == 0 && s.generated < s.request.outputTokens()) {
          grow.add(s);
        }
        if (s.generated >= s.request.outputTokens()) {
          done.add(s);
        }
      } else if (s.plannedChunk > 0) {
        s.prefilled += s.plannedChunk;
        s.plannedChunk = 0;
        if (s.prefilled >= s.prefillTarget()) {
          completePrefill(s);
          if (!s.firstTokenSent) {
            s.generated = 1; // the prefill step yields the first token
            s.firstTokenSent = true;
            s.firstTokenAt = now;
            listener.onFirstToken(s, now);
          } else if (s.recompute > 0) { // a recompute's prefill yields the next token
            s.generated++;
            if (onToken != null) {
              onToken.accept(s, now);
            }
            if (s.generated % BackendProfile.BLOCK == 0 && s.generated < s.request.outputTokens()) {
              grow.add(s);
            }
          }
          if (s.generated >= s.request.outputTokens()) {
            done.add(s);
          }
        }
      }
    }
    for (Seq s : done) {
      running.remove(s);
      release(s);
      listener.onFinished(s, now);
    }
    for (Seq s : grow) {
      if (!running.contains(s)) {
        continue; // preempted to make room for another
      }
      if (!allocate(1)) {
        preemptNewest(s);
        if (!allocate(1)) {
          continue;
        }
      }
      s.privateBlocks++;
    }
  }

  /**
   * Pins the hit prefix and reserves blocks for the rest of the prompt plus the first output (after
   * a preemption: plus the output blocks it held). The hit reported is the first admission's.
   */
  private boolean admit(Seq s) {
    int hit = cachedPrefixBlocks(s);
    for (int i = 0; i < hit; i++) {
      pin(s.keys[i]);
    }
    int need = s.keys.length - hit + 1 + s.recompute / BackendProfile.BLOCK;
    if (!allocate(need)) {
      for (int i = 0; i < hit; i++) {
        unpin(s.keys[i]);
      }
      return false;
    }
    if (!s.hitRecorded) {
      s.hitBlocks = hit;
      s.hitRecorded = true;
    }
    s.cachedBlocks = hit;
    s.privateBlocks = need;
    s.prefilled = hit * BackendProfile.BLOCK;
    if (lowerCapacity > 0 && !s.transferred) {
      int cap =
          Math.min(Math.max(0, (s.prefillTarget() - 1) / BackendProfile.BLOCK), s.keys.length);
      int j = hit;
      while (j < cap && lower.get(s.keys[j]) != null) { // get: refreshes its recency
        j++;
      }
      int tokens = (j - hit) * BackendProfile.BLOCK;
      s.prefilled += tokens;
      reloadedTokens += tokens;
      encodeExtraMs += reloadFraction * profile.prefillMsPerToken() * tokens;
    }
    s.blendBlocks = 0;
    if (blendFraction >= 0 && !s.transferred) {
      blendReuse(s);
    }
    s.admitted = true;
    if (s.transferred) { // the KV cache came from a prefill backend: cached at once, decode next
      s.prefilled = s.promptLength();
      completePrefill(s);
    }
    return true;
  }

  /**
   * Counts the blocks past what is already computed ({@code s.prefilled}, block-aligned here) that
   * lie in chunks this backend holds at another position, and skips all but {@code blendFraction}
   * of their tokens (the rest is recomputed in the prefill steps).
   */
  private void blendReuse(Seq s) {
    int cap = Math.min(Math.max(0, (s.promptLength() - 1) / BackendProfile.BLOCK), s.keys.length);
    int from = s.prefilled / BackendProfile.BLOCK;
    int blocks = 0;
    for (SimRequest.Chunk c : s.request.chunks()) {
      int lo = Math.max(c.fromBlock(), from);
      int hi = Math.min(c.fromBlock() + c.blocks(), cap);
      if (lo < hi && holdsChunk(c.id())) {
        blocks += hi - lo;
      }
    }
    int tokens = blocks * BackendProfile.BLOCK;
    s.blendBlocks = blocks;
    s.prefilled += (int) Math.round((1 - blendFraction) * tokens);
  }

  /** Whether a whole copy of the chunk is cached here; touches it (most recently used) if so. */
  private boolean holdsChunk(int chunk) {
    ArrayDeque<long[]> copies = chunkSources.get(chunk);
    if (copies == null) {
      return false;
    }
    for (Iterator<long[]> it = copies.iterator(); it.hasNext(); ) {
      long[] copy = it.next();
      boolean whole = true;
      for (long k : copy) {
        if (!refs.containsKey(k)) {
          whole = false;
          break;
        }
      }
      if (!whole) {
        it.remove(); // a block of it was evicted; recomputing those keys registers them again
        continue;
      }
      for (long k : copy) {
        if (evictable.remove(k) != null) {
          evictable.put(k, Boolean.TRUE);
        }
      }
      return true;
    }
    return false;
  }

  /** After a prefill: each chunk of the prompt is held here at the prompt's own block keys. */
  private void rememberChunks(Seq s) {
    for (SimRequest.Chunk c : s.request.chunks()) {
      int to = Math.min(c.fromBlock() + c.blocks(), s.keys.length);
      if (c.fromBlock() >= to) {
        continue;
      }
      long[] copy = java.util.Arrays.copyOfRange(s.keys, c.fromBlock(), to);
      ArrayDeque<long[]> copies = chunkSources.computeIfAbsent(c.id(), k -> new ArrayDeque<>());
      copies.removeIf(known -> java.util.Arrays.equals(known, copy));
      copies.addFirst(copy);
      if (copies.size() > SOURCES_PER_CHUNK) {
        copies.removeLast();
      }
    }
  }

  /** The prompt's full blocks not yet in the cache for this request become cached. */
  private void completePrefill(Seq s) {
    cacheUpTo(s, s.keys.length);
    if (blendFraction >= 0) {
      rememberChunks(s);
    }
  }

  /**
   * The request's full prompt blocks from {@code s.cachedBlocks} up to {@code upTo} enter the cache
   * pinned by it, each giving back the private block that held it. A block already cached (another
   * request computed it too, or the hit cap left it to be recomputed) is only pinned: one physical
   * copy is kept, so only blocks new to the cache are told as stored (one BlockStored per block
   * entering the cache, as one BlockRemoved is told when it leaves).
   */
  private void cacheUpTo(Seq s, int upTo) {
    upTo = Math.min(upTo, s.keys.length);
    int runFrom = -1;
    for (int i = s.cachedBlocks; i < upTo; i++) {
      long k = s.keys[i];
      Integer r = refs.get(k);
      if (r == null) {
        refs.put(k, 1);
        if (runFrom < 0) {
          runFrom = i;
        }
      } else {
        if (r == 0) {
          evictable.remove(k);
        }
        refs.put(k, r + 1);
        if (runFrom >= 0) {
          listener.onStored(this, s.keys, runFrom, i, s.request.tokens());
          runFrom = -1;
        }
      }
      s.privateBlocks--;
      privateBlocks--;
    }
    if (runFrom >= 0) {
      listener.onStored(this, s.keys, runFrom, upTo, s.request.tokens());
    }
    s.cachedBlocks = Math.max(s.cachedBlocks, upTo);
  }

  private void pin(long k) {
    int r = refs.get(k);
    if (r == 0) {
      evictable.remove(k);
    }
    refs.put(k, r + 1);
  }

  private void unpin(long k) {
    Integer r = refs.get(k);
    if (r == null) {
      return;
    }
    if (r == 1) {
      refs.put(k, 0);
      evictable.put(k, Boolean.TRUE);
    } else {
      refs.put(k, r - 1);
    }
  }

  /**
   * Reserves {@code n} private blocks, evicting least recently used unreferenced cached blocks as
   * needed; evicts nothing when even a cache emptied of them could not fit {@code n} (vLLM's block
   * pool checks its free count, evictable blocks included, before it allocates).
   */
  private boolean allocate(int n) {
    if (usedBlocks() - evictable.size() + n > profile.capacityBlocks()) {
      return false;
    }
    while (usedBlocks() + n > profile.capacityBlocks() && !evictable.isEmpty()) {
      Iterator<Long> it = evictable.keySet().iterator();
      long k = it.next();
      it.remove();
      refs.remove(k);
      if (lowerCapacity > 0 && lower.get(k) == null) {
        lower.put(k, Boolean.TRUE);
        listener.onOffloaded(this, k);
        if (lower.size() > lowerCapacity) {
          Iterator<Long> old = lower.keySet().iterator();
          long gone = old.next();
          old.remove();
          listener.onDroppedLower(this, gone);
        }
      }
      listener.onRemoved(this, k);
    }
    if (usedBlocks() + n > profile.capacityBlocks()) {
      return false;
    }
    privateBlocks += n;
    return true;
  }

  /** Frees a finished or preempted request: tail blocks become evictable first. */
  private void release(Seq s) {
    for (int i = s.cachedBlocks - 1; i >= 0; i--) {
      unpin(s.keys[i]);
    }
    s.cachedBlocks = 0;
    privateBlocks -= s.privateBlocks;
    s.privateBlocks = 0;
  }

  private void preemptNewest(Seq except) {
    for (int i = running.size() - 1; i >= 0; i--) {
      Seq victim = running.get(i);
      if (victim == except) {
        continue;
      }
      running.remove(i);
      release(victim);
      victim.prefilled = 0;
      victim.transferred = false; // its KV is gone: recomputed here
      victim.generated = victim.firstTokenSent ? victim.generated : 0;
      victim.recompute = victim.generated; // prompt and output so far are prefilled again
      victim.admitted = false;
      victim.plannedChunk = 0;
      waiting.addFirst(victim);
      preemptions++;
      return;
    }
  }

  /** Everything on the backend (for a crash): removed and returned. */
  List<Seq> drainAll() {
    List<Seq> all = new ArrayList<>(running);
    all.addAll(waiting);
    for (Seq s : running) {
      release(s);
    }
    running.clear();
    waiting.clear();
    return all;
  }
}
