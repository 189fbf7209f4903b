package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.ScoringContext;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.jspecify.annotations.Nullable;

/**
 * RAG chunk affinity over a {@link RoutingEngine}: a request carrying the ids of its retrieved
 * chunks goes to the backend that recently took the most of those chunks, in whatever order they
 * were, while that backend's cost is close to the best and it has room; otherwise the engine's
 * choice stands.
 *
 * <pre>{@code
 * ChunkAffinityRouter rag = ChunkAffinityRouter.builder(engine).build();
 * List<Chunk> ordered = ChunkOrder.canonicalById(retrieved, Chunk::id); // equal sets, equal prefixes
 * RouteRequest request = ...prompt rendered from `ordered`...;
 * RouteDecision d = rag.route(request, ordered.stream().map(Chunk::id).toList());
 * }</pre>
 *
 * <p>For engines with position-independent chunk caching (LMCache's CacheBlend style: a chunk's KV
 * computed in another context is reused at any position, a small share of its tokens recomputed).
 * On the simulator's {@code rag} workload with such engines (benchmarks/README, (i3)) it lowers
 * TTFT mean and p50 against the engine's own choice in every run (−2 to −13 %). A prefix-caching
 * engine (vLLM, SGLang without such a cache) reuses a chunk's KV only as part of a prefix, so a
 * chunk at another position is recomputed: there {@link ChunkOrder} is what pays (equal chunk sets
 * become equal prefixes, which the index already follows), and this rule did not beat est-ttft with
 * the canonical order alone (benchmarks/README, (i2)).
 *
 * <p>The rule, after the engine's scorer (the engine's cost is the baseline): among candidates
 * whose cost is at most {@link Builder#costRatio} times the best, that have room (fewer than {@link
 * Builder#maxQueued} of the engine's leases waiting for a first token there) and whose cached
 * prefix (as the index believes it) is at least as long as the engine's choice's (a prefix hit is
 * real reuse, a chunk elsewhere in a prompt is not, so the rule never trades one for the other),
 * the one holding the most of the request's chunks wins if it holds at least {@link
 * Builder#minExtraChunks} more than the engine's choice. What a backend "holds" is what this router
 * sent it: the chunk ids of the requests routed there, at most {@link Builder#maxChunksPerBackend}
 * per backend, least recently routed forgotten first (the engine's cache evicts too; this memory is
 * a belief, like the index's predictions), within the request's cache namespace (its tenant under
 * prefix isolation, its cache salt: the same chunk id from another namespace is another chunk, as
 * the engine's cache keeps them apart; the namespace is the one of the model the route resolves, an
 * alias or a split naming a LoRA adapter included). Chunk ids are at most {@link
 * #MAX_CHUNK_ID_LENGTH} characters. Memory is bounded by about {@code maxBackends ×
 * maxChunksPerBackend} ids: when a new backend id arrives and {@code maxBackends} are already
 * remembered (departed backends are never removed one by one), every backend's memory is dropped
 * and relearnt; concurrent first routes to new backends may pass the bound by one entry each.
 *
 * <p>A request with no chunk ids is exactly {@link RoutingEngine#route}. Thread-safe; one route
 * costs the engine route plus O(candidates × chunks) hash lookups under each candidate's lock.
 */
public final class ChunkAffinityRouter {
  /** Longest accepted chunk id. */
  public static final int MAX_CHUNK_ID_LENGTH = 256;

  /** The reason of a decision this router changed. */
  static final String REASON = "chunk affinity: the backend holding most of its chunks";

  private final DefaultRoutingEngine engine;
  private final RoutePipeline pipeline;
  private final int maxChunksPerBackend;
  private final int maxBackends;
  private final double costRatio;
  private final int maxQueued;
  private final int minExtraChunks;
  private final Map<String, Held> held = new ConcurrentHashMap<>();
  private final LongAdder steered = new LongAdder();
  private final LongAdder byEngine = new LongAdder();

  private ChunkAffinityRouter(Builder b) {
    this.engine = b.engine;
    this.pipeline = engine.pipeline();
    this.maxChunksPerBackend = b.maxChunksPerBackend;
    this.maxBackends = b.maxBackends;
    this.costRatio = b.costRatio;
    this.maxQueued = b.maxQueued;
    this.minExtraChunks = b.minExtraChunks;
  }

  /**
   * A builder over {@code engine}, which must be built by {@link RoutingEngine#builder()}.
   *
   * @throws IllegalArgumentException if {@code engine} is another implementation
   */
  public static Builder builder(RoutingEngine engine) {
    return new Builder(DefaultRoutingEngine.of(engine));
  }

  /**
   * Routes {@code request}, whose prompt carries the chunks {@code chunkIds} (any order; duplicates
   * count once), by the rule above; the chosen backend then holds them. Never throws for runtime
   * conditions.
   *
   * @throws NullPointerException if an argument or a chunk id is null
   * @throws IllegalArgumentException for more than {@link ChunkOrder#MAX_CHUNKS} ids, or an id
   *     longer than {@link #MAX_CHUNK_ID_LENGTH}
   */
  public RouteDecision route(RouteRequest request, Collection<String> chunkIds) {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(chunkIds, "chunkIds");
    if (chunkIds.size() > ChunkOrder.MAX_CHUNKS) {
      throw new IllegalArgumentException(
          "at most " + ChunkOrder.MAX_CHUNKS + " chunk ids, got " + chunkIds.size());
    }
    checkIds(chunkIds);
    if (chunkIds.isEmpty()) {
      return engine.route(request);
    }
    Steer steer = new Steer(request, chunkIds);
    RouteDecision d = pipeline.route(request, steer);
    if (d instanceof Routed r) {
      (steer.moved ? steered : byEngine).increment();
      Set<String> chunks = steer.chunks;
      remember(
          r.backendId(),
          chunks != null
              ? chunks
              : keys(pipeline.seeds().contentSeed(request, r.resolvedModel()), chunkIds));
    }
    return d;
  }

  /** Decisions this router changed, and those it left to the engine, since it was built. */
  public record Stats(long steered, long byEngine, int backendsRemembered) {}

  /** Counters since the router was built. */
  public Stats stats() {
    return new Stats(steered.sum(), byEngine.sum(), held.size());
  }

  /**
   * How many of {@code chunkIds} this router believes {@code backendId} holds for requests that
   * share one cache namespace: no cache salt, on an engine without prefix isolation (see {@link
   * #held(String, RouteRequest, Collection)}).
   */
  public int held(String backendId, Collection<String> chunkIds) {
    Objects.requireNonNull(chunkIds, "chunkIds");
    return held(backendId, pipeline.seeds().baseContentSeed(), chunkIds);
  }

  /**
   * How many of {@code chunkIds} this router believes {@code backendId} holds for requests like
   * {@code request}: chunk ids count within the request's cache namespace (its tenant under prefix
   * isolation, its cache salt, its adapter), as the engine's KV cache keeps them apart; the same id
   * from another namespace is another chunk. The request's model is taken after alias resolution
   * (an alias of an adapter is the adapter); a split's name is not resolved (that is a pick per
   * route).
   *
   * @throws IllegalArgumentException for an id longer than {@link #MAX_CHUNK_ID_LENGTH}
   */
  public int held(String backendId, RouteRequest request, Collection<String> chunkIds) {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(chunkIds, "chunkIds");
    checkIds(chunkIds);
    return held(
        backendId,
        pipeline.seeds().contentSeed(request, pipeline.models().alias(request)),
        chunkIds);
  }

  private int held(String backendId, long namespace, Collection<String> chunkIds) {
    Objects.requireNonNull(backendId, "backendId");
    checkIds(chunkIds);
    Held h = held.get(backendId);
    return h == null ? 0 : h.count(keys(namespace, chunkIds));
  }

  private static void checkIds(Collection<String> chunkIds) {
    for (String id : chunkIds) {
      if (Objects.requireNonNull(id, "chunk id").length() > MAX_CHUNK_ID_LENGTH) {
        throw new IllegalArgumentException(
            "chunk ids must be at most "
                + MAX_CHUNK_ID_LENGTH
                + " characters, got one of "
                + id.length());
      }
    }
  }

  /**
   * The chunk ids as remembered: within the namespace whose content seed is {@code namespace} (see
   * {@link #held}); the seed in hex and a colon, then the id: a key's size does not grow with the
   * tenant or salt, and two namespaces share keys only if their 64-bit seeds collide.
   */
  private static Set<String> keys(long namespace, Collection<String> chunkIds) {
    Set<String> keys = new HashSet<>(chunkIds.size() * 2);
    String prefix =
        Long.toHexString(namespace) + ':'; // hex has no ':': (seed, id) -> key injective
    for (String id : chunkIds) {
      keys.add(prefix + id);
    }
    return keys;
  }

  private void remember(String backendId, Set<String> chunks) {
    Held h = held.get(backendId);
    if (h == null) {
      if (held.size() >= maxBackends) {
        held.clear(); // a table full of departed backends: start over (bounded, rare)
      }
      h = held.computeIfAbsent(backendId, k -> new Held(maxChunksPerBackend));
    }
    h.add(chunks);
  }

  /** One backend's routed chunk ids, least recently routed first out. */
  private static final class Held {
    private final LinkedHashMap<String, Boolean> lru;

    Held(int max) {
      this.lru =
          new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
              return size() > max;
            }
          };
    }

    synchronized void add(Set<String> chunks) {
      for (String c : chunks) {
        lru.put(c, Boolean.TRUE);
      }
    }

    synchronized int count(Set<String> chunks) {
      int n = 0;
      for (String c : chunks) {
        if (lru.containsKey(c)) { // containsKey: no recency change for a look
          n++;
        }
      }
      return n;
    }
  }

  /** One route's steering. */
  private final class Steer implements Steering {
    private final RouteRequest request;
    private final Collection<String> ids;
    // the ids as remembered, in the namespace of the model the route resolved (an alias or a
    // split may name an adapter): made at the first steer, when the resolved model is known
    @Nullable Set<String> chunks;
    boolean moved;

    Steer(RouteRequest request, Collection<String> ids) {
      this.request = request;
      this.ids = ids;
    }

    @Override
    public void steer(ScoringContext c) {
      if (chunks == null) {
        chunks = keys(pipeline.seeds().contentSeed(request, c.model()), ids);
      }
      int[] order = c.order();
      double top = c.cost(order[0]);
      double limit = top > 0 ? top * costRatio : top;
      int baseline = count(c, order[0]);
      int prefix = c.matchedTokens(order[0]);
      int best = -1;
      int bestCount = baseline + minExtraChunks - 1;
      for (int r = 1; r < c.size(); r++) {
        int cand = order[r];
        if (c.cost(cand) > limit
            || c.inFlight(cand) - c.runningDecodes(cand) >= maxQueued
            || c.matchedTokens(cand) < prefix) {
          continue;
        }
        int n = count(c, cand);
        if (n > bestCount) {
          best = r;
          bestCount = n;
        }
      }
      if (best > 0) {
        int chosen = order[best];
        System.arraycopy(order, 0, order, 1, best);
        order[0] = chosen;
        c.setReason(REASON);
        moved = true;
      }
    }

    private int count(ScoringContext c, int cand) {
      Held h = held.get(c.backend(cand).id());
      Set<String> cs = chunks;
      return h == null || cs == null ? 0 : h.count(cs);
    }
  }

  @Override
  public String toString() {
    return "ChunkAffinityRouter[costRatio="
        + costRatio
        + ", maxQueued="
        + maxQueued
        + ", minExtraChunks="
        + minExtraChunks
        + ", maxChunksPerBackend="
        + maxChunksPerBackend
        + "]";
  }

  /** Builder of a {@link ChunkAffinityRouter}; setters validate at once. */
  public static final class Builder {
    private final DefaultRoutingEngine engine;
    private int maxChunksPerBackend = 8192;
    private int maxBackends = 1024;
    private double costRatio = 1.25;
    private int maxQueued = 4;
    private int minExtraChunks = 1;

    private Builder(DefaultRoutingEngine engine) {
      this.engine = engine;
    }

    /** Chunk ids remembered per backend, in [1, 1,000,000]; default 8,192. */
    public Builder maxChunksPerBackend(int n) {
      if (n < 1 || n > 1_000_000) {
        throw new IllegalArgumentException("maxChunksPerBackend must be in [1, 1000000], was " + n);
      }
      this.maxChunksPerBackend = n;
      return this;
    }

    /** Backends remembered, in [1, 65,536]; default 1,024. */
    public Builder maxBackends(int n) {
      if (n < 1 || n > 65_536) {
        throw new IllegalArgumentException("maxBackends must be in [1, 65536], was " + n);
      }
      this.maxBackends = n;
      return this;
    }

    /**
     * A candidate may take the request from the engine's choice only if its cost is at most this
     * multiple of the choice's (unit-free; no move when the best cost is {@code <= 0}), in [1,
     * 1000]; default 1.25.
     */
    public Builder costRatio(double ratio) {
      if (!(ratio >= 1 && ratio <= 1000)) {
        throw new IllegalArgumentException("costRatio must be in [1, 1000], was " + ratio);
      }
      this.costRatio = ratio;
      return this;
    }

    /**
     * A candidate has room while fewer than this many of the engine's leases there wait for their
     * first token, in [1, 100,000]; default 4.
     */
    public Builder maxQueued(int n) {
      if (n < 1 || n > 100_000) {
        throw new IllegalArgumentException("maxQueued must be in [1, 100000], was " + n);
      }
      this.maxQueued = n;
      return this;
    }

    /**
     * How many more of the request's chunks a candidate must hold than the engine's choice to take
     * the request, in [1, 4096]; default 1.
     */
    public Builder minExtraChunks(int n) {
      if (n < 1 || n > ChunkOrder.MAX_CHUNKS) {
        throw new IllegalArgumentException("minExtraChunks must be in [1, 4096], was " + n);
      }
      this.minExtraChunks = n;
      return this;
    }

    /** The router; the engine is shared, not copied. */
    public ChunkAffinityRouter build() {
      return new ChunkAffinityRouter(this);
    }
  }
}
