package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.ScoringContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.jspecify.annotations.Nullable;

/**
 * Routes requests of a disaggregated (prefill/decode) deployment as pairs, on top of a {@link
 * RoutingEngine}: the prefill leg is the engine's own route restricted to backends carrying {@link
 * Role#PREFILL_CAPABILITY} (so it is chosen for its cached prefix and prefill queue by the engine's
 * scorer, charged to the tenant once, recorded in the prefix index), and the decode leg is chosen
 * here among backends carrying {@link Role#DECODE_CAPABILITY} by a {@link DecodeRule}: decode load,
 * free KV cache and, when given, the {@link TransferCost} from the chosen prefill backend.
 *
 * <pre>{@code
 * RoutingEngine engine = RoutingEngine.builder()
 *     .backend(Backend.of("p0", "llama").withRole(Role.PREFILL).withCapacityBlocks(20_000))
 *     .backend(Backend.of("d0", "llama").withRole(Role.DECODE).withCapacityBlocks(40_000))
 *     .backend(Backend.of("d1", "llama").withRole(Role.DECODE).withCapacityBlocks(40_000))
 *     .scorer(EstimatedTtftScorer.defaults())
 *     .build();
 * DisaggregatedRouter pd = DisaggregatedRouter.builder(engine).build();
 * if (pd.route(request) instanceof PairRouted p) {
 *   ... prefill on p.prefillBackend(), decode on p.decode(); p.lease().firstToken(); ...
 * }
 * }</pre>
 *
 * <p>{@link RoutingEngine#route} itself is unchanged and ignores roles: a request that is not
 * routed through this class costs nothing extra. Route every request of a disaggregated model here,
 * or restrict plain routes with {@link RouteRequest.Builder#requireCapability} yourself.
 *
 * <p>Both legs count in the engine's per-backend state ({@code inspect()}: in flight, running
 * decodes), so plain and paired routes on a {@link Role#BOTH} backend see each other's load; the
 * engine's routed counters and its listeners see the prefill leg only. Thread-safe; one {@code
 * route} costs one engine route plus a pass over the registered backends for the decode leg
 * (allocating a small array per candidate set).
 *
 * <p><b>Conditional disaggregation</b> ({@link Builder#localPrefillTokens}, off by default): a
 * request whose prompt a decode-only backend already holds but for at most that many tokens is
 * served whole there (a {@link PairRouted#colocated() colocated} pair, no KV transfer): its short
 * prefill costs the decodes there little, while a remote prefill would cost it a queue and a
 * transfer. Longer uncached prefills go to the prefill backends as before. This is the threshold
 * rule of llm-d's P/D profile handler and Dynamo's conditional disaggregation (their thresholds
 * count the uncached tokens on the decode worker, as this one does).
 */
public final class DisaggregatedRouter {

  /** How the decode backend of a pair is chosen; each rule ranks the eligible decode backends. */
  public enum DecodeRule {
    /**
     * Ours: lowest estimated cost in milliseconds, {@code transfer + outputTokens × msPerKvToken ×
     * (activeTokens + reserved) / weight}: the KV transfer from the prefill backend plus the decode
     * work the request adds there, with a decode step's time growing with the KV tokens it reads
     * (memory-bound attention). A backend whose projected KV use (the larger of its reported usage
     * and its reserved tokens over its capacity) would exceed the cutoff ranks after every backend
     * below it (they are ranked by projected use), so a full backend takes a request only when all
     * are full.
     */
    ESTIMATED_COST,
    /**
     * The Dynamo anchor's decode stage (overlap credit 0): fewest active tokens (the request's own
     * blocks included), transfer and free KV ignored.
     */
    LEAST_ACTIVE_TOKENS
  }

  /**
   * The KV transfer cost between two backends, when the host knows its topology (same node, same
   * rack, across racks). Called once per decode candidate per route; must be fast, thread-safe and
   * never throw. Not called for a backend paired with itself (nothing moves).
   */
  @FunctionalInterface
  public interface TransferCost {
    /**
     * Nanoseconds to move one prompt token's KV cache from {@code prefill} to {@code decode}; must
     * be finite and {@code >= 0} (0: free).
     */
    double nanosPerToken(Backend prefill, Backend decode);
  }

  private static final EligibilityFilter[] DECODE_FILTERS = {
    EligibilityFilter.MODEL,
    EligibilityFilter.DRAINING,
    EligibilityFilter.HEALTH,
    EligibilityFilter.CAPABILITY,
    EligibilityFilter.LABEL,
    EligibilityFilter.EXCLUDED
  };

  private final DefaultRoutingEngine engine;
  private final RoutePipeline pipeline;
  private final Membership membership;
  private final TransferCost transferCost;
  private final DecodeRule rule;
  private final double kvCutoff;
  private final double msPerKvToken;
  private final int tokensPerBlock;
  private final AtomicInteger rotation = new AtomicInteger();
  private final int localPrefillTokens;
  private final LongAdder localPairs = new LongAdder();

  private DisaggregatedRouter(Builder b) {
    this.engine = b.engine;
    this.pipeline = engine.pipeline();
    this.membership = pipeline.membership();
    this.transferCost = b.transferCost;
    this.rule = b.rule;
    this.kvCutoff = b.kvCutoff;
    this.msPerKvToken = b.msPerThousandKvTokens / 1000.0;
    this.tokensPerBlock = Math.max(1, engine.tokensPerBlock());
    this.localPrefillTokens = b.localPrefillTokens;
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
   * Routes {@code request} as a prefill/decode pair. Never throws for runtime conditions: a tenant
   * over quota, no prefill backend or no decode backend is a {@link Rejected} value (with nothing
   * held and the tenant refunded).
   *
   * @throws NullPointerException if {@code request} is null
   */
  public PairDecision route(RouteRequest request) {
    Objects.requireNonNull(request, "request");
    Steering steering = steering(request);
    RouteDecision prefill =
        steering != null
            ? pipeline.route(request, steering)
            : engine.route(prefillRequest(request));
    if (prefill instanceof Rejected x) {
      return x;
    }
    return pair(request, (Routed) prefill, List.of(), 0);
  }

  /**
   * The steering of {@code request}'s prefill leg: conditional disaggregation when it is on and the
   * request does not require a prefill backend itself, else none.
   */
  @Nullable Steering steering(RouteRequest request) {
    return localPrefillTokens > 0
            && !request.requiredCapabilities().contains(Role.PREFILL_CAPABILITY)
        ? new LocalPrefill(localPrefillTokens)
        : null;
  }

  /**
   * Pairs served whole on a decode-only backend by {@link Builder#localPrefillTokens} since the
   * router was built (failovers included).
   */
  public long localPairs() {
    return localPairs.sum();
  }

  /**
   * The conditional-disaggregation rule of one route, over the engine's ranking of every eligible
   * backend (prefill-capable and decode-only): the best-ranked decode-only backend whose uncached
   * prompt tokens (prompt minus its matched prefix) are at most the threshold moves to the front;
   * when there is none, every decode-only backend moves behind every prefill-capable one, and a
   * backend with no role capability behind both (order kept within each part): the prefill leg goes
   * to a prefill backend while one can take it, as without the rule (where it requires {@link
   * Role#PREFILL_CAPABILITY}), and to a backend of neither role only when nothing else is left.
   * O(candidates), one small array.
   */
  static final class LocalPrefill implements Steering {
    static final String REASON = "local prefill: few uncached tokens on a decode backend";
    private final int maxTokens;

    LocalPrefill(int maxTokens) {
      this.maxTokens = maxTokens;
    }

    @Override
    public void steer(ScoringContext c) {
      int[] order = c.order();
      int n = c.size();
      for (int r = 0; r < n; r++) {
        int cand = order[r];
        if (decodeOnly(c.backend(cand))
            && c.promptTokens() - c.matchedTokens(cand) <= (long) maxTokens) {
          System.arraycopy(order, 0, order, 1, r);
          order[0] = cand;
          c.setReason(REASON);
          return;
        }
      }
      int[] later = new int[n]; // decode-only ones, then (from the end) those of no role
      int d = 0;
      int none = n;
      int w = 0;
      for (int r = 0; r < n; r++) {
        int cand = order[r];
        Set<String> caps = c.backend(cand).capabilities();
        if (decodeOnly(c.backend(cand))) {
          later[d++] = cand;
        } else if (!caps.contains(Role.PREFILL_CAPABILITY)
            && !caps.contains(Role.DECODE_CAPABILITY)) {
          later[--none] = cand;
        } else {
          order[w++] = cand;
        }
      }
      System.arraycopy(later, 0, order, w, d);
      for (int i = n - 1, at = w + d; i >= none; i--) {
        order[at++] = later[i]; // in rank order
      }
    }
  }

  static boolean decodeOnly(Backend b) {
    return Role.of(b.capabilities()) == Role.DECODE;
  }

  /** The engine used for the prefill leg. */
  public RoutingEngine engine() {
    return engine;
  }

  static RouteRequest prefillRequest(RouteRequest request) {
    return request.requiredCapabilities().contains(Role.PREFILL_CAPABILITY)
        ? request
        : request.toBuilder().requireCapability(Role.PREFILL_CAPABILITY).build();
  }

  /**
   * Chooses the decode leg for a placed prefill leg and opens the pair's lease; when no decode
   * backend is eligible, the prefill leg is released (tenant refunded) and the pair rejected.
   */
  PairDecision pair(
      RouteRequest request, Routed prefill, List<BackendEntry> decodeExcluded, int attempt) {
    try {
      return choose(request, prefill, decodeExcluded, attempt);
    } catch (RuntimeException | Error t) { // a throwing TransferCost: give the prefill leg back
      withdraw(prefill, "decode choice failed");
      throw t;
    }
  }

  /**
   * Whether the decode leg on {@code e} shares the prefill leg's backend (a pair served whole where
   * it prefills, or both legs placed on one backend with both roles): the prefill leg's lease
   * already counts the request there until its first token.
   */
  private static boolean sharedWith(BackendEntry e, Backend prefillBackend) {
    return e.backend.id().equals(prefillBackend.id());
  }

  /**
   * Gives a placed prefill leg back whole (its tokens and, for a first attempt, its request
   * permit): the pair never ran.
   */
  private static void withdraw(Routed prefill, String detail) {
    if (prefill.lease() instanceof DefaultLease l) {
      l.withdraw(detail);
    } else {
      prefill.lease().fail(new Failure(Failure.Kind.CANCELLED, detail));
    }
  }

  private PairDecision choose(
      RouteRequest request, Routed prefill, List<BackendEntry> decodeExcluded, int attempt) {
    long now = pipeline.ticker().getAsLong();
    String model = prefill.resolvedModel();
    RouteRequest decodeRequest =
        request.requiredCapabilities().contains(Role.DECODE_CAPABILITY)
            ? request
            : request.toBuilder().requireCapability(Role.DECODE_CAPABILITY).build();
    long reserved = (long) prefill.promptTokens() + request.maxOutputTokens();
    Backend prefillBackend = prefill.backend();
    boolean local = decodeOnly(prefillBackend); // served whole where it prefills
    List<Choice> choices = new ArrayList<>();
    EligibilityFilter furthest = null;
    for (BackendEntry e : membership.entries()) {
      if (local && !e.backend.id().equals(prefillBackend.id())) {
        continue;
      }
      EligibilityFilter failed = null;
      for (EligibilityFilter f : DECODE_FILTERS) {
        if (f.rejects(e, model, decodeRequest, decodeExcluded, pipeline.health(), now)) {
          failed = f;
          break;
        }
      }
      if (failed == null) {
        choices.add(choice(e, prefillBackend, prefill.promptTokens(), reserved, request, now));
      } else if (furthest == null || failed.compareTo(furthest) > 0) {
        furthest = failed;
      }
    }
    Choice[] ranked = choices.toArray(new Choice[0]);
    int offset = rotation.getAndIncrement();
    Arrays.sort(ranked, (a, b) -> compare(a, b, offset));
    EligibilityFilter emptiedBy =
        ranked.length == 0
            ? (furthest == null ? EligibilityFilter.MODEL : furthest)
            : EligibilityFilter.REMOVED;
    for (Choice c : ranked) {
      BackendEntry e = c.entry;
      if (!e.claim()) {
        continue;
      }
      try {
        // a pair served whole where it prefills asks its breaker once: the prefill leg took the
        // probe for this request (a second one is refused by a half-open breaker with one probe)
        if (!local && !pipeline.health().tryAcquire(e.slot, now)) {
          emptiedBy = EligibilityFilter.HEALTH;
          continue;
        }
        if (!sharedWith(e, prefillBackend)) { // else counted when its decode phase starts
          e.addInFlight(1);
          e.addActiveTokens(reserved);
        }
      } finally {
        e.release();
      }
      if (local) {
        localPairs.increment();
      }
      DefaultPairLease lease =
          new DefaultPairLease(
              this,
              request,
              prefill,
              e,
              reserved,
              decodeExcluded,
              attempt,
              local,
              now,
              sharedWith(e, prefillBackend));
      return lease.open(
          new PairRouted(
              request,
              prefill,
              e.backend,
              c.cost,
              Duration.ofNanos(c.transferNanos),
              local ? "decode: " + LocalPrefill.REASON : reason(c),
              attempt,
              lease));
    }
    withdraw(prefill, "no decode backend for the pair");
    return pipeline.reject(
        new Rejected(
            request,
            RejectReason.NO_ELIGIBLE_BACKEND,
            Duration.ZERO,
            "no decode backend: " + emptiedBy.message(model),
            emptiedBy));
  }

  /**
   * One eligible decode backend and its rank keys, its in-flight count read once (a live read
   * inside the sort could break its contract).
   */
  private record Choice(
      BackendEntry entry,
      boolean full,
      double projectedUse,
      double cost,
      long transferNanos,
      int inFlight) {}

  private Choice choice(
      BackendEntry e, Backend prefill, int promptTokens, long reserved, RouteRequest r, long now) {
    Backend d = e.backend;
    long active = Math.max(0, e.activeTokens());
    double projected = projectedUse(e, active + reserved, now);
    if (rule == DecodeRule.LEAST_ACTIVE_TOKENS) {
      return new Choice(e, false, projected, active + reserved, 0, e.inFlight());
    }
    long transferNanos = 0;
    if (!d.id().equals(prefill.id())) {
      double perToken = transferCost.nanosPerToken(prefill, d);
      if (!(perToken >= 0) || Double.isInfinite(perToken)) {
        throw new IllegalStateException(
            "transfer cost from '"
                + prefill.id()
                + "' to '"
                + d.id()
                + "' must be finite and >= 0 ns per token, was "
                + perToken);
      }
      transferNanos = (long) Math.min(Long.MAX_VALUE / 2.0, perToken * promptTokens);
    }
    double decodeMs = r.maxOutputTokens() * msPerKvToken * (active + reserved) / d.weight();
    return new Choice(
        e,
        projected > kvCutoff,
        projected,
        transferNanos / 1e6 + decodeMs,
        transferNanos,
        e.inFlight());
  }

  /**
   * The fraction of the backend's KV cache in use once the request's reserved tokens are added: the
   * larger of its last reported usage and its reserved tokens over its capacity; 0 when neither is
   * known.
   */
  private double projectedUse(BackendEntry e, long tokensWithRequest, long now) {
    double use = 0;
    BackendEntry.TimedLoad load = e.load;
    if (load != null) {
      use = load.report().kvUsage();
    }
    long capacity = e.backend.capacityBlocks();
    if (capacity > 0) {
      use = Math.max(use, tokensWithRequest / ((double) capacity * tokensPerBlock));
    }
    return use;
  }

  /**
   * Rank order: below the KV cutoff before above it; below, by cost; above, by projected use; ties
   * by fewer in flight, then by slot from a rotating offset (no backend is favoured by its slot).
   */
  private static int compare(Choice a, Choice b, int offset) {
    if (a.full != b.full) {
      return a.full ? 1 : -1;
    }
    int c =
        a.full ? Double.compare(a.projectedUse, b.projectedUse) : Double.compare(a.cost, b.cost);
    if (c != 0) {
      return c;
    }
    c = Integer.compare(a.inFlight, b.inFlight);
    if (c != 0) {
      return c;
    }
    return Integer.compare(
        Math.floorMod(a.entry.slot - offset, 1 << 16),
        Math.floorMod(b.entry.slot - offset, 1 << 16));
  }

  private String reason(Choice c) {
    return switch (rule) {
      case ESTIMATED_COST ->
          String.format(
              "decode: est %.1f ms (transfer %.1f ms), kv %.2f%s",
              c.cost, c.transferNanos / 1e6, c.projectedUse, c.full ? " over cutoff" : "");
      case LEAST_ACTIVE_TOKENS -> String.format("decode: least active tokens (%.0f)", c.cost);
    };
  }

  RoutePipeline pipeline() {
    return pipeline;
  }

  @Override
  public String toString() {
    return "DisaggregatedRouter[rule="
        + rule
        + ", kvCutoff="
        + kvCutoff
        + ", localPrefillTokens="
        + localPrefillTokens
        + "]";
  }

  /** Builder of a {@link DisaggregatedRouter}; setters validate at once. */
  public static final class Builder {
    private final DefaultRoutingEngine engine;
    private TransferCost transferCost = (p, d) -> 0;
    private DecodeRule rule = DecodeRule.ESTIMATED_COST;
    private double kvCutoff = 0.9;
    private double msPerThousandKvTokens = 0.04;
    private int localPrefillTokens;

    private Builder(DefaultRoutingEngine engine) {
      this.engine = engine;
    }

    /** The KV transfer cost between backends; default: free everywhere. */
    public Builder transferCost(TransferCost transferCost) {
      this.transferCost = Objects.requireNonNull(transferCost, "transferCost");
      return this;
    }

    /** The decode rule; default {@link DecodeRule#ESTIMATED_COST}. */
    public Builder decodeRule(DecodeRule rule) {
      this.rule = Objects.requireNonNull(rule, "rule");
      return this;
    }

    /**
     * Projected KV use above which a decode backend ranks after every backend below it, in {@code
     * (0, 1]}; default 0.9. Used by {@link DecodeRule#ESTIMATED_COST}.
     */
    public Builder kvCutoff(double kvCutoff) {
      if (!(kvCutoff > 0 && kvCutoff <= 1)) {
        throw new IllegalArgumentException("kvCutoff must be in (0, 1], was " + kvCutoff);
      }
      this.kvCutoff = kvCutoff;
      return this;
    }

    /**
     * How much one decode step slows down per thousand KV tokens it reads, in milliseconds, in
     * {@code (0, 1000]}; default 0.04 (a 7-8B model's 128 KiB per token read at about 3.3 TB/s).
     * Sets the weight of decode load against the transfer cost in {@link
     * DecodeRule#ESTIMATED_COST}.
     */
    public Builder msPerThousandKvTokens(double ms) {
      if (!(ms > 0 && ms <= 1000)) {
        throw new IllegalArgumentException("msPerThousandKvTokens must be in (0, 1000], was " + ms);
      }
      this.msPerThousandKvTokens = ms;
      return this;
    }

    /**
     * Conditional disaggregation: a request with at most this many prompt tokens uncached on some
     * decode-only backend ({@link Role#DECODE}; its matched prefix as the engine's index believes
     * it) is served whole on the best-ranked such backend (its prefill computed there, no
     * transfer); longer ones are disaggregated. In [0, 1,000,000] tokens; default 0: every request
     * is disaggregated. With a threshold the prefill leg is ranked over prefill-capable and
     * decode-only backends together (the engine's scorer, then this rule), so its request carries
     * no {@link Role#PREFILL_CAPABILITY} requirement unless the caller's did (then it is never
     * served locally). A failover of a prefill leg is ranked by the engine's scorer alone and may
     * land on a decode-only backend, which then serves the request whole.
     */
    public Builder localPrefillTokens(int tokens) {
      if (tokens < 0 || tokens > 1_000_000) {
        throw new IllegalArgumentException(
            "localPrefillTokens must be in [0, 1000000], was " + tokens);
      }
      this.localPrefillTokens = tokens;
      return this;
    }

    /** The router; the engine is shared, not copied. */
    public DisaggregatedRouter build() {
      return new DisaggregatedRouter(this);
    }
  }
}
