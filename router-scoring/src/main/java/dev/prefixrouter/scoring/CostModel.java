package dev.prefixrouter.scoring;

import dev.prefixrouter.api.spi.FirstTokenObservation;
import org.jspecify.annotations.Nullable;

/**
 * Online fit of one backend's TTFT coefficients from observed first tokens: recursive least squares
 * with exponential forgetting (tracks drift) and Huber weighting against a running residual scale
 * (robust to outliers), on the features
 *
 * <pre>
 * ttft_ms ≈ alpha + beta·(uncached + queuedPrefill) + gamma·uncached·(uncached + cached)
 *          + decode·runningDecodes
 * </pre>
 *
 * Features are scaled (tokens / 1e3, token² / 1e6) for conditioning and capped at plausible values
 * (10 M tokens of prefill, 1 M uncached, 10,000 running decodes); the covariance is kept symmetric
 * with a positive diagonal, and a fit that turns non-finite starts over from the priors.
 *
 * <p><b>Physics.</b> The fit is published only within a band around the configured priors: β in
 * [prior/band, prior·band] (prefill always grows with uncached tokens), γ and the decode cost in
 * [0, prior·band], α in [0, prior·band] (at most 10 s). With β &gt; 0 and γ ≥ 0 a cached token
 * never costs more than an uncached one. The intercept is fitted freely (so that a constant the
 * priors do not carry does not bias β) but published only within its band: a per-backend constant
 * far above the prior's is queueing the queue term does not model (admission waits of an overloaded
 * engine), learned with a lag and different on every backend of one homogeneous fleet (0 to 1.9 s
 * measured), and published it steers work to whichever backend drained last.
 *
 * <p><b>Signal.</b> Observed TTFTs may carry no information about the prompt (a host that reports
 * the first token after a fixed or random delay, queueing outside the engine): fitted blindly,
 * prefill comes out nearly free and prefix affinity disappears. The model therefore tracks, with
 * the same forgetting, the partial correlation between the observed TTFT and the priors' estimate
 * of the prompt's own prefill (β·uncached + γ·uncached·total) once the priors' load part (β·queued
 * + decode·running) is removed from both: a TTFT that follows the backend's load but not the
 * prompt's uncached tokens carries no prefix signal. The fit is published only while that
 * correlation is significantly positive (t-statistic over the effective sample above {@value
 * #SIGNAL_ON}, dropped again below {@value #SIGNAL_OFF}) and after {@code minObservations};
 * otherwise the priors hold (all four coefficients, β and γ among them), and {@code describe()}
 * says which ({@code fitted} 0/1, {@code signalT}).
 *
 * <p>Writers synchronize on the model; readers copy the {@link #published() published} values
 * without locking (a new fit overwrites them in place). Cost per observation: O(1) (a 4×4 update),
 * no allocation.
 */
final class CostModel {
  private static final int N = 4;
  private static final double[] SCALE = {1.0, 1e-3, 1e-6, 1.0};

  /**
   * Caps on the scaled features: 10 M tokens of prefill, a prompt of 1 M uncached tokens, 10,000
   * running decodes.
   */
  private static final double[] FEATURE_CAP = {1.0, 1e4, 1e6, 1e4};

  /** The covariance's initial diagonal (scaled units) ... */
  private static final double[] PRIOR_P = {1e4, 1e4, 1e4, 1e2};

  /** ... and its floor. */
  private static final double P_FLOOR = 1e-9;

  /** t-statistic of the prefix signal above which the fit is published. */
  static final double SIGNAL_ON = 4.0;

  /** t-statistic below which a published fit falls back to the priors (hysteresis). */
  static final double SIGNAL_OFF = 2.5;

  private final TtftCoefficients defaults;
  private final double lambda;
  private final int minObservations;
  // the fit's vectors in one array, so that an observation writes few cache lines (on several
  // threads they move between cores): theta (scaled units), P row-major, then x and P·x scratch
  private static final int THETA = 0;
  private static final int P = THETA + N;
  private static final int X = P + N * N;
  private static final int PX = X + N;
  private final double[] fit = new double[PX + N];
  private final RobustScale scale = new RobustScale(); // guarded by this
  private long observations;
  private final double band;
  // forgotten (weighted) moments of the priors' prefix part p and load part q of the estimate and
  // of the observed TTFT y, ms (see trackSignal)
  private double sw;
  private double sp;
  private double sq;
  private double sy;
  private double spp;
  private double sqq;
  private double syy;
  private double spq;
  private double spy;
  private double sqy;
  private double signalT;
  private boolean signal;
  private final PublishedCoefficients published;
  private volatile boolean fitted; // whether published holds a fit (else the priors)
  // whether the fit is held back only by the advantage gate (the priors predict as well)
  private volatile boolean heldByAdvantage;
  // prequential comparison: forgotten weighted absolute errors of the priors' and the fit's
  // predictions, each made before the observation updates the fit
  private final double advantage;
  private final boolean fitIntercept;
  private double priorError;
  private double fitError;
  private boolean better;
  private final @Nullable PublishedCoefficients reference;
  // the fleet's published fit and how far this backend's may stray from it (0: not bounded)
  private final @Nullable PublishedCoefficients fleet;
  private final double fleetBand;
  // the own first tokens (decaying) at which the fleet band is half open (0: always fully open)
  private final double fleetEvidence;
  private long fleetCount; // the fleet's first tokens as of this model's latest publication
  private volatile double bandInUse = Double.NaN; // the fleet band of the latest publication
  private final double[] fleetScratch = new double[5];
  private final double[] refScratch = new double[5];
  // scopes SHRUNK and BACKEND with fleetEvidence: this backend's forgotten count of first tokens
  // as of the fleet's count
  // evidenceAt; written under the lock, read without it (a torn pair misweighs one decision)
  private volatile double evidence;
  private volatile long evidenceAt;

  CostModel(TtftCoefficients defaults, double forgetting, int minObservations, double band) {
    this(defaults, forgetting, minObservations, band, Double.NaN, true, null, null, 0, 0);
  }

  CostModel(
      TtftCoefficients defaults,
      double forgetting,
      int minObservations,
      double band,
      double advantage,
      boolean fitIntercept,
      @Nullable PublishedCoefficients reference,
      @Nullable PublishedCoefficients fleet,
      double fleetBand,
      double fleetEvidence) {
    this.reference = reference;
    this.fleet = fleet;
    this.fleetBand = fleet == null ? 0 : fleetBand;
    this.fleetEvidence = fleetEvidence;
    this.advantage = advantage;
    this.fitIntercept = fitIntercept;
    this.defaults = defaults;
    this.band = band;
    this.lambda = forgetting;
    this.minObservations = minObservations;
    this.published = new PublishedCoefficients(defaults);
    resetFit();
  }

  /** The coefficients in use, as a new immutable record (allocates: for inspection). */
  TtftCoefficients current() {
    return fitted ? published.snapshot() : defaults;
  }

  /** The coefficients in use, for the routing threads to copy without allocating. */
  PublishedCoefficients published() {
    return published;
  }

  long observations() {
    return observations;
  }

  double residualScale() {
    return scale.value();
  }

  /** Whether the published coefficients are fitted (else the priors). */
  boolean fitted() {
    return fitted;
  }

  /**
   * Whether the observed TTFTs carry a prefix signal (the gate's state, with its hysteresis; a fit
   * may still wait for {@code minObservations} or the advantage).
   */
  synchronized boolean hasSignal() {
    return signal;
  }

  /**
   * Whether the priors are in use because the fit, with enough observations and a prefix signal,
   * does not predict better than the reference by the advantage (the backend's own evidence then
   * favours the reference; false without an advantage gate).
   */
  boolean heldByAdvantage() {
    return heldByAdvantage;
  }

  /**
   * The prefix signal's t-statistic (0 before three observations, four with a varying load, or with
   * no variance left).
   */
  synchronized double signalT() {
    return signalT;
  }

  /**
   * Fits one observation. Small on purpose: it only unpacks the record, so that the caller's
   * observation does not escape and the JIT need not allocate it.
   */
  void observe(FirstTokenObservation o) {
    observe(
        o.ttftNanos(),
        o.uncachedTokens(),
        o.matchedTokens(),
        o.queuedPrefillTokens(),
        o.runningDecodes());
  }

  /** Fits one observation given as its fields (no observation object). */
  synchronized void observe(
      long ttftNanos, int uncachedTokens, int matchedTokens, long queuedPrefill, int decodes) {
    double y = ttftNanos / 1e6;
    double u = Math.max(0, uncachedTokens);
    double c = Math.max(0, matchedTokens);
    double[] f = fit; // guarded by this (synchronized): no per-observation arrays
    f[X] = 1.0;
    // features capped at plausible values: one absurd report (a queued prefill of 10^12 tokens) had
    // the leverage to drive the covariance's diagonal to 0 and then below, and the fit diverged
    f[X + 1] = Math.min((u + Math.max(0, queuedPrefill)) * SCALE[1], FEATURE_CAP[1]);
    f[X + 2] = Math.min(u * (u + c) * SCALE[2], FEATURE_CAP[2]);
    f[X + 3] = Math.min(Math.max(0, decodes), FEATURE_CAP[3]);
    if (!Double.isFinite(y) || y < 0) {
      return;
    }
    double predicted = dot(f, THETA, X); // without an intercept fit theta[0] stays the prior's
    double residual = y - predicted;
    // Huber weight against the running scale, with the warm-up bound before ten observations (one
    // cold start used to seed the scale with itself and hold the fit back for about a thousand)
    double weight = scale.weigh(residual, predicted, observations);
    // the signal's moments weigh by the Huber weight squared: a down-weighted residual then adds
    // at most the bound's square to the TTFT's variance (weighted once it added |residual|·bound,
    // and one cold start masked the prefix signal for ~150 first tokens)
    trackSignal(u, c, queuedPrefill, decodes, y, weight * weight);
    if (!Double.isNaN(advantage)) {
      compareWithPriors(f, y, weight);
    }

    // weighted RLS with forgetting: gain g = P x / (lambda/w + x' P x); without an intercept the
    // constant feature is 0, so its row of P stays 0 and theta[0] is never moved
    f[X] = fitIntercept ? 1.0 : 0.0;
    for (int i = 0; i < N; i++) {
      double s = 0;
      for (int j = 0; j < N; j++) {
        s += f[P + i * N + j] * f[X + j];
      }
      f[PX + i] = s;
    }
    double xpx = dot(f, X, PX);
    double denom = lambda / weight + xpx;
    if (!(xpx >= 0) || !Double.isFinite(denom)) {
      // P is no longer positive semidefinite: the pairwise bounds below keep each 2x2 minor valid
      // but not the whole matrix, and a negative x'Px would let the gain P x / denom explode
      resetFit();
      return;
    }
    for (int i = 0; i < N; i++) {
      f[THETA + i] += f[PX + i] * residual / denom;
    }
    for (int i = 0; i < N; i++) {
      for (int j = 0; j < N; j++) {
        f[P + i * N + j] = (f[P + i * N + j] - f[PX + i] * f[PX + j] / denom) / lambda;
      }
    }
    keepCovarianceValid(f);
    // keep P bounded (no wind-up when a feature never varies)
    for (int i = 0; i < N; i++) {
      if (f[P + i * N + i] > 1e6) {
        double g = 1e6 / f[P + i * N + i];
        for (int j = 0; j < N; j++) {
          f[P + i * N + j] *= Math.sqrt(g);
          f[P + j * N + i] *= Math.sqrt(g);
        }
      }
    }
    if (!finite(f, THETA, P + N * N)) {
      resetFit(); // a non-finite fit was published as every coefficient's lower bound
    }
    observations++;
    signal = signal ? signalT >= SIGNAL_OFF : signalT >= SIGNAL_ON;
    heldByAdvantage =
        observations >= minObservations && signal && !Double.isNaN(advantage) && !better;
    if (observations >= minObservations && signal && (Double.isNaN(advantage) || better)) {
      publishFit();
      fitted = true;
    } else if (fitted) {
      published.set(
          defaults.alphaMs(),
          defaults.betaMsPerToken(),
          defaults.gammaMsPerToken2(),
          defaults.decodeMsPerRunning(),
          defaults.waitingMs());
      fitted = false;
    }
  }

  /**
   * Publishes the fit, each coefficient within [fleet/K, max(fleet, prior/band)·K] of the fleet's
   * published one when bounded by a fleet (the fleet's as of now; the upper bound's floor keeps a
   * fleet coefficient fitted to 0 from pinning every backend's at 0): K is the fleet band, or with
   * {@code fleetEvidence} {@code 1 + (band − 1)·n/(n + fleetEvidence)}, n this backend's decayed
   * first tokens as of the fleet's count {@link #republish} or {@link #addEvidence} last gave.
   */
  private void publishFit() {
    double a = fitAlpha();
    double b = fitBeta();
    double g = fitGamma();
    double d = fitDecode();
    if (fleet != null) {
      double[] f = fleetScratch;
      fleet.readInto(f, 0);
      double k = fleetBand;
      if (fleetEvidence > 0 && k > 1 && k < Double.POSITIVE_INFINITY) {
        double n = evidence(fleetCount);
        k = 1 + (k - 1) * n / (n + fleetEvidence);
      }
      bandInUse = k;
      // above around the fleet's value, or the priors' band floor when the fleet's is below it: a
      // fleet coefficient fitted to 0 multiplied to [0, 0] and pinned every backend's at 0
      a = clamp(a, f[0] / k, Math.max(f[0], defaults.alphaMs() / band) * k);
      b = clamp(b, f[1] / k, Math.max(f[1], defaults.betaMsPerToken() / band) * k);
      g = clamp(g, f[2] / k, Math.max(f[2], defaults.gammaMsPerToken2() / band) * k);
      d = clamp(d, f[3] / k, Math.max(f[3], defaults.decodeMsPerRunning() / band) * k);
    }
    published.set(a, b, g, d, defaults.waitingMs());
  }

  /**
   * The factor around the fleet's fit the latest fit was published within (NaN before the first or
   * when not bounded by a fleet).
   */
  double fleetBandInUse() {
    return bandInUse;
  }

  /**
   * Counts one of this backend's first tokens as evidence, {@code fleetCount} being the fleet's
   * count of first tokens including it: the earlier evidence first decays by the forgetting factor
   * per fleet first token since it was last counted.
   */
  synchronized void addEvidence(long fleetCount) {
    evidence = evidence(fleetCount) + 1;
    evidenceAt = fleetCount;
    this.fleetCount = Math.max(this.fleetCount, fleetCount);
  }

  /**
   * Publishes the fit again against the fleet's fit and this backend's evidence as of {@code
   * fleetCount} (a backend that gets no first tokens would otherwise keep the bound of its last
   * one). No-op unless a fit is published and bounded by a fleet.
   */
  synchronized void republish(long fleetCount) {
    if (fleet == null || !fitted) {
      return;
    }
    this.fleetCount = Math.max(this.fleetCount, fleetCount);
    publishFit();
  }

  /**
   * This backend's evidence (see {@link #addEvidence}) when the fleet has seen {@code fleetCount}.
   */
  double evidence(long fleetCount) {
    double n = evidence;
    long gap = fleetCount - evidenceAt;
    return gap <= 0 ? n : n * Math.pow(lambda, gap);
  }

  private double fitAlpha() {
    return fitIntercept
        ? alphaWithinBand(fit[THETA], defaults, band)
        : defaults.alphaMs(); // the band, as for beta: see the class comment
  }

  private double fitBeta() {
    return betaWithinBand(fit[THETA + 1] * SCALE[1], defaults, band);
  }

  private double fitGamma() {
    return gammaWithinBand(fit[THETA + 2] * SCALE[2], defaults, band);
  }

  private double fitDecode() {
    return decodeWithinBand(fit[THETA + 3], defaults, band);
  }

  /** Alpha held within {@code [0, priors·band]} (and its validity bound); NaN: the lower bound. */
  static double alphaWithinBand(double v, TtftCoefficients priors, double band) {
    return clamp(v, 0, Math.min(10_000, priors.alphaMs() * band));
  }

  /** Beta held within {@code [priors/band, priors·band]} (and its validity bounds). */
  static double betaWithinBand(double v, TtftCoefficients priors, double band) {
    return clamp(
        v,
        Math.max(1e-6, priors.betaMsPerToken() / band),
        Math.min(10, priors.betaMsPerToken() * band));
  }

  /** Gamma held within {@code [0, priors·band]} (and its validity bound). */
  static double gammaWithinBand(double v, TtftCoefficients priors, double band) {
    return clamp(v, 0, Math.min(1e-3, priors.gammaMsPerToken2() * band));
  }

  /** The decode cost held within {@code [0, priors·band]} (and its validity bound). */
  static double decodeWithinBand(double v, TtftCoefficients priors, double band) {
    return clamp(v, 0, Math.min(1000, priors.decodeMsPerRunning() * band));
  }

  /**
   * Scores the priors and the fit (as it would be published) on the observation before the fit
   * learns from it, with the same forgetting and Huber weight: the fit may be published only while
   * its forgotten absolute error is at most {@code (1 - advantage)} times the priors' (off again
   * when it is no longer below the priors' error at all: hysteresis).
   */
  private void compareWithPriors(double[] f, double y, double weight) {
    double[] r = refScratch;
    if (reference != null) {
      reference.readInto(r, 0);
    } else {
      r[0] = defaults.alphaMs();
      r[1] = defaults.betaMsPerToken();
      r[2] = defaults.gammaMsPerToken2();
      r[3] = defaults.decodeMsPerRunning();
    }
    double prior = r[0] + r[1] * f[X + 1] / SCALE[1] + r[2] * f[X + 2] / SCALE[2] + r[3] * f[X + 3];
    double fitted =
        fitAlpha()
            + fitBeta() * f[X + 1] / SCALE[1]
            + fitGamma() * f[X + 2] / SCALE[2]
            + fitDecode() * f[X + 3];
    priorError = lambda * priorError + weight * Math.abs(y - prior);
    fitError = lambda * fitError + weight * Math.abs(y - fitted);
    better = better ? fitError < priorError : fitError <= (1 - advantage) * priorError;
  }

  /** The forgotten absolute error of the fit over the priors' (NaN when not compared). */
  synchronized double errorRatio() {
    return Double.isNaN(advantage) || priorError <= 0 ? Double.NaN : fitError / priorError;
  }

  /**
   * Updates the forgotten moments of (the priors' prefix part, their load part, observed TTFT) and
   * the t-statistic of the partial correlation of the TTFT with the prefix part once the load part
   * is removed (over the effective sample size). The prefix part is what the prompt's uncached
   * tokens cost by the priors (β·uncached + γ·uncached·total); the load part is what the backend's
   * state costs (β·queued + decode·running). A TTFT that follows the load but not the prompt thus
   * shows no signal (correlating with the whole estimate let it pass and published β at its floor).
   * Without variance in the load part this is the plain correlation with the prefix part.
   */
  private void trackSignal(
      double uncached, double cached, long queued, int running, double y, double weight) {
    TtftCoefficients k = defaults;
    double p =
        k.betaMsPerToken() * uncached + k.gammaMsPerToken2() * uncached * (uncached + cached);
    double q = // capped as the fit's features are
        k.betaMsPerToken() * Math.min(Math.max(0, queued), FEATURE_CAP[1] / SCALE[1])
            + k.decodeMsPerRunning() * Math.min(Math.max(0, running), FEATURE_CAP[3]);
    sw = lambda * sw + weight;
    sp = lambda * sp + weight * p;
    sq = lambda * sq + weight * q;
    sy = lambda * sy + weight * y;
    spp = lambda * spp + weight * p * p;
    sqq = lambda * sqq + weight * q * q;
    syy = lambda * syy + weight * y * y;
    spq = lambda * spq + weight * p * q;
    spy = lambda * spy + weight * p * y;
    sqy = lambda * sqy + weight * q * y;
    double n = Math.min(observations + 1, lambda < 1 ? 1 / (1 - lambda) : Double.MAX_VALUE);
    double mp = sp / sw;
    double mq = sq / sw;
    double my = sy / sw;
    double vp = spp / sw - mp * mp;
    double vq = sqq / sw - mq * mq;
    double vy = syy / sw - my * my;
    double cpy = spy / sw - mp * my;
    double cpq = spq / sw - mp * mq;
    double cqy = sqy / sw - mq * my;
    double dof = n - 2;
    // relative floors: a constant part or a constant TTFT (rounding noise only) has no variance
    if (vq > 1e-12 * (1 + mq * mq)) { // remove the load part from both
      vp -= cpq * cpq / vq;
      vy -= cqy * cqy / vq;
      cpy -= cpq * cqy / vq;
      dof = n - 3;
    }
    if (dof < 1 || !(vp > 1e-12 * (1 + mp * mp)) || !(vy > 1e-12 * (1 + my * my))) {
      signalT = 0;
      return;
    }
    double r = Math.max(-1, Math.min(1, cpy / Math.sqrt(vp * vy)));
    signalT = r >= 1 ? Double.MAX_VALUE : r * Math.sqrt(dof / (1 - r * r));
  }

  /**
   * Keeps P a valid covariance against rounding: symmetric, its diagonal at least {@link #P_FLOOR},
   * each off-diagonal within the geometric mean of its diagonals. (The rank-one downdate cancels:
   * after a high-leverage observation a diagonal came out 0 or negative, the negative one grew by
   * 1/λ per observation, and the fit diverged, then froze.)
   */
  private static void keepCovarianceValid(double[] f) {
    for (int i = 0; i < N; i++) {
      if (!(f[P + i * N + i] >= P_FLOOR)) {
        f[P + i * N + i] = P_FLOOR;
      }
    }
    for (int i = 0; i < N; i++) {
      for (int j = i + 1; j < N; j++) {
        double bound = Math.sqrt(f[P + i * N + i] * f[P + j * N + j]);
        double v = 0.5 * (f[P + i * N + j] + f[P + j * N + i]);
        v = Math.max(-bound, Math.min(bound, v));
        f[P + i * N + j] = v;
        f[P + j * N + i] = v;
      }
    }
  }

  /** Whether {@code f[from..to)} are all finite. */
  private static boolean finite(double[] f, int from, int to) {
    for (int i = from; i < to; i++) {
      if (!Double.isFinite(f[i])) {
        return false;
      }
    }
    return true;
  }

  /** Starts the fit from the priors (theta and P; the moments and the residual scale are kept). */
  private void resetFit() {
    double[] f = fit;
    java.util.Arrays.fill(f, THETA, P + N * N, 0.0);
    f[THETA] = defaults.alphaMs();
    f[THETA + 1] = defaults.betaMsPerToken() / SCALE[1];
    f[THETA + 2] = defaults.gammaMsPerToken2() / SCALE[2];
    f[THETA + 3] = defaults.decodeMsPerRunning();
    for (int i = 0; i < N; i++) {
      f[P + i * N + i] = PRIOR_P[i];
    }
  }

  /** The dot product of {@code f[a..a+N)} and {@code f[b..b+N)}, summed in index order. */
  private static double dot(double[] f, int a, int b) {
    double s = 0;
    for (int i = 0; i < N; i++) {
      s += f[a + i] * f[b + i];
    }
    return s;
  }

  private static double clamp(double v, double lo, double hi) {
    return Double.isNaN(v) ? lo : Math.max(lo, Math.min(hi, v));
  }
}
