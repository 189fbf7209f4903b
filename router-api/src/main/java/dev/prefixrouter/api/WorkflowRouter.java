package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.ScoringContext;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.LongAdder;
import org.jspecify.annotations.Nullable;

/**
 * Routes the requests of a workflow (a map-reduce fan-out, a tool chain) together, on top of a
 * {@link RoutingEngine}: each request names its place in the workflow with a {@link WorkflowStep},
 * the engine ranks the eligible backends as usual (prefix match, load, the scorer's rules), and
 * this router then moves one candidate to the front by two rules.
 *
 * <ul>
 *   <li><b>Maps co-locate while the holder has room.</b> A {@link WorkflowStep.Kind#MAP map} goes
 *       to the best-ranked backend that already took a map of its group and has room; when none has
 *       room (or none is eligible), to the best-ranked backend with room that is not one of them
 *       (the group spreads, and that backend becomes a holder too); when no candidate has room, or
 *       for the group's first map, the engine's own choice stands.
 *   <li><b>A reduce goes where most of its inputs went.</b> A {@link WorkflowStep.Kind#REDUCE
 *       reduce} goes to the backend with room where the most prompt tokens of its {@link
 *       WorkflowStep#inputs inputs} were placed (ties: the better-ranked), provided the engine's
 *       cost there is at most {@link Builder#reduceCostRatio} times its own choice's; with no such
 *       backend, the engine's own choice stands.
 * </ul>
 *
 * <p><b>Room</b> is a bound on load: fewer than {@link Builder#maxQueued} of the router's own
 * leases on the backend waiting for their first token, and a reported KV usage below {@link
 * Builder#maxKvUsage} (a report older than {@link Builder#loadStaleAfter} is ignored). Co-located
 * maps reuse the prefix their first sibling prefilled; the bound keeps a burst of siblings from
 * queueing behind each other on one backend. Two routing threads may both see the last free place
 * of a holder: the bound is exceeded by at most the number of threads routing the same group at
 * once.
 *
 * <pre>{@code
 * WorkflowRouter workflows = WorkflowRouter.builder(engine).maxQueued(8).build();
 * for (int m = 0; m < maps; m++) {
 *   workflows.route(mapRequest(m), WorkflowStep.map("job-7", "map-" + m));
 * }
 * workflows.route(reduceRequest, WorkflowStep.reduce("job-7", "reduce", mapIds));
 * }</pre>
 *
 * <p><b>Memory.</b> The router remembers, per group (scoped by tenant), where each member was
 * placed and which backends took its maps: at most {@link Builder#maxGroups} groups (the least
 * recently used is dropped beyond), {@link Builder#maxMembers} members per group (the oldest
 * forgotten beyond) and 64 holders per group; a group unused for {@link Builder#groupTtl} is
 * forgotten, and {@link #forget} drops a finished one at once. A placement is the first attempt's
 * backend: a failover is not recorded.
 *
 * <p>{@link RoutingEngine#route} itself is unchanged: a request routed without a step (directly on
 * the engine or through {@link #route(RouteRequest)}) costs nothing extra. Every decision is the
 * engine's (admission, eligibility, SLO shedding, lease, listeners, failover by the scorer alone);
 * the steering only reorders its ranking, and its reason names the rule when it changed the
 * engine's choice. Thread-safe; a workflow route costs one engine route plus O(candidates ×
 * holders) string comparisons and two short critical sections over the group memory.
 */
public final class WorkflowRouter {

  /** Reasons this router gives a decision it changed. */
  static final String COLOCATED = "workflow: co-located with its siblings";

  static final String SPREAD = "workflow: siblings' backends full, spread";
  static final String WITH_INPUTS = "workflow: placed where most of its inputs went";

  /** How a workflow route was placed, as counted by {@link Stats}. */
  enum Outcome {
    COLOCATED,
    SPREAD,
    WITH_INPUTS,
    BY_ENGINE
  }

  /**
   * Counters since the router was built.
   *
   * @param groups groups remembered now
   * @param colocated maps placed on a backend holding their siblings
   * @param spread maps placed on a new backend because every holder was full or ineligible
   * @param withInputs reduces placed where most of their inputs went
   * @param byEngine workflow routes left to the engine's choice (a group's first map, no candidate
   *     with room, a reduce with no known input on an eligible backend with room)
   * @param expiredGroups groups forgotten after {@link Builder#groupTtl} unused
   * @param evictedGroups groups dropped beyond {@link Builder#maxGroups}
   * @param forgottenMembers placements dropped beyond {@link Builder#maxMembers}
   */
  public record Stats(
      int groups,
      long colocated,
      long spread,
      long withInputs,
      long byEngine,
      long expiredGroups,
      long evictedGroups,
      long forgottenMembers) {}

  private final DefaultRoutingEngine engine;
  private final RoutePipeline pipeline;
  private final WorkflowGroups groups;
  private final int maxQueued;
  private final long maxPendingTokens;
  private final double maxKvUsage;
  private final double reduceCostRatio;
  private final long staleNanos;
  private final LongAdder[] counts = new LongAdder[Outcome.values().length];

  private WorkflowRouter(Builder b) {
    this.engine = b.engine;
    this.pipeline = engine.pipeline();
    this.groups = new WorkflowGroups(b.maxGroups, b.maxMembers, b.groupTtl.toNanos());
    this.maxQueued = b.maxQueued;
    this.maxPendingTokens = b.maxPendingTokens;
    this.maxKvUsage = b.maxKvUsage;
    this.reduceCostRatio = b.reduceCostRatio;
    this.staleNanos = b.loadStaleAfter.toNanos();
    for (int i = 0; i < counts.length; i++) {
      counts[i] = new LongAdder();
    }
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
   * Routes {@code request} as {@code step} of its workflow: the engine's decision with the ranking
   * steered by the class rules, the placement remembered when routed. Never throws for runtime
   * conditions (a rejection is the engine's {@link Rejected} value, and nothing is remembered).
   *
   * @throws NullPointerException if either argument is null
   */
  public RouteDecision route(RouteRequest request, WorkflowStep step) {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(step, "step");
    String key = WorkflowGroups.key(request.tenant(), step.group());
    long now = pipeline.ticker().getAsLong();
    Steer steer =
        step.kind() == WorkflowStep.Kind.MAP
            ? new Steer(groups.holders(key, now), null)
            : new Steer(List.of(), groups.inputTokens(key, step.inputs(), now));
    RouteDecision d = pipeline.route(request, steer);
    if (d instanceof Routed r) {
      counts[steer.outcome.ordinal()].increment();
      groups.record(
          key,
          step.member(),
          step.kind() == WorkflowStep.Kind.MAP,
          r.backendId(),
          r.promptTokens(),
          pipeline.ticker().getAsLong());
    }
    return d;
  }

  /** A request outside any workflow: exactly {@link RoutingEngine#route}. */
  public RouteDecision route(RouteRequest request) {
    return engine.route(request);
  }

  /**
   * Forgets a finished group at once (otherwise it expires after {@link Builder#groupTtl}); whether
   * it was remembered.
   */
  public boolean forget(String tenant, String group) {
    Objects.requireNonNull(tenant, "tenant");
    Objects.requireNonNull(group, "group");
    return groups.forget(WorkflowGroups.key(tenant, group));
  }

  /** The backends that took the group's maps, oldest first; empty for a group not remembered. */
  public List<String> holders(String tenant, String group) {
    Objects.requireNonNull(tenant, "tenant");
    Objects.requireNonNull(group, "group");
    return groups.holders(WorkflowGroups.key(tenant, group), pipeline.ticker().getAsLong());
  }

  /** Counters since the router was built (a consistent snapshot of each, not of all together). */
  public Stats stats() {
    return new Stats(
        groups.size(),
        counts[Outcome.COLOCATED.ordinal()].sum(),
        counts[Outcome.SPREAD.ordinal()].sum(),
        counts[Outcome.WITH_INPUTS.ordinal()].sum(),
        counts[Outcome.BY_ENGINE.ordinal()].sum(),
        groups.expired(),
        groups.evicted(),
        groups.forgottenMembers());
  }

  /** The engine the requests are routed on. */
  public RoutingEngine engine() {
    return engine;
  }

  /** Whether the candidate has room: few enough queued leases and KV use under the bound. */
  boolean room(ScoringContext c, int candidate) {
    if (c.inFlight(candidate) - c.runningDecodes(candidate) >= maxQueued
        || c.pendingPrefillTokens(candidate) >= maxPendingTokens) {
      return false;
    }
    LoadReport load = c.load(candidate);
    return load == null || c.loadAgeNanos(candidate) > staleNanos || load.kvUsage() < maxKvUsage;
  }

  /** One route's steering: holders for a map, input tokens per backend for a reduce. */
  private final class Steer implements Steering {
    private final List<String> holders;
    private final @Nullable Map<String, Long> inputs; // null for a map
    Outcome outcome = Outcome.BY_ENGINE;

    Steer(List<String> holders, @Nullable Map<String, Long> inputs) {
      this.holders = holders;
      this.inputs = inputs;
    }

    @Override
    public void steer(ScoringContext c) {
      int rank = inputs == null ? mapRank(c) : reduceRank(c);
      if (rank < 0) {
        outcome = Outcome.BY_ENGINE;
        return;
      }
      if (rank > 0) {
        int[] order = c.order();
        int chosen = order[rank];
        System.arraycopy(order, 0, order, 1, rank);
        order[0] = chosen;
        c.setReason(
            switch (outcome) {
              case COLOCATED -> COLOCATED;
              case SPREAD -> SPREAD;
              default -> WITH_INPUTS;
            });
      }
    }

    /** The rank to place a map at, or -1 for the engine's choice; sets the outcome. */
    private int mapRank(ScoringContext c) {
      if (holders.isEmpty()) {
        return -1;
      }
      int[] order = c.order();
      int spreadTo = -1;
      for (int r = 0; r < c.size(); r++) {
        int cand = order[r];
        if (!room(c, cand)) {
          continue;
        }
        if (holders.contains(c.backend(cand).id())) {
          outcome = Outcome.COLOCATED;
          return r;
        }
        if (spreadTo < 0) {
          spreadTo = r;
        }
      }
      outcome = Outcome.SPREAD;
      return spreadTo;
    }

    /** The rank to place a reduce at, or -1 for the engine's choice; sets the outcome. */
    private int reduceRank(ScoringContext c) {
      Map<String, Long> inputs = this.inputs;
      if (inputs == null || inputs.isEmpty()) {
        return -1;
      }
      int[] order = c.order();
      double top = c.cost(order[0]);
      double limit = top > 0 ? top * reduceCostRatio : Double.POSITIVE_INFINITY;
      int best = -1;
      long bestTokens = -1;
      for (int r = 0; r < c.size(); r++) {
        int cand = order[r];
        Long tokens = inputs.get(c.backend(cand).id());
        if (tokens != null && tokens > bestTokens && room(c, cand) && c.cost(cand) <= limit) {
          best = r;
          bestTokens = tokens;
        }
      }
      outcome = Outcome.WITH_INPUTS;
      return best;
    }
  }

  @Override
  public String toString() {
    return "WorkflowRouter[maxQueued="
        + maxQueued
        + ", maxKvUsage="
        + maxKvUsage
        + ", groups="
        + groups.size()
        + "]";
  }

  /** Builder of a {@link WorkflowRouter}; setters validate at once. */
  public static final class Builder {
    /** The default of {@link #reduceCostRatio}. */
    public static final double REDUCE_COST_RATIO_DEFAULT = 1.5;

    private final DefaultRoutingEngine engine;
    private int maxQueued = 8;
    private long maxPendingTokens = Long.MAX_VALUE;
    private double maxKvUsage = 0.9;
    private double reduceCostRatio = REDUCE_COST_RATIO_DEFAULT;
    private Duration loadStaleAfter = Duration.ofSeconds(5);
    private int maxGroups = 10_000;
    private int maxMembers = 1024;
    private Duration groupTtl = Duration.ofMinutes(10);

    private Builder(DefaultRoutingEngine engine) {
      this.engine = engine;
    }

    /**
     * A backend has room while fewer than this many of the router's own leases there wait for their
     * first token, in [1, 100000]; default 8.
     */
    public Builder maxQueued(int maxQueued) {
      if (maxQueued < 1 || maxQueued > 100_000) {
        throw new IllegalArgumentException("maxQueued must be in [1, 100000], was " + maxQueued);
      }
      this.maxQueued = maxQueued;
      return this;
    }

    /**
     * A backend has room while the uncached prompt tokens routed there and not yet past their first
     * token (its pending prefill, as the engine counts it) are fewer than this, in [1, 2^40];
     * default unbounded.
     */
    public Builder maxPendingTokens(long tokens) {
      if (tokens < 1 || tokens > 1L << 40) {
        throw new IllegalArgumentException("maxPendingTokens must be in [1, 2^40], was " + tokens);
      }
      this.maxPendingTokens = tokens;
      return this;
    }

    /**
     * A backend whose last load report (if fresh) shows at least this KV usage has no room, in (0,
     * 1]; default 0.9.
     */
    public Builder maxKvUsage(double maxKvUsage) {
      if (!(maxKvUsage > 0 && maxKvUsage <= 1)) {
        throw new IllegalArgumentException("maxKvUsage must be in (0, 1], was " + maxKvUsage);
      }
      this.maxKvUsage = maxKvUsage;
      return this;
    }

    /**
     * A reduce moves to its inputs' backend only if the engine's cost there is at most this many
     * times the cost of the engine's own choice, in [1, 1000] ({@code 1000}: practically
     * unbounded); default {@value #REDUCE_COST_RATIO_DEFAULT}. Unit-free, so it works with any
     * scorer whose costs are positive (with a best cost of 0 or less the ratio is not applied).
     * Under load the inputs' backends are busy decoding the maps, which the room bound does not
     * count; the engine's cost does.
     */
    public Builder reduceCostRatio(double ratio) {
      if (!(ratio >= 1 && ratio <= 1000)) {
        throw new IllegalArgumentException("reduceCostRatio must be in [1, 1000], was " + ratio);
      }
      this.reduceCostRatio = ratio;
      return this;
    }

    /** Age beyond which a load report's KV usage is ignored, in (0, 1 day]; default 5 s. */
    public Builder loadStaleAfter(Duration age) {
      this.loadStaleAfter = positiveAtMostADay("loadStaleAfter", age);
      return this;
    }

    /** Most groups remembered, in [1, 10000000]; default 10,000. */
    public Builder maxGroups(int maxGroups) {
      if (maxGroups < 1 || maxGroups > 10_000_000) {
        throw new IllegalArgumentException("maxGroups must be in [1, 10000000], was " + maxGroups);
      }
      this.maxGroups = maxGroups;
      return this;
    }

    /** Most member placements remembered per group, in [1, 1000000]; default 1,024. */
    public Builder maxMembers(int maxMembers) {
      if (maxMembers < 1 || maxMembers > 1_000_000) {
        throw new IllegalArgumentException("maxMembers must be in [1, 1000000], was " + maxMembers);
      }
      this.maxMembers = maxMembers;
      return this;
    }

    /** How long an unused group is remembered, in (0, 1 day]; default 10 minutes. */
    public Builder groupTtl(Duration ttl) {
      this.groupTtl = positiveAtMostADay("groupTtl", ttl);
      return this;
    }

    private static Duration positiveAtMostADay(String field, Duration d) {
      Objects.requireNonNull(d, field);
      if (d.isNegative() || d.isZero() || d.compareTo(Duration.ofDays(1)) > 0) {
        throw new IllegalArgumentException(field + " must be in (0, 1 day], was " + d);
      }
      return d;
    }

    /** The router; the engine is shared, not copied. */
    public WorkflowRouter build() {
      return new WorkflowRouter(this);
    }
  }
}
