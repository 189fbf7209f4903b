package dev.prefixrouter.scoring;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.prefixrouter.api.LoadReport;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.spi.FirstTokenObservation;
import dev.prefixrouter.api.spi.IndexSignal;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * The default scorer: the estimated time to first token of the request on each candidate, in
 * milliseconds, lower wins.
 *
 * <pre>
 * est(b)        = (queue(b) + prefill(b, P − C(b), C(b)) + kvPenalty(b) + congestion(b)) / weight(b)
 * prefill       = alpha + beta·u + gamma·u·(u + c)
 * queue(b)      = beta·pendingPrefill(b) + decode·running(b) + waitingMs·waiting(b)
 * congestion(b) = congestionWeight · (ownQueued(b) + waiting(b)) · beta·u
 * </pre>
 *
 * {@code pendingPrefill} is the router's own exact count of uncached prompt tokens sent to b and
 * not yet past their first token. {@code running} is the larger of the router's own decoding leases
 * and the backend's reported running count; {@code waiting} is the reported waiting count minus the
 * router's own open leases not yet past their first token (already counted as pending prefill).
 * Reported values fade linearly to nothing as the report ages to {@link Builder#staleAfter}, so
 * stale reports give way to the router's own counts. A backend whose reported KV usage is above
 * {@link Builder#kvPenaltyThreshold} pays a penalty growing to {@link Builder#kvPenaltyMs} at 100 %
 * (preemption risk). The congestion term ({@link Builder#congestionWeight}) charges a cold prefill
 * for the requests that will queue behind it; it is what keeps hot prefixes on their holders in
 * overload.
 *
 * <p><b>Choice.</b> The lowest estimate wins; candidates within a band ({@code max(bandMs,
 * bandFraction × best)}) of it count as tied and go to the one with fewer open leases per unit of
 * weight, then round-robin. A hot prefix spills to a second backend exactly when the holder's queue
 * delay exceeds the prefill the cache saves it — there is no global in-flight cutoff, so affinity
 * is never thrown away for everyone at once — except that a holder only briefly busy (one prefill
 * in progress) keeps a request it would lose by a small margin ({@link Builder#prefixAffinity}): a
 * spill there buys milliseconds once and costs a permanent second holder.
 *
 * <p><b>Fleet balance.</b> A backend whose share of recent decisions exceeds its fair share (by
 * weight) by more than a tolerance pays a penalty per unit of excess share ({@link
 * Builder#balance}), so a prefix hot enough to overload its holder is replicated once and then
 * split between the replicas by the band. Replicas made for balance alone are paced per target
 * backend ({@link Builder#balanceReplicaInterval}).
 *
 * <p><b>Cache pressure.</b> A candidate whose cache turns over much faster than the slowest
 * candidate's (its LRU age, {@link IndexSignal#LRU_AGE_NANOS}, below a quarter of the largest by
 * default) pays for the re-prefill its insert will cause, up to the request's own uncached prefill
 * ({@link Builder#cachePressure}): cold prefixes go where the evicted blocks are stale.
 *
 * <p><b>Calibration.</b> With {@link Builder#calibrate} on (default), each backend's coefficients
 * are fitted online from observed TTFTs (robust recursive least squares with forgetting, see
 * package docs); the fitted values show in {@code inspect()}.
 *
 * <p><b>Session affinity.</b> A request with a session id prefers the backend its session was last
 * routed to (pins in a Caffeine cache: {@link Builder#sessionTtl} after last use, at most {@link
 * Builder#maxSessions}). The pin yields — and moves — when that backend is not a candidate
 * (unhealthy, draining, removed), is saturated (reported KV usage ≥ {@link
 * Builder#saturationKvUsage}), or its estimate exceeds {@code best × affinityRatio +
 * affinityMarginMs}.
 *
 * <p>Thread-safe. Cost: O(candidates) per decision plus one cache lookup for session requests;
 * allocation: none of its own (per-thread share buffer, constant reasons).
 */
public final class EstimatedTtftScorer implements Scorer {

  private final String name;
  private final TtftCoefficients defaults;
  private final boolean calibrate;
  private final double forgetting;
  private final int minObservations;
  private final double bandMs;
  private final double bandFraction;
  private final long staleAfterNanos;
  private final double kvPenaltyThreshold;
  private final double kvPenaltyMs;
  private final double saturationKvUsage;
  private final double affinityRatio;
  private final double affinityMarginMs;
  private final double prefixAffinityRatio;
  private final int prefixAffinityMaxWaiting;
  private final double balanceTolerance;
  private final double balanceMsPerRequest;
  private final int replicaInterval;
  private final double congestionWeight;
  private final double cachePressure;
  private final double turnoverRatio;
  private final @Nullable Cache<String, Integer> sessions;

  /**
   * Where the rotation of equal costs starts: one counter for all threads. (A counter per thread
   * was tried: in a server whose pool threads each route a few requests, every thread starts at 0
   * and an idle fleet's ties all go to the same backend.)
   */
  private final AtomicInteger rotation = new AtomicInteger();

  private final RouteShares shares;
  private final Object modelsLock = new Object();
  private volatile CostModel[] models = new CostModel[64];

  private EstimatedTtftScorer(Builder b) {
    this.name = b.name;
    this.defaults = b.coefficients;
    this.calibrate = b.calibrate;
    this.forgetting = b.forgetting;
    this.minObservations = b.minObservations;
    this.bandMs = b.bandMs;
    this.bandFraction = b.bandFraction;
    this.staleAfterNanos = b.staleAfter.toNanos();
    this.kvPenaltyThreshold = b.kvPenaltyThreshold;
    this.kvPenaltyMs = b.kvPenaltyMs;
    this.saturationKvUsage = b.saturationKvUsage;
    this.affinityRatio = b.affinityRatio;
    this.affinityMarginMs = b.affinityMarginMs;
    this.prefixAffinityRatio = b.prefixAffinityRatio;
    this.prefixAffinityMaxWaiting = b.prefixAffinityMaxWaiting;
    this.balanceTolerance = b.balanceTolerance;
    this.balanceMsPerRequest = b.balanceMsPerRequest;
    this.replicaInterval = b.replicaInterval;
    this.congestionWeight = b.congestionWeight;
    this.cachePressure = b.cachePressure;
    this.turnoverRatio = b.turnoverRatio;
    this.shares = new RouteShares(b.balanceHalfLife);
    this.sessions =
        b.maxSessions == 0
            ? null
            : Caffeine.newBuilder()
                .maximumSize(b.maxSessions)
                .expireAfterAccess(b.sessionTtl)
                .executor(Runnable::run) // maintenance on the routing threads, amortized
                .build();
  }

  public static EstimatedTtftScorer defaults() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  @Override
  public String name() {
    return name;
  }

  /**
   * The candidate's cost, converted from milliseconds to nanoseconds (rounded up). The cost
   * includes the balance and congestion terms, so under load it can exceed the pure TTFT estimate
   * and the engine's SLO admission errs on the side of shedding.
   */
  @Override
  public OptionalLong estimatedTtftNanos(ScoringContext ctx, int candidate) {
    return OptionalLong.of((long) Math.ceil(ctx.cost(candidate) * 1e6));
  }

  /** The coefficients in use for a slot (fitted, or the defaults). */
  public TtftCoefficients coefficients(int slot) {
    CostModel m = model(slot, false);
    return m == null ? defaults : m.current();
  }

  private @Nullable CostModel model(int slot, boolean create) {
    CostModel[] ms = models;
    if (slot < ms.length && ms[slot] != null) {
      return ms[slot];
    }
    if (!create) {
      return null;
    }
    synchronized (modelsLock) {
      ms = models;
      if (slot >= ms.length) {
        ms = Arrays.copyOf(ms, Math.max(slot + 1, ms.length * 2));
      }
      if (ms[slot] == null) {
        ms[slot] = new CostModel(defaults, forgetting, minObservations);
      }
      models = ms;
      return ms[slot];
    }
  }

  /** The estimate for one candidate, in ms. */
  double estimate(ScoringContext ctx, int i) {
    TtftCoefficients k = coefficients(ctx.slot(i));
    double cached = ctx.matchedTokens(i);
    double uncached = Math.max(0, ctx.promptTokens() - cached);
    double prefill = k.prefillMs(uncached, cached);
    double running = ctx.runningDecodes(i);
    double waiting = 0;
    double penalty = 0;
    LoadReport load = ctx.load(i);
    if (load != null) {
      double fade = fade(ctx.loadAgeNanos(i));
      running = Math.max(running, fade * load.running());
      // the engine's waiting count includes requests this router sent and already counts as
      // pending prefill (open leases not past their first token): only the rest is extra queue
      int ownQueued = Math.max(0, ctx.inFlight(i) - ctx.runningDecodes(i));
      waiting = Math.max(0, fade * load.waiting() - ownQueued);
      if (load.kvUsage() > kvPenaltyThreshold) {
        penalty =
            fade * kvPenaltyMs * (load.kvUsage() - kvPenaltyThreshold) / (1 - kvPenaltyThreshold);
      }
    }
    double queue =
        k.betaMsPerToken() * ctx.pendingPrefillTokens(i)
            + k.decodeMsPerRunning() * running
            + k.waitingMs() * waiting;
    if (congestionWeight > 0) {
      // the uncached prefill also delays every request that queues behind it; by Little's law
      // about as many as are queued there now (own leases before their first token + the rest of
      // the reported waiting): negligible when idle, dominant in overload, where it keeps hot
      // prefixes on their holders instead of spilling them into extra cold prefills
      double queued = Math.max(0, ctx.inFlight(i) - ctx.runningDecodes(i)) + waiting;
      penalty += congestionWeight * queued * k.betaMsPerToken() * uncached;
    }
    return (queue + prefill + penalty) / ctx.backend(i).weight();
  }

  private double fade(long ageNanos) {
    if (ageNanos < 0 || ageNanos >= staleAfterNanos) {
      return 0;
    }
    return 1.0 - (double) ageNanos / staleAfterNanos;
  }

  private boolean saturated(ScoringContext ctx, int i) {
    LoadReport load = ctx.load(i);
    return load != null && fade(ctx.loadAgeNanos(i)) > 0 && load.kvUsage() >= saturationKvUsage;
  }

  @Override
  public void score(ScoringContext ctx) {
    int n = ctx.size();
    if (n == 0) {
      return;
    }
    double[] share = null; // null: balance off, or too little evidence yet
    if (balanceMsPerRequest > 0) {
      double[] buf = SHARES.get();
      if (buf.length < n) {
        buf = new double[Math.max(n, 2 * buf.length)];
        SHARES.set(buf);
      }
      share = shares.relativeShares(ctx, buf) ? buf : null;
    }
    // moving a hot prefix fixes an overload, moving a cold one only costs a cold start: scale the
    // penalty by how much of a backend's fair load this request's prefix group carries
    double hot = share == null ? 0 : Math.min(1.0, shares.hotness(prefixGroup(ctx), n));
    double[] pressure = cachePressure > 0 ? pressure(ctx) : null;
    double best = Double.POSITIVE_INFINITY;
    double bestPlain = Double.POSITIVE_INFINITY;
    int plainWinner = 0;
    double bestEstimate = Double.POSITIVE_INFINITY; // without the cache pressure
    double plainWinnerEstimate = 0;
    boolean penalized = false;
    for (int i = 0; i < n; i++) {
      double estimate = estimate(ctx, i);
      bestEstimate = Math.min(bestEstimate, estimate);
      double e = estimate + evictionMs(ctx, i, pressure);
      if (e < bestPlain) {
        bestPlain = e;
        plainWinner = i;
        plainWinnerEstimate = estimate;
      }
      if (share != null && share[i] > 1 + balanceTolerance) {
        e += (share[i] - 1 - balanceTolerance) * balanceMsPerRequest * hot;
        penalized = true;
      }
      ctx.setCost(i, e);
      best = Math.min(best, e);
    }
    int rot = rotation.getAndIncrement();
    ctx.sortByCost(rot);
    if (penalized && replicaInterval > 0) {
      // the penalty made a backend that does not even hold the prefix group win over the plain
      // winner: a new replica, paid with a cold prefill and an eviction there. Each backend takes
      // at most one per replicaInterval decisions, so the shares can show its effect before the
      // next one (without this, an underloaded backend is flooded with replicas at once and
      // evicts its own groups).
      int w = ctx.order()[0];
      if (ctx.matchedBlocks(w) < ctx.matchedBlocks(plainWinner)
          && ctx.matchedBlocks(w) < Math.min(ctx.keyCount(), PREFIX_GROUP_BLOCKS)) {
        if (!shares.tryReplica(ctx.slot(w), replicaInterval)) {
          best = Double.POSITIVE_INFINITY;
          for (int i = 0; i < n; i++) {
            double e = estimate(ctx, i) + evictionMs(ctx, i, pressure);
            ctx.setCost(i, e);
            best = Math.min(best, e);
          }
          ctx.sortByCost(rot);
        }
      }
    }
    int[] order = ctx.order();
    double limit = best + Math.max(bandMs, bandFraction * best);
    int tied = 0;
    while (tied < n && ctx.cost(order[tied]) <= limit) {
      tied++;
    }
    if (tied > 1) {
      // stable insertion sort of the band by open leases per weight (rotation order kept on ties)
      for (int a = 1; a < tied; a++) {
        int c = order[a];
        double lc = ctx.inFlight(c) / ctx.backend(c).weight();
        int j = a - 1;
        while (j >= 0 && ctx.inFlight(order[j]) / ctx.backend(order[j]).weight() > lc) {
          order[j + 1] = order[j];
          j--;
        }
        order[j + 1] = c;
      }
    }
    String reason = null;
    if (prefixAffinityRatio > 0) {
      int w = order[0];
      int keys = ctx.keyCount();
      if (keys > 0 && 2 * ctx.matchedBlocks(w) < keys) {
        for (int r = 1; r < n; r++) {
          int c = order[r];
          if (2 * ctx.matchedBlocks(c) >= keys) {
            boolean fair = share == null || share[c] <= 1 + balanceTolerance;
            boolean briefly = ctx.inFlight(c) - ctx.runningDecodes(c) <= prefixAffinityMaxWaiting;
            if (fair
                && briefly
                && !saturated(ctx, c)
                && ctx.cost(c) <= best * prefixAffinityRatio) {
              promote(order, r);
              reason = "prefix affinity";
            }
            break; // the cheapest holder decides
          }
        }
      }
    }
    String session = sessionKey(ctx.request());
    if (session != null && sessions != null) {
      Integer pinned = sessions.getIfPresent(session);
      if (pinned != null) {
        int pos = -1;
        for (int r = 0; r < n; r++) {
          if (ctx.slot(order[r]) == pinned) {
            pos = r;
            break;
          }
        }
        if (pos > 0) {
          int c = order[pos];
          if (!saturated(ctx, c) && ctx.cost(c) <= best * affinityRatio + affinityMarginMs) {
            promote(order, pos);
            reason = "session affinity";
          }
        } else if (pos == 0) {
          reason = "session affinity";
        }
      }
    }
    if (reason == null
        && pressure != null
        && order[0] == plainWinner
        && plainWinnerEstimate > bestEstimate + Math.max(bandMs, bandFraction * bestEstimate)) {
      // without the pressure the winner would not even have tied: a cheaper estimate lost for
      // what its insert would evict
      reason = "est-ttft, cache pressure";
    }
    if (reason == null) {
      reason =
          tied <= 1 ? "est-ttft" : tied < BAND_REASONS.length ? BAND_REASONS[tied] : band(tied);
    }
    // a constant: the decision's cost and cached tokens are fields of Routed already
    ctx.setReason(reason);
  }

  /**
   * Per candidate, the share of its uncached prefill it pays for what its insert evicts: {@code 1 −
   * turnoverRatio × lruAge / largest lruAge}, at least 0, over the candidates (0 for one with room,
   * 1 for a full one when another has room), in a per-thread buffer; null when no candidate's cache
   * is known to be full or no clock moves.
   */
  private double @Nullable [] pressure(ScoringContext ctx) {
    int n = ctx.size();
    double[] buf = PRESSURE.get();
    if (buf.length < n) {
      buf = new double[Math.max(n, 2 * buf.length)];
      PRESSURE.set(buf);
    }
    long largest = 0;
    boolean full = false;
    for (int i = 0; i < n; i++) {
      long signal = ctx.signal(i, IndexSignal.LRU_AGE_NANOS);
      long age = IndexSignal.isPresent(signal) ? Math.max(0, signal) : Long.MAX_VALUE;
      buf[i] = age;
      largest = Math.max(largest, age);
      full |= age != Long.MAX_VALUE;
    }
    if (!full || largest == 0) {
      return null;
    }
    for (int i = 0; i < n; i++) {
      if (buf[i] == Long.MAX_VALUE) {
        buf[i] = 0; // room: the insert evicts nothing
      } else if (largest == Long.MAX_VALUE) {
        buf[i] = 1; // another candidate has room
      } else {
        buf[i] = Math.max(0, 1 - turnoverRatio * buf[i] / largest);
      }
    }
    return buf;
  }

  /** The re-prefill this request's insert is expected to cause on candidate {@code i}, in ms. */
  private double evictionMs(ScoringContext ctx, int i, double @Nullable [] pressure) {
    if (pressure == null || pressure[i] <= 0) {
      return 0;
    }
    double cached = ctx.matchedTokens(i);
    double uncached = ctx.promptTokens() - cached;
    if (uncached <= 0) {
      return 0;
    }
    TtftCoefficients k = coefficients(ctx.slot(i));
    double ms = k.prefillMs(uncached, cached) - k.prefillMs(0, cached);
    return cachePressure * pressure[i] * ms / ctx.backend(i).weight();
  }

  /** Per-thread buffer of the candidates' cache pressure. */
  private static final ThreadLocal<double[]> PRESSURE =
      ThreadLocal.withInitial(() -> new double[16]);

  /** Moves the candidate ranked {@code pos} to the front, keeping the others' order. */
  private static void promote(int[] order, int pos) {
    int c = order[pos];
    System.arraycopy(order, 0, order, 1, pos);
    order[0] = c;
  }

  /** Per-thread buffer of the candidates' relative shares. */
  private static final ThreadLocal<double[]> SHARES = ThreadLocal.withInitial(() -> new double[16]);

  private static final String[] BAND_REASONS = new String[65];

  static {
    for (int i = 2; i < BAND_REASONS.length; i++) {
      BAND_REASONS[i] = band(i);
    }
  }

  private static String band(int tied) {
    return "est-ttft, fewest open leases in a band of " + tied;
  }

  /**
   * The pin key of a request's session: the tenant's length, a colon, the tenant, the session id.
   * The length prefix makes it injective over (tenant, session), whatever characters either holds.
   */
  static @Nullable String sessionKey(RouteRequest r) {
    String s = r.sessionId();
    return s == null ? null : r.tenant().length() + ":" + r.tenant() + s;
  }

  /** The prefix group of a request: its block key at depth 8 (or its last one), 0 if none. */
  private static long prefixGroup(ScoringContext ctx) {
    int k = ctx.keyCount();
    return k == 0 ? 0 : ctx.key(Math.min(k, PREFIX_GROUP_BLOCKS) - 1);
  }

  /** Blocks that identify a prefix group for balancing (128 tokens with 16-token blocks). */
  static final int PREFIX_GROUP_BLOCKS = 8;

  @Override
  public void onRouted(ScoringContext ctx, int candidate) {
    if (balanceMsPerRequest > 0) {
      shares.record(ctx.slot(candidate), prefixGroup(ctx));
    }
    String session = sessionKey(ctx.request());
    if (session != null && sessions != null) {
      sessions.put(session, ctx.slot(candidate));
    }
  }

  @Override
  public void onFirstToken(FirstTokenObservation observation) {
    Objects.requireNonNull(observation, "observation");
    if (calibrate) {
      CostModel m = model(observation.slot(), true);
      if (m != null) {
        m.observe(observation);
      }
    }
  }

  @Override
  public void removeBackend(int slot) {
    synchronized (modelsLock) {
      CostModel[] ms = models;
      if (slot < ms.length && ms[slot] != null) {
        CostModel[] copy = ms.clone();
        copy[slot] = null;
        models = copy;
      }
    }
    shares.forget(slot);
    if (sessions != null) {
      sessions.asMap().values().removeIf(s -> s == slot);
    }
  }

  @Override
  public Map<String, Double> describe(int slot) {
    CostModel m = model(slot, false);
    TtftCoefficients k = m == null ? defaults : m.current();
    Map<String, Double> out = new LinkedHashMap<>();
    out.put("alphaMs", k.alphaMs());
    out.put("betaMsPerToken", k.betaMsPerToken());
    out.put("gammaMsPerToken2", k.gammaMsPerToken2());
    out.put("decodeMsPerRunning", k.decodeMsPerRunning());
    out.put("waitingMs", k.waitingMs());
    out.put("observations", m == null ? 0.0 : (double) m.observations());
    out.put("residualScaleMs", m == null ? 0.0 : m.residualScale());
    return out;
  }

  /** Sessions currently pinned (approximate). */
  public long pinnedSessions() {
    return sessions == null ? 0 : sessions.estimatedSize();
  }

  @Override
  public String toString() {
    return "EstimatedTtftScorer[" + defaults + ", calibrate=" + calibrate + "]";
  }

  /** Builder; setters validate at once. */
  public static final class Builder {
    private String name = "est-ttft";
    private TtftCoefficients coefficients = TtftCoefficients.DEFAULTS;
    private boolean calibrate = true;
    private double forgetting = 0.995;
    private int minObservations = 30;
    private double bandMs = 1.0;
    private double bandFraction = 0.02;
    private Duration staleAfter = Duration.ofSeconds(2);
    private double kvPenaltyThreshold = 0.9;
    private double kvPenaltyMs = 500;
    private double saturationKvUsage = 0.98;
    private double affinityRatio = 1.5;
    private double affinityMarginMs = 50;
    private double prefixAffinityRatio = 1.5;
    private int prefixAffinityMaxWaiting = 1;
    private double balanceTolerance = 0.03;
    private double balanceMsPerRequest = 2000;
    private int balanceHalfLife = 2000;
    private int replicaInterval = 300;
    private double congestionWeight = 1.0;
    private double cachePressure = 1.0;
    private double turnoverRatio = 4.0;
    private Duration sessionTtl = Duration.ofMinutes(30);
    private long maxSessions = 100_000;

    private Builder() {}

    /** The name reported by {@link #name()} (for side-by-side variants). */
    public Builder name(String name) {
      Objects.requireNonNull(name, "name");
      if (name.isBlank()) {
        throw new IllegalArgumentException("name must not be blank");
      }
      this.name = name;
      return this;
    }

    /** Starting (and, without calibration, fixed) coefficients. */
    public Builder coefficients(TtftCoefficients coefficients) {
      this.coefficients = Objects.requireNonNull(coefficients, "coefficients");
      return this;
    }

    public Builder calibrate(boolean calibrate) {
      this.calibrate = calibrate;
      return this;
    }

    /** RLS forgetting factor in [0.9, 1]: lower tracks drift faster. */
    public Builder forgetting(double forgetting) {
      if (!(forgetting >= 0.9 && forgetting <= 1)) {
        throw new IllegalArgumentException("forgetting must be in [0.9, 1], was " + forgetting);
      }
      this.forgetting = forgetting;
      return this;
    }

    /** Observations before fitted coefficients replace the defaults, [1, 100000]. */
    public Builder minObservations(int n) {
      if (n < 1 || n > 100_000) {
        throw new IllegalArgumentException("minObservations must be in [1, 100000], was " + n);
      }
      this.minObservations = n;
      return this;
    }

    /** Near-tie band: estimates within {@code max(ms, fraction × best)} of the best tie. */
    public Builder band(double ms, double fraction) {
      if (!(ms >= 0 && ms <= 10_000) || !(fraction >= 0 && fraction <= 1)) {
        throw new IllegalArgumentException(
            "band must be ms in [0, 10000] and fraction in [0, 1], was " + ms + ", " + fraction);
      }
      this.bandMs = ms;
      this.bandFraction = fraction;
      return this;
    }

    /** Age at which a load report no longer counts (linear fade before), in (0, 1 day]. */
    public Builder staleAfter(Duration staleAfter) {
      this.staleAfter = Durations.positiveAtMost("staleAfter", staleAfter, Duration.ofDays(1));
      return this;
    }

    /** KV usage above {@code threshold} costs up to {@code ms} at 100 %. */
    public Builder kvPenalty(double threshold, double ms) {
      if (!(threshold >= 0 && threshold < 1) || !(ms >= 0 && ms <= 1e6)) {
        throw new IllegalArgumentException(
            "kvPenalty threshold must be in [0, 1) and ms in [0, 1e6], was "
                + threshold
                + ", "
                + ms);
      }
      this.kvPenaltyThreshold = threshold;
      this.kvPenaltyMs = ms;
      return this;
    }

    /** Reported KV usage at which a pinned session moves away, (0, 1]. */
    public Builder saturationKvUsage(double usage) {
      if (!(usage > 0 && usage <= 1)) {
        throw new IllegalArgumentException("saturationKvUsage must be in (0, 1], was " + usage);
      }
      this.saturationKvUsage = usage;
      return this;
    }

    /**
     * Prefix affinity: when the cheapest candidate holds less than half of the prompt's blocks and
     * the cheapest candidate holding at least half costs at most {@code best × ratio}, the holder
     * wins — provided at most {@code maxWaiting} requests wait there for their first token (its
     * queue is one prefill in progress, not a backlog), it is not above its fair share of recent
     * decisions (see {@link #balance}) and not saturated. A holder that is only briefly busy would
     * otherwise lose a few milliseconds' race to an idle backend, which then becomes a second,
     * permanent holder of the prefix: with sessions pinned to it, groups fragment and backends end
     * up unevenly loaded. Default {@code (1.5, 1)}; {@code ratio = 0} turns it off.
     */
    public Builder prefixAffinity(double ratio, int maxWaiting) {
      if (!(ratio == 0 || (ratio >= 1 && ratio <= 100))
          || maxWaiting < 0
          || maxWaiting > 1_000_000) {
        throw new IllegalArgumentException(
            "prefixAffinity ratio must be 0 (off) or in [1, 100] and maxWaiting in [0, 1000000],"
                + " was "
                + ratio
                + ", "
                + maxWaiting);
      }
      this.prefixAffinityRatio = ratio;
      this.prefixAffinityMaxWaiting = maxWaiting;
      return this;
    }

    /** A pin yields when its estimate exceeds {@code best × ratio + marginMs}. */
    public Builder affinityMargin(double ratio, double marginMs) {
      if (!(ratio >= 1 && ratio <= 100) || !(marginMs >= 0 && marginMs <= 1e6)) {
        throw new IllegalArgumentException(
            "affinityMargin ratio must be in [1, 100] and marginMs in [0, 1e6], was "
                + ratio
                + ", "
                + marginMs);
      }
      this.affinityRatio = ratio;
      this.affinityMarginMs = marginMs;
      return this;
    }

    /**
     * Fleet balance. Each backend's share of recent decisions is tracked as an exponentially
     * decayed count (half-life {@code halfLifeRoutes} decisions) relative to its weight's fair
     * share. Once there are 100 decisions per candidate, a candidate above {@code (1 + tolerance)}
     * times its fair share pays {@code msPerShare} per unit of excess share, scaled by the
     * request's prefix group's own share of recent decisions relative to one backend's fair share
     * (capped at 1; the group is the block key at depth 8): moving a hot prefix fixes an overload,
     * moving a cold one only costs a cold start. So a prefix hot enough to overload its holder gets
     * replicated to a second backend, after which the near-tie band splits its traffic between the
     * replicas. The signal is smooth on purpose: in-flight counts are too noisy and would replicate
     * prefixes on every fluctuation. {@code msPerShare = 0} turns it off. Defaults: 3 %, 2000 ms,
     * 2000 decisions (tuned on the published gateway workload).
     */
    public Builder balance(double tolerance, double msPerShare, int halfLifeRoutes) {
      if (!(tolerance >= 0 && tolerance <= 10)
          || !(msPerShare >= 0 && msPerShare <= 1e6)
          || halfLifeRoutes < 1
          || halfLifeRoutes > 10_000_000) {
        throw new IllegalArgumentException(
            "balance: tolerance in [0, 10], msPerShare in [0, 1e6], halfLifeRoutes in [1, 1e7];"
                + " was "
                + tolerance
                + ", "
                + msPerShare
                + ", "
                + halfLifeRoutes);
      }
      this.balanceTolerance = tolerance;
      this.balanceMsPerRequest = msPerShare;
      this.balanceHalfLife = halfLifeRoutes;
      return this;
    }

    /**
     * Paces replicas made for balance: when the balance penalty (and nothing else) sends a request
     * to a backend that does not hold its prefix group, that backend is not sent another such
     * request for {@code decisions} fleet-wide decisions; meanwhile the next one stays with its
     * holder. The decayed shares need that long to show the first replica's effect; without the
     * pause an underloaded backend is handed every overloaded group at once and evicts its own.
     * Moves onto a backend that already holds the group (session relocations, replica splits) are
     * never paced. {@code 0} turns pacing off. Default 300 (on the published gateway workload it
     * lifts the uniform hit rate from 99.05 % to 99.31 % at the same ±3 % balance).
     */
    public Builder balanceReplicaInterval(int decisions) {
      if (decisions < 0 || decisions > 10_000_000) {
        throw new IllegalArgumentException(
            "balanceReplicaInterval must be in [0, 10000000], was " + decisions);
      }
      this.replicaInterval = decisions;
      return this;
    }

    /**
     * Congestion cost: each candidate's cost also carries {@code weight × queued × β × uncached
     * tokens}, where {@code queued} is the requests waiting there for their first token (the
     * router's own leases plus the rest of the reported waiting count). It prices the delay this
     * request's uncached prefill imposes on the requests that will queue behind it — by Little's
     * law about as many as are queued now — which a per-request TTFT estimate ignores. Near zero at
     * light load; in overload it keeps hot prefixes on their holders rather than spilling them into
     * extra cold prefills (on the high-cache sweep at 1.5× / 3× load it cut TTFT p95 from 207 /
     * 1,370 ms to 80 / 624 ms). {@code 0} turns it off; default 1.
     */
    public Builder congestionWeight(double weight) {
      if (!(weight >= 0 && weight <= 1000)) {
        throw new IllegalArgumentException("congestionWeight must be in [0, 1000], was " + weight);
      }
      this.congestionWeight = weight;
      return this;
    }

    /**
     * Cache pressure. Each candidate whose cache is full has an LRU age ({@link
     * IndexSignal#LRU_AGE_NANOS}: how long ago the block it would evict next was used). Content
     * reused within a cache's LRU age survives there, content reused less often does not, so a
     * cache whose LRU age is far below the others' is thrashing: what an insert pushes out there is
     * still in use and will be prefilled again. A candidate whose LRU age is below {@code 1 /
     * turnoverRatio} of the largest among the candidates therefore pays {@code weight × (1 −
     * turnoverRatio × lruAge / largest) × prefill(uncached tokens)}: up to the request's own
     * uncached prefill at age 0, nothing from a quarter of the largest age up (by default), and
     * nothing on a backend that holds the whole prompt. A full candidate pays in full when another
     * has room. It steers cold prefixes away from oversubscribed caches, which balance by request
     * counts cannot see. Needs an index that tracks recency and a moving clock; otherwise it is
     * inert. {@code weight = 0} turns it off. Defaults 1 and 4: on the published gateway workload's
     * generator seeds 1–10 the skewed distribution then meets 99.3 % within ±5 % on 8 seeds instead
     * of 1; a ratio of 1 (a penalty at every age below the largest) did as well there but raised
     * the Mooncake replay's end-to-end mean by 9 % by piling cold prompts onto the stalest cache
     * (see {@code benchmarks/README.md}).
     */
    public Builder cachePressure(double weight, double turnoverRatio) {
      if (!(weight >= 0 && weight <= 100) || !(turnoverRatio >= 1 && turnoverRatio <= 1000)) {
        throw new IllegalArgumentException(
            "cachePressure: weight in [0, 100], turnoverRatio in [1, 1000]; was "
                + weight
                + ", "
                + turnoverRatio);
      }
      this.cachePressure = weight;
      this.turnoverRatio = turnoverRatio;
      return this;
    }

    /**
     * Session pins: idle TTL in (0, 365 days] and the most held in [0, 1e8] (0 turns session
     * affinity off).
     */
    public Builder sessions(Duration ttl, long maxSessions) {
      Durations.positiveAtMost("sessionTtl", ttl, Duration.ofDays(365));
      if (maxSessions < 0 || maxSessions > 100_000_000) {
        throw new IllegalArgumentException("maxSessions must be in [0, 1e8], was " + maxSessions);
      }
      this.sessionTtl = ttl;
      this.maxSessions = maxSessions;
      return this;
    }

    public EstimatedTtftScorer build() {
      return new EstimatedTtftScorer(this);
    }
  }
}
