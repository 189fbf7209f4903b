package dev.prefixrouter.scoring;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.spi.FirstTokenObservation;
import dev.prefixrouter.api.spi.IndexSignal;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import dev.prefixrouter.api.spi.SessionPins;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * The default scorer: the estimated time to first token of the request on each candidate, in
 * milliseconds, lower wins — a sum of named {@link CostTerm}s per candidate, then a short declared
 * list of {@link RankRule}s that may reorder the ranking, each giving its reason.
 *
 * <pre>
 * cost(b) = kvPressure(b) + congestion(b) + queuePrefill(b) + lowerTier(b) + cachePressure(b)
 *           + futureWait(b) + parallelStart(b) + replicaValue(b) + balance(b) + extraWork(b)
 * queuePrefill(b) = (beta·pendingPrefill(b) + decode·running(b) + waitingMs·waiting(b)
 *                   + alpha + beta·u + gamma·u·(u + c)) / weight(b)
 * congestion(b)   = congestionWeight · (ownQueued(b) + waiting(b)) · beta·u / weight(b)
 * futureWait(b)   = a session's first request only: weight · m · 2W(b) · kept · open ({@link
 *                   Builder#futureWait})
 * parallelStart(b) = a session's first request only: weight · s · P(b) · (busy(b) − min busy)
 *                   ({@link Builder#parallelStart})
 * replicaValue(b) = − horizon · λ · r for an idle non-holder of a hot prefix whose holders all have
 *                   a prefill queued, else 0 ({@link Builder#replicaValue})
 * extraWork(b)    = weight · λ(b) · ΔS(b)² / (2 (1 − ρ(b))) / (1 + h · λ_g): the wait b's extra
 *                   prefill over the least imposes on b's later arrivals ({@link Builder#extraWork})
 * rules: replica pacing (balance), tie band, prefix affinity, session affinity
 * </pre>
 *
 * <table>
 *   <caption>Terms and rules (names for {@link Builder#without})</caption>
 *   <tr><th>name</th><th>what</th><th>tuning</th></tr>
 *   <tr><td>{@code kv-pressure}</td><td>reported KV usage above a threshold: preemption risk</td>
 *       <td>{@link Builder#kvPenalty}</td></tr>
 *   <tr><td>{@code congestion}</td><td>the delay a cold prefill imposes on the requests queued
 *       behind it</td><td>{@link Builder#congestionWeight}</td></tr>
 *   <tr><td>{@code queue-prefill}</td><td>the queue ahead plus the request's own prefill</td>
 *       <td>{@link Builder#coefficients}, {@link Builder#calibrate}</td></tr>
 *   <tr><td>{@code lower-tier}</td><td>credit for prompt blocks the backend holds on a lower
 *       tier (CPU, disk) right after its GPU match</td><td>{@link Builder#lowerTierCredit}</td></tr>
 *   <tr><td>{@code cache-pressure}</td><td>the re-prefill an insert causes on a thrashing
 *       cache</td><td>{@link Builder#cachePressure}</td></tr>
 *   <tr><td>{@code future-wait}</td><td>the share of the waits a new session's later
 *       requests will meet where it is placed that this placement decides</td>
 *       <td>{@link Builder#futureWait}</td></tr>
 *   <tr><td>{@code parallel-start}</td><td>a new session that sends requests at once: its first
 *       request where a step starts at once; its parallel siblings released from the pin</td>
 *       <td>{@link Builder#parallelStart}, {@link Builder#releaseParallelSiblings}</td></tr>
 *   <tr><td>{@code replica-value}</td><td>credit for a second holder of a hot prefix whose
 *       holders are all busy: the collisions its next requests will not wait for</td>
 *       <td>{@link Builder#replicaValue}</td></tr>
 *   <tr><td>{@code balance}</td><td>(steering) share of recent decisions above fair</td>
 *       <td>{@link Builder#balance}</td></tr>
 *   <tr><td>{@code extra-work}</td><td>the wait a candidate's prefill beyond the least imposes
 *       on the requests that reach it later</td><td>{@link Builder#extraWork}</td></tr>
 *   <tr><td>{@code replica-pacing}</td><td>rule: at most one balance-made replica per backend per
 *       interval</td><td>{@link Builder#balanceReplicaInterval}</td></tr>
 *   <tr><td>{@code tie-band}</td><td>rule: near-equal costs go to fewer open leases, then
 *       round-robin</td><td>{@link Builder#band}</td></tr>
 *   <tr><td>{@code prefix-affinity}</td><td>rule: a briefly busy holder keeps its prefix</td>
 *       <td>{@link Builder#prefixAffinity}</td></tr>
 *   <tr><td>{@code session-affinity}</td><td>rule: a session stays on its backend unless that is
 *       saturated or much slower</td><td>{@link Builder#affinityMargin}, {@link
 *       Builder#sessions}, {@link Builder#sessionPins}</td></tr>
 * </table>
 *
 * <p>Each term and rule documents its own behaviour ({@link Candidates} the load inputs). A hot
 * prefix spills to a second backend exactly when the holder's queue delay exceeds the prefill the
 * cache saves — there is no global in-flight cutoff, so affinity is never thrown away for everyone
 * at once — or, for a prefix whose own traffic keeps its holders busy, when every holder has a
 * prefill queued and the replica is worth more to the prefix's next requests than its cold prefill
 * costs this one ({@code replica-value}). Terms are summed in the declared order, built-in ones
 * first, then {@link Builder#addTerm added} ones; rules run built-in first, then {@link
 * Builder#addRule added} ones.
 *
 * <p><b>Calibration.</b> With {@link Builder#calibrate} on (default), each backend's coefficients
 * are fitted online from observed TTFTs (robust recursive least squares with forgetting), within a
 * {@link Builder#calibrationBand band} around the priors and within a {@link Builder#fleetBand
 * band} around the whole fleet's fit (narrowing to that fit as a backend's own recent first tokens
 * run out, {@link Builder#fleetBandEvidence}; a backend with no fit of its own yet uses the
 * fleet's), and only while the observed TTFTs carry a signal of the prompt's cost (their
 * correlation with the priors' estimate of the prompt's uncached prefill, the load's part removed,
 * is significant): a host that reports first tokens after a fixed or random delay, or after one
 * that follows its load but not the prompt, leaves the priors in place instead of fitting prefill
 * as free. {@code inspect()} shows the values in use, {@code fitted} (1 fitted, 0 priors), {@code
 * fleetFitInUse} (1 while the fleet's fit stands in for the backend's own), {@code fleetBand} (the
 * band around the fleet's fit the backend's fit was last published within) and the backend's own
 * {@code observations} and {@code signalT} (the correlation's t-statistic).
 *
 * <p>Thread-safe. Cost: O(candidates × (terms + rules)) per decision plus one pin lookup for
 * session requests; allocation: none of its own on the steady state (a per-thread {@link
 * Candidates} with its buffers, constant reasons) but a session request's key string (built once
 * per route) and, for a session's first request only, its entries in the session caches ({@code
 * future-wait}, {@code parallel-start}).
 */
public final class EstimatedTtftScorer implements Scorer {

  private final String name;
  private final TtftCoefficients defaults;
  private final boolean calibrate;
  private final double forgetting;
  private final int minObservations;
  private final double calibrationBand;
  private final double fleetBand;
  private final double fleetBandEvidence;
  private final double calibrationAdvantage;
  private final boolean calibrateIntercept;
  private final double bandMs;
  private final double bandFraction;
  private final long staleAfterNanos;
  private final double saturationKvUsage;
  private final CostTerm[] terms;
  private final RankRule[] rules;
  private final Object[] owners; // terms, then rules: the keys of Candidates.state
  // the terms and rules that override a hook, so that the hot path calls no empty defaults
  private final CostTerm[] reasonTerms;
  private final CostTerm[] routedTerms;
  private final RankRule[] defaultReasonRules;
  private final RankRule[] routedRules;
  private final @Nullable SessionAffinityRule sessionRule;
  private final @Nullable PendingPrefixes pendingPrefix;
  private final PendingPrefixScope pendingPrefixScope;
  private final boolean bandKeepsIdenticalCopies;
  private final ThreadLocal<Candidates> candidates;

  /**
   * Where the rotation of equal costs starts: one counter for all threads. (A counter per thread
   * was tried: in a server whose pool threads each route a few requests, every thread starts at 0
   * and an idle fleet's ties all go to the same backend.)
   */
  private final AtomicInteger rotation = new AtomicInteger();

  private final Object modelsLock = new Object();

  /** The fit over every backend's observations (scope fleet or hierarchical), else null. */
  private final @Nullable CostModel fleetModel;

  private final CalibrationScope scope;
  private volatile CostModel[] models = new CostModel[64];

  /**
   * Per slot: its model's published coefficients (null while it has no model), beside the models so
   * that a decision reads them without touching the model, whose fields every observation writes.
   * Written with {@link #models}, under {@link #modelsLock}.
   */
  private volatile PublishedCoefficients[] ownPublished = new PublishedCoefficients[64];

  /** The fleet model's published coefficients, or null. */
  private final @Nullable PublishedCoefficients fleetPublished;

  private final double speedShrinkage;
  private final SlotTable<SpeedFactor> speeds = new SlotTable<>(modelsLock); // FLEET_SCALED
  private final double backendShrinkage; // scope SHRUNK
  private final java.util.concurrent.atomic.AtomicLong fleetFirstTokens =
      new java.util.concurrent.atomic.AtomicLong(); // SHRUNK, BACKEND's fleetBandEvidence
  private final double speedMargin; // scope IDLE_SPEED
  private final long speedEvidenceMaxQueued; // scope IDLE_SPEED
  private final SlotTable<IdleSpeed> idleSpeeds = new SlotTable<>(modelsLock); // IDLE_SPEED
  private final @Nullable IdleSpeed fleetIdleSpeed; // scope IDLE_SPEED only

  private EstimatedTtftScorer(Builder b) {
    this.name = b.name;
    this.defaults = b.coefficients;
    this.calibrate = b.calibrate;
    this.forgetting = b.forgetting;
    this.minObservations = b.minObservations;
    this.calibrationBand = b.calibrationBand;
    this.calibrationAdvantage = b.calibrationAdvantage;
    this.calibrateIntercept = b.calibrateIntercept;
    this.scope = b.scope;
    this.speedShrinkage = b.speedShrinkage;
    this.backendShrinkage = b.backendShrinkage;
    this.speedMargin = b.speedMargin;
    this.speedEvidenceMaxQueued = b.speedEvidenceMaxQueued;
    this.fleetIdleSpeed = b.scope == CalibrationScope.IDLE_SPEED ? newIdleSpeed() : null;
    this.fleetBand = b.fleetBand;
    this.fleetBandEvidence = b.fleetBandEvidence;
    this.fleetModel =
        b.scope == CalibrationScope.BACKEND && b.fleetBand == Builder.FLEET_BAND_OFF
            ? null
            : new CostModel(
                b.coefficients,
                b.forgetting,
                b.minObservations,
                b.calibrationBand,
                b.calibrationAdvantage,
                b.calibrateIntercept,
                null,
                null,
                0,
                0);
    this.fleetPublished = fleetModel == null ? null : fleetModel.published();
    this.bandMs = b.bandMs;
    this.bandFraction = b.bandFraction;
    this.staleAfterNanos = b.staleAfter.toNanos();
    this.saturationKvUsage = b.saturationKvUsage;
    List<CostTerm> ts = new ArrayList<>();
    List<RankRule> rs = new ArrayList<>();
    // the order of the built-in terms is the order the sum was always taken in (ties and
    // rounding stay as they were); steering terms last
    if (b.kvPenaltyMs > 0) {
      ts.add(new KvPressureTerm(b.kvPenaltyThreshold, b.kvPenaltyMs));
    }
    if (b.congestionWeight > 0) {
      ts.add(new CongestionTerm(b.congestionWeight));
    }
    ts.add(new QueuePrefillTerm());
    if (b.lowerTierCredit > 0) {
      ts.add(new LowerTierTerm(b.lowerTierCredit));
    }
    if (b.cachePressure > 0) {
      ts.add(new CachePressureTerm(b.cachePressure, b.turnoverRatio));
    }
    FutureWaitTerm futureWait = null;
    if (b.futureWaitWeight > 0 && !b.without.contains(FutureWaitTerm.NAME)) {
      futureWait =
          new FutureWaitTerm(
              b.futureWaitWeight,
              b.futureWaitTau.toNanos(),
              b.coefficients,
              b.sessionTtl.toNanos(),
              b.maxSessions);
      ts.add(futureWait);
    }
    ParallelStartTerm parallelStart = null;
    if ((b.parallelStartWeight > 0 || b.releaseParallelSiblings)
        && !b.without.contains(ParallelStartTerm.NAME)) {
      parallelStart =
          new ParallelStartTerm(
              b.parallelStartWeight,
              b.releaseParallelSiblings,
              b.releaseSiblingsOnlyToIdle,
              b.coefficients,
              b.sessionTtl.toNanos(),
              b.maxSessions);
      ts.add(parallelStart);
    }
    if (b.replicaHorizonSeconds > 0) {
      ts.add(
          new ReplicaValueTerm(
              b.replicaHorizonSeconds, b.replicaMinLoad, ReplicaValueTerm.MAX_PREFIXES));
    }
    BalanceTerm balance = null;
    if (b.balanceMsPerRequest > 0 && !b.without.contains(BalanceTerm.NAME)) {
      balance =
          new BalanceTerm(
              b.balanceTolerance, b.balanceMsPerRequest, b.balanceHalfLife, b.replicaInterval);
      ts.add(balance);
      RankRule pacing = balance.pacing();
      if (pacing != null) {
        rs.add(pacing);
      }
    }
    if (b.extraWorkWeight > 0) {
      ts.add(
          new ExtraWorkTerm(
              b.extraWorkWeight,
              b.extraWorkGroupHorizon,
              b.extraWorkIdleShare,
              b.extraWorkIdleWeight,
              b.extraWorkIdleMinUtilisation,
              b.coefficients));
    }
    rs.add(new TieBandRule(b.bandKeepsIdenticalCopies));
    if (b.prefixAffinityRatio > 0) {
      rs.add(new PrefixAffinityRule(b.prefixAffinityRatio, b.prefixAffinityMaxWaiting, balance));
    }
    SessionPins pins =
        b.pins != null
            ? b.pins
            : b.maxSessions == 0 ? null : InProcessSessionPins.create(b.sessionTtl, b.maxSessions);
    SessionAffinityRule session =
        pins == null
            ? null
            : new SessionAffinityRule(
                b.affinityRatio,
                b.affinityMarginMs,
                pins,
                !b.balanceMovesSessions,
                Arrays.stream(new CostTerm[] {futureWait, parallelStart})
                    .filter(Objects::nonNull)
                    .toArray(CostTerm[]::new), // a new session's terms: not in the hold test
                parallelStart);
    if (session != null) {
      rs.add(session);
    }
    ts.removeIf(t -> b.without.contains(t.name()));
    rs.removeIf(r -> b.without.contains(r.name()));
    this.sessionRule = rs.contains(session) ? session : null;
    this.pendingPrefixScope = b.pendingPrefix;
    this.bandKeepsIdenticalCopies = b.bandKeepsIdenticalCopies;
    this.pendingPrefix =
        b.pendingPrefix == PendingPrefixScope.OFF
            ? null
            : new PendingPrefixes(b.coefficients, b.pendingPrefix == PendingPrefixScope.SESSION);
    ts.addAll(b.addedTerms);
    rs.addAll(b.addedRules);
    Set<String> names = new HashSet<>();
    for (CostTerm t : ts) {
      if (!names.add(t.name())) {
        throw new IllegalArgumentException("two terms or rules are named '" + t.name() + "'");
      }
    }
    for (RankRule r : rs) {
      if (!names.add(r.name())) {
        throw new IllegalArgumentException("two terms or rules are named '" + r.name() + "'");
      }
    }
    this.terms = ts.toArray(new CostTerm[0]);
    this.rules = rs.toArray(new RankRule[0]);
    this.reasonTerms =
        ts.stream()
            .filter(t -> overrides(t, CostTerm.class, "reason", Candidates.class))
            .toArray(CostTerm[]::new);
    this.routedTerms =
        ts.stream()
            .filter(t -> overrides(t, CostTerm.class, "onRouted", ScoringContext.class, int.class))
            .toArray(CostTerm[]::new);
    this.defaultReasonRules =
        rs.stream()
            .filter(r -> overrides(r, RankRule.class, "defaultReason", Candidates.class))
            .toArray(RankRule[]::new);
    this.routedRules =
        rs.stream()
            .filter(r -> overrides(r, RankRule.class, "onRouted", ScoringContext.class, int.class))
            .toArray(RankRule[]::new);
    this.owners = new Object[terms.length + rules.length];
    System.arraycopy(terms, 0, owners, 0, terms.length);
    System.arraycopy(rules, 0, owners, terms.length, rules.length);
    CostTerm[] t = terms;
    int o = owners.length;
    // the supplier captures no scorer: the value it makes must not reach the scorer (Candidates)
    this.candidates = ThreadLocal.withInitial(() -> new Candidates(t, o));
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

  /** Names of the terms, in the order they are summed. */
  public List<String> termNames() {
    List<String> out = new ArrayList<>(terms.length);
    for (CostTerm t : terms) {
      out.add(t.name());
    }
    return out;
  }

  /** Names of the rules, in the order they run. */
  public List<String> ruleNames() {
    List<String> out = new ArrayList<>(rules.length);
    for (RankRule r : rules) {
      out.add(r.name());
    }
    return out;
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

  /**
   * The coefficients in use for a slot (fitted, or the defaults). Scaled by a backend's speed
   * factor (scopes FLEET_SCALED, IDLE_SPEED), each is held within the {@link
   * Builder#calibrationBand calibration band} around the priors, as the scorer uses them.
   */
  public TtftCoefficients coefficients(int slot) {
    if (scope == CalibrationScope.SHRUNK
        || scope == CalibrationScope.IDLE_SPEED
        || scope == CalibrationScope.FLEET_SCALED) {
      double[] v = new double[5];
      readCoefficients(slot, v, 0);
      return TtftCoefficients.clamped(v[0], v[1], v[2], v[3], v[4]);
    }
    CostModel m = effectiveModel(slot);
    return m == null ? defaults : m.current();
  }

  /**
   * The slot's speed factor over the fleet's fit (1 unless the scope is FLEET_SCALED or
   * IDLE_SPEED).
   */
  private double speedFactor(int slot) {
    if (scope == CalibrationScope.IDLE_SPEED) {
      IdleSpeed is = idleSpeeds.get(slot);
      return is != null ? is.factor() : 1.0;
    }
    SpeedFactor ss = speeds.get(slot);
    return ss != null ? ss.factor() : 1.0;
  }

  private IdleSpeed newIdleSpeed() {
    return new IdleSpeed(
        forgetting, speedMargin, IDLE_SPEED_Z, IDLE_SPEED_MIN_EVIDENCE, calibrationBand);
  }

  /** Scope IDLE_SPEED: standard errors a speed difference must exceed to be published. */
  static final double IDLE_SPEED_Z = 3.0;

  /** Scope IDLE_SPEED: forgotten idle-start first tokens a backend needs before it is tested. */
  static final double IDLE_SPEED_MIN_EVIDENCE = 10.0;

  private IdleSpeed idleSpeed(int slot) {
    return idleSpeeds.getOrCreate(slot, this::newIdleSpeed);
  }

  private SpeedFactor speed(int slot) {
    return speeds.getOrCreate(
        slot, () -> new SpeedFactor(forgetting, speedShrinkage, calibrationBand));
  }

  /** The model whose coefficients a slot uses (null: the defaults). */
  private @Nullable CostModel effectiveModel(int slot) {
    CostModel f = fleetModel;
    if (f == null) {
      return model(slot, false);
    }
    if (scope == CalibrationScope.BACKEND) { // BACKEND's fleet fit bounds, and stands in for none
      CostModel own = model(slot, false);
      return f.fitted() && withoutOwnFit(own) ? f : own;
    }
    CostModel own = scope == CalibrationScope.HIERARCHICAL ? model(slot, false) : null;
    return own != null && own.fitted() ? own : f;
  }

  /**
   * Copies the coefficients in use for a slot into {@code out[at..at+5)} (alpha, beta, gamma,
   * decode, waiting) without allocating.
   */
  void readCoefficients(int slot, double[] out, int at) {
    if (scope == CalibrationScope.SHRUNK) {
      readShrunk(slot, out, at);
      return;
    }
    PublishedCoefficients m = published(slot);
    if (m == null) {
      TtftCoefficients k = defaults;
      out[at] = k.alphaMs();
      out[at + 1] = k.betaMsPerToken();
      out[at + 2] = k.gammaMsPerToken2();
      out[at + 3] = k.decodeMsPerRunning();
      out[at + 4] = k.waitingMs();
    } else {
      m.readInto(out, at);
    }
    if (scope == CalibrationScope.IDLE_SPEED) {
      double s = speedFactor(slot); // scales the whole estimate: a slower GPU's steps are slower
      for (int j = 0; j < 5; j++) {
        out[at + j] *= s;
      }
      holdWithinBand(out, at);
    } else if (scope == CalibrationScope.FLEET_SCALED) {
      double s = speedFactor(slot);
      out[at + 1] *= s;
      out[at + 2] *= s;
      out[at + 3] *= s;
      out[at + 4] *= s;
      holdWithinBand(out, at);
    }
  }

  /**
   * Holds scaled coefficients (alpha, beta, gamma, decode at {@code out[at..at+4)}) within the
   * calibration band around the priors, as {@link CostModel} publishes a fit: a fleet fit already
   * at the band's edge times a speed factor up to the band itself reached band² times the prior.
   */
  private void holdWithinBand(double[] out, int at) {
    TtftCoefficients p = defaults;
    double b = calibrationBand;
    out[at] = CostModel.alphaWithinBand(out[at], p, b);
    out[at + 1] = CostModel.betaWithinBand(out[at + 1], p, b);
    out[at + 2] = CostModel.gammaWithinBand(out[at + 2], p, b);
    out[at + 3] = CostModel.decodeWithinBand(out[at + 3], p, b);
  }

  /** Scope SHRUNK: the fleet's fit moved toward the slot's own published fit by its weight. */
  private void readShrunk(int slot, double[] out, int at) {
    CostModel f = Objects.requireNonNull(fleetModel);
    f.published().readInto(out, at);
    CostModel own = model(slot, false);
    double w = ownWeight(own);
    if (own != null && w > 0) {
      double[] k = SHRINK_SCRATCH.get();
      own.published().readInto(k, 0);
      for (int j = 0; j < 5; j++) {
        out[at + j] += w * (k[j] - out[at + j]);
      }
    }
  }

  /** Scope SHRUNK: the weight of a slot's own fit, {@code n / (n + backendShrinkage)}. */
  private double ownWeight(@Nullable CostModel own) {
    if (own == null || !own.fitted()) {
      return 0;
    }
    double n = own.evidence(fleetFirstTokens.get());
    return n + backendShrinkage > 0 ? n / (n + backendShrinkage) : 0;
  }

  private static final ThreadLocal<double[]> SHRINK_SCRATCH =
      ThreadLocal.withInitial(() -> new double[5]);

  /**
   * Scope BACKEND: whether a backend has no fit of its own for the fleet's to stand in for (none
   * published yet: too few first tokens or no prefix signal in them), as opposed to one that the
   * advantage gate holds back because the priors predict its first tokens as well.
   */
  private static boolean withoutOwnFit(@Nullable CostModel own) {
    return own == null || (!own.fitted() && !own.heldByAdvantage());
  }

  /** The published coefficients of {@link #effectiveModel} (null: the defaults). */
  private @Nullable PublishedCoefficients published(int slot) {
    if (scope == CalibrationScope.BACKEND) {
      CostModel f = fleetModel;
      if (f != null && f.fitted() && withoutOwnFit(model(slot, false))) {
        return f.published(); // a backend without a fit of its own uses the fleet's
      }
      PublishedCoefficients[] ps = ownPublished;
      return slot < ps.length ? ps[slot] : null;
    }
    if (scope == CalibrationScope.HIERARCHICAL) {
      CostModel m = effectiveModel(slot);
      return m == null ? null : m.published();
    }
    return fleetPublished;
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
      if (slot < ms.length && ms[slot] != null) {
        return ms[slot];
      }
      // Always a fresh copy, never a store into the published array: a reader holding the old
      // array would otherwise see the new model through a plain store, unordered with its fields.
      ms = Arrays.copyOf(ms, slot < ms.length ? ms.length : Math.max(slot + 1, ms.length * 2));
      CostModel created =
          new CostModel(
              defaults,
              forgetting,
              minObservations,
              calibrationBand,
              ownAgainstFleet() ? fleetAdvantage() : calibrationAdvantage,
              calibrateIntercept,
              ownAgainstFleet() ? Objects.requireNonNull(fleetModel).published() : null,
              boundedByFleet() ? Objects.requireNonNull(fleetModel).published() : null,
              fleetBand,
              fleetBandEvidence);
      ms[slot] = created;
      PublishedCoefficients[] ps =
          Arrays.copyOf(ownPublished, Math.max(ownPublished.length, ms.length));
      ps[slot] = created.published();
      ownPublished = ps;
      models = ms;
      return created;
    }
  }

  /** Whether a backend's own fit is judged against the fleet's (hierarchical scope). */
  private boolean ownAgainstFleet() {
    return fleetModel != null && scope == CalibrationScope.HIERARCHICAL;
  }

  /** Whether a backend's own fit is published within the fleet band (scope BACKEND). */
  private boolean boundedByFleet() {
    return fleetModel != null && scope == CalibrationScope.BACKEND;
  }

  /** The margin a backend's own fit must beat the fleet's by (hierarchical scope). */
  private double fleetAdvantage() {
    return Double.isNaN(calibrationAdvantage) ? 0.1 : calibrationAdvantage;
  }

  /**
   * The estimate for one candidate, in ms: the time terms ({@code kv-pressure}, {@code congestion},
   * {@code queue-prefill}, {@code lower-tier}) without cache pressure and balance.
   */
  double estimate(ScoringContext ctx, int i) {
    Candidates c = candidates.get();
    c.reset(ctx, this, terms, owners);
    PendingPrefixes p = pendingPrefix;
    if (p != null) {
      p.adjust(c);
    }
    double e = 0;
    double[] out = new double[ctx.size()];
    for (CostTerm t : terms) {
      if (t instanceof KvPressureTerm
          || t instanceof CongestionTerm
          || t instanceof QueuePrefillTerm
          || t instanceof LowerTierTerm) {
        t.costs(c, out);
        e += out[i];
      }
    }
    c.end();
    return e;
  }

  /**
   * Whether the near-tie band keeps identical copies ({@link Builder#bandKeepsIdenticalCopies}).
   */
  public boolean bandKeepsIdenticalCopies() {
    return bandKeepsIdenticalCopies;
  }

  /** Which requests the pending-prefix view applies to ({@link Builder#pendingPrefix}). */
  public PendingPrefixScope pendingPrefixScope() {
    return pendingPrefixScope;
  }

  /** Weight of a load report of this age: 1 when fresh, linearly to 0 at {@code staleAfter}. */
  double fade(long ageNanos) {
    if (ageNanos < 0 || ageNanos >= staleAfterNanos) {
      return 0;
    }
    return 1.0 - (double) ageNanos / staleAfterNanos;
  }

  double saturationKvUsage() {
    return saturationKvUsage;
  }

  double bandLimit(double cost) {
    return cost + Math.max(bandMs, bandFraction * cost);
  }

  @Override
  public void score(ScoringContext ctx) {
    int n = ctx.size();
    if (n == 0) {
      return;
    }
    Candidates c = candidates.get();
    c.reset(ctx, this, terms, owners);
    try {
      PendingPrefixes p = pendingPrefix;
      if (p != null) {
        p.adjust(c);
      }
      c.sum(rotation.getAndIncrement());
      String reason = null;
      for (RankRule r : rules) {
        String why = r.apply(c);
        if (why != null) {
          reason = why;
        }
      }
      if (reason == null) {
        for (CostTerm t : reasonTerms) {
          reason = t.reason(c);
          if (reason != null) {
            break;
          }
        }
      }
      if (reason == null) {
        for (RankRule r : defaultReasonRules) {
          String why = r.defaultReason(c);
          if (why != null) {
            reason = why;
          }
        }
      }
      // a constant: the decision's cost and cached tokens are fields of Routed already
      ctx.setReason(reason == null ? "est-ttft" : reason);
    } finally {
      c.end();
    }
  }

  /** Whether {@code o}'s class overrides the interface's default method (or cannot tell). */
  private static boolean overrides(Object o, Class<?> iface, String method, Class<?>... params) {
    try {
      return o.getClass().getMethod(method, params).getDeclaringClass() != iface;
    } catch (NoSuchMethodException e) {
      return true;
    }
  }

  /**
   * The pin key of a request's session: the tenant's length, a colon, the tenant, the session id.
   * The length prefix makes it injective over (tenant, session), whatever characters either holds.
   * Built once per route: the terms and rules that ask for it while the route is scored and
   * recorded (four calls for a session request) get the thread's last key back while the tenant and
   * session strings are the same objects; the memo holds only those two strings and the key.
   */
  static @Nullable String sessionKey(RouteRequest r) {
    String s = r.sessionId();
    if (s == null) {
      return null;
    }
    String tenant = r.tenant();
    String[] m = SESSION_KEYS.get(); // tenant, session, key
    if (m[1] != s || m[0] != tenant) { // identity: the same request's own strings
      m[2] = tenant.length() + ":" + tenant + s;
      m[1] = s;
      m[0] = tenant;
    }
    return m[2];
  }

  /**
   * The routing thread's last tenant, session and key: JDK types only, so the value a thread keeps
   * does not hold this library's class loader (an application server's redeploy).
   */
  private static final ThreadLocal<String[]> SESSION_KEYS =
      ThreadLocal.withInitial(() -> new String[3]);

  /**
   * The candidate's matched tokens less those another request routed there is still about to
   * prefill ({@link Builder#pendingPrefix}); the matched tokens when that is off.
   */
  @Override
  public int cachedTokens(ScoringContext ctx, int candidate) {
    int matched = ctx.matchedTokens(candidate);
    PendingPrefixes p = pendingPrefix;
    return p == null ? matched : Math.max(0, matched - p.pendingTokens(ctx, candidate));
  }

  @Override
  public void onRouted(ScoringContext ctx, int candidate) {
    PendingPrefixes p = pendingPrefix;
    if (p != null) {
      p.onRouted(ctx, candidate);
    }
    for (CostTerm t : routedTerms) {
      t.onRouted(ctx, candidate);
    }
    for (RankRule r : routedRules) {
      r.onRouted(ctx, candidate);
    }
  }

  @Override
  public void onFirstToken(FirstTokenObservation observation) {
    Objects.requireNonNull(observation, "observation");
    onFirstToken(
        observation.slot(),
        observation.ttftNanos(),
        observation.promptTokens(),
        observation.matchedTokens(),
        observation.queuedPrefillTokens(),
        observation.runningDecodes(),
        observation.estimatedCost());
  }

  /** As {@link #onFirstToken(FirstTokenObservation)}, allocating nothing. */
  @Override
  public void onFirstToken(
      int slot,
      long ttftNanos,
      int promptTokens,
      int matchedTokens,
      long queuedPrefillTokens,
      int runningDecodes,
      double estimatedCost) {
    if (!calibrate) {
      return;
    }
    int uncached = promptTokens - matchedTokens;
    CostModel f = fleetModel;
    if (f != null) {
      // speeds learn only while the fleet's first tokens carry a prefix signal: without one the
      // fleet keeps its priors, and a factor over them would learn the host's delay, not a speed
      boolean speedEvidence = scope.scalesFleetFit() && f.hasSignal();
      if (speedEvidence && scope == CalibrationScope.FLEET_SCALED) {
        // against the fleet's fit before it learns from this first token
        observeSpeed(
            f, slot, ttftNanos, uncached, matchedTokens, queuedPrefillTokens, runningDecodes);
      } else if (speedEvidence
          && scope == CalibrationScope.IDLE_SPEED
          && queuedPrefillTokens <= speedEvidenceMaxQueued) {
        observeIdleSpeed(
            f, slot, ttftNanos, uncached, matchedTokens, queuedPrefillTokens, runningDecodes);
      }
      f.observe(ttftNanos, uncached, matchedTokens, queuedPrefillTokens, runningDecodes);
      if (scope == CalibrationScope.FLEET
          || scope == CalibrationScope.FLEET_SCALED
          || scope == CalibrationScope.IDLE_SPEED) {
        return;
      }
    }
    CostModel m = model(slot, true);
    if (m == null) {
      return;
    }
    if (scope == CalibrationScope.SHRUNK) {
      m.observe(ttftNanos, uncached, matchedTokens, queuedPrefillTokens, runningDecodes);
      m.addEvidence(fleetFirstTokens.incrementAndGet());
    } else if (boundedByFleet() && fleetBandEvidence > 0) {
      long fc = fleetFirstTokens.incrementAndGet();
      m.addEvidence(fc); // first: the fit below is published with it
      m.observe(ttftNanos, uncached, matchedTokens, queuedPrefillTokens, runningDecodes);
      // one other backend per first token, in turn: its bound follows the fleet's fit and its
      // decaying evidence while it gets no first tokens (a stale high fit would starve it for good)
      CostModel[] ms = models;
      int other = (int) (fc % ms.length);
      CostModel o = other == slot ? null : ms[other];
      if (o != null) {
        o.republish(fc);
      }
    } else {
      m.observe(ttftNanos, uncached, matchedTokens, queuedPrefillTokens, runningDecodes);
    }
  }

  private void observeSpeed(
      CostModel fleet,
      int slot,
      long ttftNanos,
      int uncachedTokens,
      int matchedTokens,
      long queuedPrefill,
      int decodes) {
    double[] k = SPEED_SCRATCH.get();
    fleet.published().readInto(k, 0);
    double variable = fleetEstimate(k, 0, uncachedTokens, matchedTokens, queuedPrefill, decodes);
    speed(slot).observe(variable, ttftNanos / 1e6 - k[0]);
  }

  /**
   * {@code start} plus the fleet fit's variable estimate (coefficients {@code k} as published:
   * alpha, beta, gamma, decode), added left to right: with {@code start} 0 the variable part alone,
   * with alpha the whole estimate (the same additions in the same order either way).
   */
  private static double fleetEstimate(
      double[] k, double start, int uncachedTokens, int matchedTokens, long queued, int decodes) {
    double u = Math.max(0, uncachedTokens);
    return start
        + k[1] * (u + Math.max(0, queued))
        + k[2] * u * (u + Math.max(0, matchedTokens))
        + k[3] * Math.max(0, decodes);
  }

  private static final ThreadLocal<double[]> SPEED_SCRATCH =
      ThreadLocal.withInitial(() -> new double[5]);

  /**
   * Scope IDLE_SPEED: one first token routed while the slot had no prefill queued (at most {@link
   * Builder#speedEvidenceMaxQueued}), against the fleet's whole estimate before the fit learns from
   * it; feeds the slot's and the fleet's idle-start speed and re-tests the slot's against the
   * fleet's.
   */
  private void observeIdleSpeed(
      CostModel fleet,
      int slot,
      long ttftNanos,
      int uncachedTokens,
      int matchedTokens,
      long queuedPrefill,
      int decodes) {
    double[] k = SPEED_SCRATCH.get();
    fleet.published().readInto(k, 0);
    double estimate = fleetEstimate(k, k[0], uncachedTokens, matchedTokens, queuedPrefill, decodes);
    double observed = ttftNanos / 1e6;
    IdleSpeed pooled = Objects.requireNonNull(fleetIdleSpeed);
    pooled.observe(estimate, observed);
    IdleSpeed own = idleSpeed(slot);
    own.observe(estimate, observed);
    pooled.slopeInto(k);
    own.test(k[0], k[1]);
  }

  @Override
  public void addBackend(int slot, Backend backend) {
    for (RankRule r : rules) {
      r.addBackend(slot, backend);
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
        PublishedCoefficients[] ps = ownPublished.clone();
        ps[slot] = null;
        ownPublished = ps;
      }
      speeds.remove(slot);
      idleSpeeds.remove(slot);
      PendingPrefixes p = pendingPrefix;
      if (p != null) {
        p.removeBackend(slot);
      }
    }
    for (CostTerm t : terms) {
      t.removeBackend(slot);
    }
    for (RankRule r : rules) {
      r.removeBackend(slot);
    }
  }

  @Override
  public Map<String, Double> describe(int slot) {
    CostModel m = effectiveModel(slot);
    // BACKEND scope: the fleet's fit stands in for a backend without its own; the statistics below
    // are still the backend's own (its observations, residual scale and signal), not the fleet's
    boolean fleetStandsIn = scope == CalibrationScope.BACKEND && m != null && m == fleetModel;
    CostModel stats = fleetStandsIn ? model(slot, false) : m;
    TtftCoefficients k = coefficients(slot);
    Map<String, Double> out = new LinkedHashMap<>();
    out.put("alphaMs", k.alphaMs());
    out.put("betaMsPerToken", k.betaMsPerToken());
    out.put("gammaMsPerToken2", k.gammaMsPerToken2());
    out.put("decodeMsPerRunning", k.decodeMsPerRunning());
    out.put("waitingMs", k.waitingMs());
    out.put("observations", stats == null ? 0.0 : (double) stats.observations());
    out.put("residualScaleMs", stats == null ? 0.0 : stats.residualScale());
    out.put("fitted", m != null && m.fitted() ? 1.0 : 0.0); // the coefficients in use are a fit
    out.put("signalT", stats == null ? 0.0 : stats.signalT());
    if (scope == CalibrationScope.BACKEND && fleetModel != null) {
      out.put("fleetFitInUse", fleetStandsIn ? 1.0 : 0.0);
    }
    if (scope == CalibrationScope.HIERARCHICAL || !Double.isNaN(calibrationAdvantage)) {
      // the backend's own fit's forgotten error over the reference's (the fleet's or the priors')
      CostModel own = scope == CalibrationScope.FLEET ? fleetModel : model(slot, false);
      out.put("fitErrorRatio", own == null ? Double.NaN : own.errorRatio());
    }
    if (scope == CalibrationScope.FLEET_SCALED || scope == CalibrationScope.IDLE_SPEED) {
      out.put("speedFactor", speedFactor(slot));
    }
    if (scope == CalibrationScope.SHRUNK) {
      out.put("ownWeight", ownWeight(model(slot, false)));
    }
    if (boundedByFleet()) {
      // the factor the backend's fit was last published within, around the fleet's fit (NaN
      // while it has published none: it uses the fleet's fit, or the priors while the fleet has
      // none either)
      CostModel own = model(slot, false);
      out.put("fleetBand", own != null && own.fitted() ? own.fleetBandInUse() : Double.NaN);
    }
    return out;
  }

  /** Sessions currently pinned (approximate). */
  public long pinnedSessions() {
    return sessionRule == null ? 0 : sessionRule.pins().size();
  }

  @Override
  public String toString() {
    return "EstimatedTtftScorer["
        + defaults
        + ", calibrate="
        + calibrate
        + ", terms="
        + termNames()
        + ", rules="
        + ruleNames()
        + "]";
  }

  /** Builder; setters validate at once. */
  public static final class Builder {
    private String name = "est-ttft";
    private TtftCoefficients coefficients = TtftCoefficients.DEFAULTS;
    private boolean calibrate = true;
    private double forgetting = 0.995;
    private int minObservations = 30;
    private double speedShrinkage = 20;
    private double backendShrinkage = 20;
    private double speedMargin = 0.25;
    private long speedEvidenceMaxQueued;
    private double calibrationBand = 8;

    /** {@link #fleetBand} value that turns the bound off. */
    static final double FLEET_BAND_OFF = Double.POSITIVE_INFINITY;

    private double fleetBand = 2;
    private double fleetBandEvidence = 1;
    private double calibrationAdvantage = Double.NaN;
    private boolean calibrateIntercept = true;
    private CalibrationScope scope = CalibrationScope.BACKEND;
    private double bandMs = 1.0;
    private double bandFraction = 0.02;
    private boolean bandKeepsIdenticalCopies = true;
    private Duration staleAfter = Duration.ofSeconds(2);
    private double kvPenaltyThreshold = 0.9;
    private double kvPenaltyMs = 500;
    private double saturationKvUsage = 0.98;
    private double affinityRatio = 1.5;
    private double affinityMarginMs = 50;
    private boolean balanceMovesSessions = false;
    private double prefixAffinityRatio = 1.5;
    private int prefixAffinityMaxWaiting = 1;
    private double balanceTolerance = 0.03;
    private double balanceMsPerRequest = 2000;
    private int balanceHalfLife = 2000;
    private int replicaInterval = 300;
    private double congestionWeight = 1.0;
    private double cachePressure = 1.0;
    private double lowerTierCredit = 0.8;
    private double futureWaitWeight = 64;
    private Duration futureWaitTau = Duration.ZERO;
    private double parallelStartWeight = 1;
    private PendingPrefixScope pendingPrefix = PendingPrefixScope.OFF;
    private boolean releaseParallelSiblings = true;
    private boolean releaseSiblingsOnlyToIdle = false;
    private double replicaHorizonSeconds = 10;
    private double replicaMinLoad = 0.05;
    private double extraWorkWeight = 2;
    private double extraWorkGroupHorizon = 1;
    private double extraWorkIdleShare = 0.75;
    private double extraWorkIdleWeight = 0.5;
    private double extraWorkIdleMinUtilisation = 0;

    private double turnoverRatio = 4.0;
    private Duration sessionTtl = Duration.ofMinutes(30);
    private long maxSessions = 100_000;
    private @Nullable SessionPins pins;
    private final Set<String> without = new LinkedHashSet<>();
    private final List<CostTerm> addedTerms = new ArrayList<>();
    private final List<RankRule> addedRules = new ArrayList<>();

    private Builder() {}

    /** Names of the built-in terms and rules, for {@link #without}. */
    public static final List<String> BUILT_IN =
        List.of(
            KvPressureTerm.NAME,
            CongestionTerm.NAME,
            QueuePrefillTerm.NAME,
            LowerTierTerm.NAME,
            CachePressureTerm.NAME,
            FutureWaitTerm.NAME,
            ParallelStartTerm.NAME,
            ReplicaValueTerm.NAME,
            BalanceTerm.NAME,
            ExtraWorkTerm.NAME,
            "replica-pacing",
            TieBandRule.NAME,
            PrefixAffinityRule.NAME,
            SessionAffinityRule.NAME);

    /**
     * Leaves out a built-in term or rule by name (see the class table), e.g. to compare variants.
     * Leaving out {@code balance} also leaves out its {@code replica-pacing}.
     *
     * @throws IllegalArgumentException for a name that is not built in, listing those that are
     */
    public Builder without(String termOrRule) {
      Objects.requireNonNull(termOrRule, "termOrRule");
      if (!BUILT_IN.contains(termOrRule)) {
        throw new IllegalArgumentException(
            "no built-in term or rule '" + termOrRule + "'; known: " + String.join(", ", BUILT_IN));
      }
      without.add(termOrRule);
      return this;
    }

    /**
     * Adds a cost term, summed after the built-in ones (and after earlier added ones). Its name
     * must differ from every other term's and rule's ({@link #build} checks).
     */
    public Builder addTerm(CostTerm term) {
      addedTerms.add(Objects.requireNonNull(term, "term"));
      return this;
    }

    /** Adds a rank rule, run after the built-in ones (and after earlier added ones). */
    public Builder addRule(RankRule rule) {
      addedRules.add(Objects.requireNonNull(rule, "rule"));
      return this;
    }

    /**
     * The store of session pins (default: {@link InProcessSessionPins} sized by {@link #sessions});
     * a shared store lets several router replicas keep a session on one backend.
     */
    public Builder sessionPins(SessionPins pins) {
      this.pins = Objects.requireNonNull(pins, "pins");
      return this;
    }

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

    /**
     * With {@link CalibrationScope#BACKEND} (the default scope): how far a backend's own fitted
     * coefficients may stray from the fleet's, a factor ≥ 1 (default 2; {@code
     * Double.POSITIVE_INFINITY} turns the bound off). The scorer then also fits one model from
     * every backend's first tokens, and each backend's fit is published with every coefficient
     * within [fleet/factor, max(fleet, prior/calibrationBand)·factor] of that fleet fit (the floor
     * keeps a fleet coefficient fitted to 0 from pinning every backend's; as of the backend's
     * latest first token, or of its latest renewal: see {@link #fleetBandEvidence}, which narrows
     * the band for a backend with little recent evidence of its own). A backend without a published
     * fit of its own (too few first tokens, no prefix signal in them) uses the fleet's fit while
     * the fleet has one, else the priors; one whose fit the {@link #calibrationAdvantage advantage
     * gate} holds back keeps the priors.
     *
     * <p>Why: per-backend fits are needed for a mixed fleet (a GPU 2× slower fits 1.3× the fleet's
     * cost where half the fleet is such), but on a fleet past saturation each backend's fit absorbs
     * the queueing it happened to see, and equal backends were fitted up to 60× apart (the decode
     * cost 0 on one, 4 ms per running request on another), so the router piled work on whichever
     * looked cheap. Measured (benchmarks/README.md, issue #18 session 22): TTFT p95 at 4× the
     * published (b) load, high-cache 1.09 → 0.98 of the best anchor's over four seeds, low-cache's
     * one runaway trajectory of eight (1.63×) gone. Cost: one more O(1) model update per first
     * token, under the fleet model's lock; per decision and candidate, a check whether the backend
     * has a fit of its own.
     *
     * @throws IllegalArgumentException unless factor ≥ 1
     */
    public Builder fleetBand(double factor) {
      if (!(factor >= 1)) { // also rejects NaN; +infinity turns the bound off
        throw new IllegalArgumentException("fleetBand must be >= 1, was " + factor);
      }
      this.fleetBand = factor;
      return this;
    }

    /**
     * With the {@link #fleetBand fleet band} on: how much recent evidence of its own a backend
     * needs for the whole band, {@code k} in [0, 10000] (default 1; 0: the whole band whatever the
     * evidence, as before this option). A backend's fit is published within [fleet/K, max(fleet,
     * prior/calibrationBand)·K] with {@code K = 1 + (fleetBand − 1) · n / (n + k)}, {@code n} its
     * own first tokens, each decaying by the {@link #forgetting forgetting factor} at every first
     * token of the fleet; the bound is renewed at each of its own first tokens and, while it gets
     * none, when its slot's turn comes (one slot of the scorer's slot table per fleet first token:
     * each at least every max(64, slots) fleet first tokens).
     *
     * <p>The band depends on the share of first tokens a backend gets, so on the fleet's size: with
     * the default forgetting (0.995) a backend with a 1/N share settles at n ≈ 200/N, K ≈ 1.98 for
     * N = 16, 1.78 for N = 64 (less between its first tokens); with forgetting 1 evidence never
     * decays and a starved backend keeps its band. A backend placed again after starving re-enters
     * at K ≈ 1.5 around its own fit, which its new first tokens then correct.
     *
     * <p>Why: a fit is only renewed by the backend's own first tokens. A backend whose fit came out
     * high (the collisions it happened to absorb, the collinear shape of one workload's prompts) is
     * placed last, gets no first tokens and keeps that fit for good: at light load on 16 equal
     * backends three of them were starved this way (60 requests each against ~300) and TTFT p95
     * rose to 1.3–1.6× the best anchor's on 2 of 14 seeds (benchmarks/README.md, issue #18 session
     * 23). With its evidence gone such a backend is priced at the fleet's fit, gets first tokens
     * again and learns its own; a backend that keeps its traffic keeps its own fit (a GPU 2× slower
     * in a mixed fleet still fits 2×). Cost: at most one short locked update of one other backend's
     * bound per first token; nothing per decision. {@code inspect()} shows each backend's band in
     * use ({@code fleetBand}).
     *
     * @throws IllegalArgumentException unless k is in [0, 10000]
     */
    public Builder fleetBandEvidence(double k) {
      if (!(k >= 0 && k <= 10_000)) { // also rejects NaN
        throw new IllegalArgumentException("fleetBandEvidence must be in [0, 10000], was " + k);
      }
      this.fleetBandEvidence = k;
      return this;
    }

    /**
     * How far calibration may move the prefill coefficients from {@link #coefficients}, a factor in
     * [1, 1000] (default 8): β stays in [β/band, β·band], γ, the decode cost and the constant α in
     * [0, prior·band]. 1 pins β to the prior and lets the others only fall below theirs.
     */
    public Builder calibrationBand(double band) {
      if (!(band >= 1 && band <= 1000)) {
        throw new IllegalArgumentException("calibrationBand must be in [1, 1000], was " + band);
      }
      this.calibrationBand = band;
      return this;
    }

    /**
     * Publishes a backend's fit only while it predicts that backend's observed TTFTs better than
     * the priors: each observation is first predicted by both (before the fit learns from it), and
     * the fit is used while its forgotten absolute error is at most {@code 1 - advantage} times the
     * priors' (until it is no longer below them). In [0, 0.9]; {@code NaN} (default) turns the
     * comparison off (the fit is used whenever the TTFTs carry a prefix signal).
     */
    public Builder calibrationAdvantage(double advantage) {
      if (!Double.isNaN(advantage) && !(advantage >= 0 && advantage <= 0.9)) {
        throw new IllegalArgumentException(
            "calibrationAdvantage must be in [0, 0.9] or NaN, was " + advantage);
      }
      this.calibrationAdvantage = advantage;
      return this;
    }

    /**
     * Whether calibration fits the constant α per backend (default true; published within the
     * {@link #calibrationBand band}, [0, α·band]); false keeps the prior's α and fits only the
     * per-token and per-running-request costs, which then absorb any constant the prior does not
     * carry. Before the band applied to α, a fitted constant absorbed the queueing the queue term
     * does not model (0.6–1.9 s on some backends of one homogeneous fleet under overload, 0 on
     * others) and piled work where it happened to be low; false was the remedy for saturated
     * fleets. With the band the two are within 0.04 of the best anchor's TTFT p95 of each other on
     * every simulated workload and rate but RL-rollout bursts, where false is 0.04–0.08 lower
     * (benchmarks/README.md, issue #18 session 22; false cost the Mooncake trace at 4× 2.7 % of p95
     * in session 21).
     */
    public Builder calibrateIntercept(boolean fit) {
      this.calibrateIntercept = fit;
      return this;
    }

    /**
     * With {@link CalibrationScope#FLEET_SCALED}: how many pseudo-observations at the fleet's speed
     * a backend's speed factor starts from, in [0, 10,000] (default 20): the factor is {@code (n·ŝ
     * + k) / (n + k)} for {@code n} forgotten observations whose own least-squares factor is {@code
     * ŝ}. Larger keeps backends closer to the fleet's fit.
     */
    public Builder speedShrinkage(double k) {
      if (!(k >= 0 && k <= 10_000)) {
        throw new IllegalArgumentException("speedShrinkage must be in [0, 10000], was " + k);
      }
      this.speedShrinkage = k;
      return this;
    }

    /**
     * With {@link CalibrationScope#SHRUNK}: how many decaying first tokens of its own a backend
     * needs for its fit to weigh as much as the fleet's, in [0, 10,000] (default 20): the weight of
     * its own fit is {@code n / (n + k)}.
     */
    public Builder backendShrinkage(double k) {
      if (!(k >= 0 && k <= 10_000)) {
        throw new IllegalArgumentException("backendShrinkage must be in [0, 10000], was " + k);
      }
      this.backendShrinkage = k;
      return this;
    }

    /**
     * With {@link CalibrationScope#IDLE_SPEED}: the relative difference between a backend's
     * idle-start speed and the fleet's below which the backend is priced with the fleet's fit
     * unscaled, in (0, 10] (default 0.25: a GPU 25 % slower or faster). The difference must also
     * exceed three standard errors ({@code IDLE_SPEED_Z}) of the two slopes.
     */
    public Builder speedMargin(double margin) {
      if (!(margin > 0 && margin <= 10)) {
        throw new IllegalArgumentException("speedMargin must be in (0, 10], was " + margin);
      }
      this.speedMargin = margin;
      return this;
    }

    /**
     * With {@link CalibrationScope#IDLE_SPEED}: the most prefill tokens that may have been queued
     * on a backend when a request was routed there for its first token to count as speed evidence,
     * in [0, Long.MAX_VALUE] (default 0: idle starts only). Larger admits first tokens that waited
     * behind a queue, whose waits on equal GPUs differ by queueing the model leaves out.
     */
    public Builder speedEvidenceMaxQueued(long tokens) {
      if (tokens < 0) {
        throw new IllegalArgumentException("speedEvidenceMaxQueued must be >= 0, was " + tokens);
      }
      this.speedEvidenceMaxQueued = tokens;
      return this;
    }

    /** Whose observations a fit learns from; see {@link CalibrationScope}. */
    public Builder calibrationScope(CalibrationScope scope) {
      this.scope = Objects.requireNonNull(scope, "scope");
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

    /**
     * Whether the near-tie band keeps an identical copy of a prompt with its holder (default true
     * since issue #18 session 34): when a tied candidate holds every block of the request that an
     * engine can serve from cache (or is prefilling them: an identical sibling routed there), no
     * steering term (balance) lifted its cost, and some candidate has a prefill queued, the band
     * goes to that holder before the fewest open leases. A near tie is no reason to prefill the
     * same prompt again on another backend: it duplicates the KV and takes an idle backend from the
     * new prompts arriving meanwhile (measured on RL rollout bursts: benchmarks/README.md, issue
     * #18 session 34). With nothing queued anywhere the band spreads as before. {@code false}: a
     * near tie goes to the fewest open leases alone.
     */
    public Builder bandKeepsIdenticalCopies(boolean keeps) {
      this.bandKeepsIdenticalCopies = keeps;
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
     * Whether the balance term may move a pinned session (default false since issue #18 session 17;
     * true before). With {@code false}, a session's pin yields only to time and saturation: {@link
     * #affinityMargin}'s comparison uses the costs without the balance term, so balance places new
     * sessions and sessionless requests but never re-prefills a session's history elsewhere for the
     * fleet's shares; {@link #futureWait} then spreads sessions where they start.
     */
    public Builder balanceMovesSessions(boolean moves) {
      this.balanceMovesSessions = moves;
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
     * Prices where a new session will wait (issue #18): the first request of a session (a {@link
     * RouteRequest#sessionId} not seen before) pays {@code weight × m × 2 W(b) × kept × open} more
     * on each backend, {@code W(b)} the mean M/G/1 wait of the prefill work routed to b (decayed
     * with time constant {@code tau}) and {@code m} the expected further requests of a session,
     * learned from the traffic. A session's later requests follow its first one (their history is
     * there), so this is the wait they will meet and impose; later requests pay nothing. {@code
     * kept = 1 / (1 + N / n)} is the share of that wait this placement still decides when the fleet
     * places {@code N} other new sessions on {@code n} candidates before the session's next
     * request; {@code open} fades the term out as the shortest candidate queue approaches {@code
     * tau} (a saturated fleet: the next request meets the backlog it finds). See {@code
     * FutureWaitTerm}. {@code weight} 0 turns it off. Default: {@code futureWait(64,
     * Duration.ZERO)} (since issue #18 session 17; off before).
     *
     * <p>{@code tau} 0 learns it: the mean gap between a session's consecutive requests (the
     * horizon at which its next request will meet the backend's load).
     *
     * <p>Measured (benchmarks/README.md, issue #18 session 17, held-out seeds): {@code
     * futureWait(64, Duration.ZERO)} with {@code balanceMovesSessions(false)} takes agentic tool
     * loops' TTFT p95 from 1.09× / 1.06× to 0.91× / 0.89× the best anchor's at 1× / 2× (0.66× to
     * 0.57× at 4×) and leaves multi-turn chats and map-reduce sessions as they were or better; on
     * long chats it costs 0.4 % of mean TTFT at 1× (the hit rate 0.8 points lower on two of four
     * seeds) and about a point of p95 at 4×, as much as a null perturbation moves it there. It is
     * the default with {@code balanceMovesSessions(false)}: the agentic and multi-turn gains are
     * 10–19 points of p95, the long-chat cost under half a point of mean (still below every
     * anchor's mean). Requests without a session route as without it (the term charges them
     * nothing), but every routed request adds its prefill time to its backend's decayed sums (one
     * per-backend monitor and an {@code exp}).
     *
     * @throws IllegalArgumentException unless weight is in [0, 1000] and tau 0 or in [1 ms, 1 h]
     */
    public Builder futureWait(double weight, Duration tau) {
      Objects.requireNonNull(tau, "tau");
      if (!(weight >= 0 && weight <= 1000)
          || (!tau.isZero() && tau.compareTo(Duration.ofMillis(1)) < 0)
          || tau.compareTo(Duration.ofHours(1)) > 0) {
        throw new IllegalArgumentException(
            "futureWait: weight in [0, 1000], tau 0 or in [1 ms, 1 h]; was " + weight + ", " + tau);
      }
      this.futureWaitWeight = weight;
      this.futureWaitTau = tau;
      return this;
    }

    /**
     * Parallel start of a new session: the first request of a session (a {@link
     * RouteRequest#sessionId} not seen before) pays {@code weight × s × P(b) × (busy(b) − min
     * busy)} more on each backend, where {@code busy(b)} is 1 when the backend has work in flight
     * (a step in progress, 0 when idle), {@code P(b)} the configured coefficients' prefill time of
     * the request's uncached tokens without the intercept, and {@code s} the learned number of a
     * new session's requests that arrive while its first one's prefill runs (its parallel siblings:
     * a map-reduce job's maps on one document). On a busy backend the first request and its
     * siblings wait for the step in progress; on an idle one its step starts at once. Sessions
     * whose requests follow each other have {@code s} about 0 and pay nothing; requests without a
     * session and later requests of a session pay nothing. See {@code ParallelStartTerm}. {@code
     * weight} 0 turns it off. Default 1 (since issue #18 session 18; off before): on map-reduce
     * jobs sent as one session per job (8–16 maps at once on a 4k document) the fan-out's TTFT is
     * lower with it (on the simulator corrected in session 32, with the release, p95 / mean 119.5 /
     * 86.0 ms against 142.0 / 104.0 without the term at 1×, seed 1; benchmarks/README.md);
     * sequential sessions (agentic tool loops, chats) have no siblings and route exactly as without
     * it.
     *
     * @throws IllegalArgumentException unless weight is in [0, 1000]
     */
    public Builder parallelStart(double weight) {
      if (!(weight >= 0 && weight <= 1000)) {
        throw new IllegalArgumentException("parallelStart: weight in [0, 1000]; was " + weight);
      }
      this.parallelStartWeight = weight;
      return this;
    }

    /**
     * Which requests count a prefix another request is still about to prefill on a candidate as not
     * cached there. The index holds a routed request's blocks at once; a request routed with the
     * same prefix to a busy backend before the step in progress ends waits behind the first one's
     * prefill (derived from an engine model in which it recomputes the prefix; vLLM v1 lets it hit
     * the blocks scheduled, see {@code PendingPrefixes}). Where the scope applies, those tokens are
     * uncached in the decision (for the terms and rules that read the decision's cached tokens, see
     * {@code PendingPrefixes}) and for the engine ({@link EstimatedTtftScorer#cachedTokens}:
     * pending prefill, the decision's {@code matchedTokens}, the first tokens the calibration
     * learns from). Requests that share no new prefix with a request routed to a busy backend
     * within its step, and requests to idle backends, route as without it.
     *
     * <p>Default {@link PendingPrefixScope#OFF} since issue #18 session 33 ({@link
     * PendingPrefixScope#SESSION} in sessions 26–32): on the simulator corrected for vLLM v1's
     * scheduling, the view only changes a session fan-out's routing, and there it costs TTFT p95 in
     * 17 of 18 cells (map-reduce maps, seeds 1–6 at 1×/2×/4×: p95 0.1–14.3 % lower with the view
     * off, 0.6 % higher in one; means within ±1.1 %); agentic traffic, chats, RL rollouts with or
     * without sessions and the other workloads route identically (benchmarks/README.md, session
     * 33). {@link PendingPrefixScope#ALL} also spreads sessionless fan-outs at a small cost to
     * agentic and mixed-length traffic (session 26). In every scope an identical copy of a prompt a
     * candidate holds is never pending there.
     *
     * @throws IllegalArgumentException if scope is null
     */
    public Builder pendingPrefix(PendingPrefixScope scope) {
      if (scope == null) {
        throw new IllegalArgumentException("pendingPrefix: scope is null (off, session or all)");
      }
      this.pendingPrefix = scope;
      return this;
    }

    /**
     * {@link #pendingPrefix(PendingPrefixScope)} with {@link PendingPrefixScope#ALL} ({@code true})
     * or {@link PendingPrefixScope#OFF} ({@code false}).
     */
    public Builder pendingPrefix(boolean on) {
      this.pendingPrefix = on ? PendingPrefixScope.ALL : PendingPrefixScope.OFF;
      return this;
    }

    /**
     * Whether the session rule releases a parallel sibling: a request of a session whose first
     * request was routed less than that one's prefill time (at the configured coefficients) ago is
     * not held on the session's pin and goes where its cost is lowest (with {@link
     * #releaseSiblingsOnlyToIdle}, only when the best-ranked candidate has no prefill queued); a
     * sibling, released or not, does not move the pin. Holding the sibling on the pin buys a place
     * behind the first request's prefill, which the costs price against a fresh prefill elsewhere.
     * Later requests are held as before. See {@code ParallelStartTerm}. Default true (since issue
     * #18 session 18).
     */
    public Builder releaseParallelSiblings(boolean release) {
      this.releaseParallelSiblings = release;
      return this;
    }

    /**
     * With {@link #releaseParallelSiblings}: release a parallel sibling only when the best-ranked
     * candidate has no prefill queued (the router's pending prefill tokens and the reported waiting
     * count both 0), and hold it on the pin otherwise. Default false since issue #18 session 32
     * (true in sessions 18–31): measured on the simulator once it caches a prompt's blocks as their
     * prefill is scheduled (as vLLM v1 does), holding put map-reduce maps behind each other on the
     * pin; released always, a fan-out's TTFT (seeds 1–4, over the best anchor's) went at 1× from
     * mean 1.11–1.13× to 0.98–0.99× and p95 0.90–1.08× to 0.97–1.02×, at 2× from mean 1.06–1.07× to
     * 0.96–0.98× and p95 0.90–0.91× to 0.90–0.98×, at 4× from mean 0.89–0.94× to 0.81–0.88× (p95
     * 0.71–0.84× to 0.68–0.85×); RL rollouts sharing a session 3–7 % slower (still about 0.35× the
     * best anchor's), agentic traffic and chats unchanged (benchmarks/README.md, session 32).
     */
    public Builder releaseSiblingsOnlyToIdle(boolean onlyToIdle) {
      this.releaseSiblingsOnlyToIdle = onlyToIdle;
      return this;
    }

    /**
     * Replica value: when every backend holding a request's longest matched prefix has a prefill
     * queued and another backend has none, that backend's cost is lowered by {@code horizonSeconds
     * × λ × r}, where {@code λ} is the prefix's recent request rate (per second, decayed over 10 s)
     * and {@code r} half the holder's prefill time of the request — the waits that a second holder
     * would spare the prefix's next requests, against the cold prefill the queue-prefill term
     * charges it now. Only for prefixes that cover at least half the prompt, whose own requests
     * keep their holders at least {@code minLoad} of the time busy ({@code λ × 2r / holders}, a
     * share) and that have been reused for at least a second (a burst of identical requests waits
     * for its first prefill instead). See {@code ReplicaValueTerm}; at most {@value
     * ReplicaValueTerm#MAX_PREFIXES} prefix rates are held. {@code horizonSeconds} 0 turns the term
     * off. Default {@code (10, 0.05)} since issue #18 session 19 (off before): on 16 system prompts
     * of 3k tokens with Zipf-1.2 popularity it takes TTFT p95 from 1.02× / 0.95× the best anchor's
     * at 1× / 2× to 0.90× / 0.88× (held-out seeds, benchmarks/README.md); on the other workloads
     * measured the guards keep it idle or within about a null perturbation's band. Costs about
     * 0.03-0.04 of a hash per held route and no allocation (half the routes count their prefix, in
     * a fixed table of rates allocated at the first count, about 2.6 MB). Past about 3 s the
     * horizon changes little: once the guards pass, the credit outweighs the cold prefill; {@code
     * minLoad} is the setting that matters. The session rule's hold test includes this term (a
     * pinned session whose longest match is a hot shared prefix may move to a copy of it).
     *
     * @throws IllegalArgumentException unless horizonSeconds is in [0, 3600] and minLoad in [0, 1]
     */
    public Builder replicaValue(double horizonSeconds, double minLoad) {
      if (!(horizonSeconds >= 0 && horizonSeconds <= 3600)) {
        throw new IllegalArgumentException(
            "replicaValue: horizonSeconds in [0, 3600]; was " + horizonSeconds);
      }
      if (!(minLoad >= 0 && minLoad <= 1)) {
        throw new IllegalArgumentException("replicaValue: minLoad in [0, 1]; was " + minLoad);
      }
      this.replicaHorizonSeconds = horizonSeconds;
      this.replicaMinLoad = minLoad;
      return this;
    }

    /**
     * Extra work: a candidate whose prefill of the request exceeds the least among the candidates
     * by {@code ΔS} ms also pays {@code weight × λ ΔS² / (2 (1 − ρ))}, the M/G/1 wait that much
     * added work imposes on the requests reaching that backend after it ({@code λ} its routed
     * requests per ms, {@code ρ} its routed prefill ms per ms, capped at 0.9, both decayed over 2
     * s), divided by {@code 1 + groupHorizonSeconds × λ_g} where {@code λ_g} is the request rate
     * (per s, decayed over 10 s) of the longest prefix any candidate holds: a copy of a hot prefix
     * is a replica its next requests reuse, a copy of a lukewarm one is mostly work. A candidate
     * with a prefill queued now pays; an idle one only as {@link #extraWorkIdleShare} says (an idle
     * backend otherwise starts the copy at once). Near zero at light load and for candidates whose
     * prefill is about the least; in overload it keeps requests on their prefix's holders instead
     * of re-prefilling whole prompts elsewhere, which a per-request estimate, even an exact one,
     * does not. Default {@code (2, 1)} since issue #18 session 24 (off before): at 4x load on the
     * high-cache workload TTFT p95 from 1.10x / 1.21x the best anchor's (metrics reported every 100
     * / 50 ms) to 1.01x / 1.09x, with the heterogeneous fleet, the varying load and the failing
     * backend better as well and the map-reduce fan-out's mean 1-2 % lower (benchmarks/README.md).
     * See {@code ExtraWorkTerm}. {@code weight} 0 turns the term off; {@code groupHorizonSeconds} 0
     * prices every copy in full.
     *
     * @throws IllegalArgumentException unless weight is in [0, 1000] and groupHorizonSeconds in [0,
     *     3600]
     */
    public Builder extraWork(double weight, double groupHorizonSeconds) {
      if (!(weight >= 0 && weight <= 1000)) {
        throw new IllegalArgumentException("extraWork: weight in [0, 1000]; was " + weight);
      }
      if (!(groupHorizonSeconds >= 0 && groupHorizonSeconds <= 3600)) {
        throw new IllegalArgumentException(
            "extraWork: groupHorizonSeconds in [0, 3600]; was " + groupHorizonSeconds);
      }
      this.extraWorkWeight = weight;
      this.extraWorkGroupHorizon = groupHorizonSeconds;
      return this;
    }

    /**
     * Who pays {@link #extraWork} besides the busy candidates: once at least {@code share} of a
     * decision's candidates have a prefill queued, an idle one whose recent prefill utilisation is
     * at least {@link #extraWorkIdleMinUtilisation} pays {@link #extraWorkIdleWeight} of the price
     * too (the fleet is saturated, and a copy on a backend that has only just drained delays what
     * reaches it next). Default 0.75; {@code +Infinity}: only busy candidates pay; 0 (with weight 1
     * and utilisation 0): every candidate pays in full (on the published gateway's hit-rate
     * workload, whose host routes a request per simulated millisecond, that holds every document on
     * its first holder and breaks the ±5 % balance).
     *
     * <p>Measured with the defaults against busy-only pricing (benchmarks/README.md, issue #18
     * session 25): high-cache at 4x load 1.01x -> 0.93x the best anchor's p95 (1.09x -> 1.00x with
     * 50 ms load reports; held-out seeds 0.76x -> 0.70x), the other workloads within noise. Without
     * the utilisation condition (every idle candidate paying half) the same overload gain cost
     * map-reduce bursts at 1x and 2x (mean +2 %) and RL-rollout bursts (p95 +1–3 %); with weight 1,
     * rollouts 4–6 %. That was on the simulator before its session-32 corrections; on the corrected
     * one the condition is off by default ({@link #extraWorkIdleMinUtilisation}, session 33).
     *
     * @throws IllegalArgumentException unless share is in [0, 1] or +Infinity
     */
    public Builder extraWorkIdleShare(double share) {
      if (!(share >= 0 && share <= 1) && share != Double.POSITIVE_INFINITY) {
        throw new IllegalArgumentException(
            "extraWorkIdleShare must be in [0, 1] or Infinity, was " + share);
      }
      this.extraWorkIdleShare = share;
      return this;
    }

    /**
     * The share of the {@link #extraWork} price an idle candidate pays when {@link
     * #extraWorkIdleShare} makes it pay: default 0.5; 0 turns idle pricing off.
     *
     * @throws IllegalArgumentException unless weight is in [0, 1]
     */
    public Builder extraWorkIdleWeight(double weight) {
      if (!(weight >= 0 && weight <= 1)) {
        throw new IllegalArgumentException("extraWorkIdleWeight must be in [0, 1], was " + weight);
      }
      this.extraWorkIdleWeight = weight;
      return this;
    }

    /**
     * The least recent prefill utilisation ({@code ρ}: routed prefill ms per ms over the last ~2 s)
     * at which an idle candidate pays when {@link #extraWorkIdleShare} makes it pay: default 0
     * (every idle candidate pays then) since issue #18 session 33; 0.5 in sessions 25–32, so that a
     * backend that idled through a burst (a map-reduce fan-out, an RL rollout) took its copy free.
     * On the simulator corrected for vLLM v1's scheduling such a free copy costs the burst's tail:
     * a session fan-out's p95 is 3–13 % lower without the condition (seeds 1–2, 1×/2×/4×; means 1–3
     * % lower), the half-slow fleet's and varying load's at 1× 2–8 % lower, and the other issue #18
     * workloads within ±2.2 %, the published gateway's hit-rate workload identically
     * (benchmarks/README.md, session 33).
     *
     * @throws IllegalArgumentException unless utilisation is in [0, 1]
     */
    public Builder extraWorkIdleMinUtilisation(double utilisation) {
      if (!(utilisation >= 0 && utilisation <= 1)) {
        throw new IllegalArgumentException(
            "extraWorkIdleMinUtilisation must be in [0, 1], was " + utilisation);
      }
      this.extraWorkIdleMinUtilisation = utilisation;
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
     * What a prompt token held on a lower tier (CPU memory, disk; {@link
     * dev.prefixrouter.api.spi.ScoringContext#offloadedBlocks}) is worth, as a fraction of a GPU
     * hit's prefill saving, in {@code [0, 1]}: loading it back costs the rest. Default 0.8 (a PCIe
     * reload of KV is several times faster than recomputing it; lower it for a disk tier). {@code
     * 0} leaves the {@code lower-tier} term out. Inert while no backend's KV events report a lower
     * tier.
     */
    public Builder lowerTierCredit(double credit) {
      if (!(credit >= 0 && credit <= 1)) {
        throw new IllegalArgumentException("lowerTierCredit must be in [0, 1], was " + credit);
      }
      this.lowerTierCredit = credit;
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
