package dev.prefixrouter.spring;

import dev.prefixrouter.scoring.PendingPrefixScope;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/** {@code prefix-router.*}: the engine, its backends and its parts. */
@ConfigurationProperties("prefix-router")
public class PrefixRouterProperties {

  /** Whether to create the routing engine. */
  private boolean enabled = true;

  /** Backends present at startup (more can be added at runtime). */
  private List<BackendProperties> backends = new ArrayList<>();

  /** Model aliases: requested name → served model (e.g. gpt-4 → llama-3-70b). */
  private Map<String, String> modelAliases = new LinkedHashMap<>();

  /** Weighted A/B splits: model → (target model → integer weight). */
  private Map<String, Map<String, Integer>> modelSplits = new LinkedHashMap<>();

  /** Upper bound on registered backends (the dense slot space), 1..65536. */
  private int maxBackends = 256;

  /** Failovers one request may take, 0..16. */
  private int retryBudget = 2;

  /** Seed block keys per tenant so tenants never share cached prefixes. */
  private boolean prefixIsolation;

  /**
   * Model names that are LoRA adapters (vLLM's lora_name): their requests' block keys are seeded by
   * the adapter, and KV events carrying that lora_name confirm them.
   */
  private List<String> loraAdapters = new ArrayList<>();

  public List<String> getLoraAdapters() {
    return loraAdapters;
  }

  public void setLoraAdapters(List<String> loraAdapters) {
    this.loraAdapters = loraAdapters;
  }

  private final Hashing hashing = new Hashing();
  private final Scorer scorer = new Scorer();
  private final Limiter limiter = new Limiter();
  private final Breaker breaker = new Breaker();
  private final Index index = new Index();
  private final Poller poller = new Poller();
  private final Metrics metrics = new Metrics();
  private final Capacity capacity = new Capacity();

  /**
   * Capacity planning: an M/M/c estimate, per model, of the backends needed to meet a TTFT
   * objective, shown in the actuator snapshot and the {@code prefixrouter.capacity.*} gauges. A
   * recommendation only; off unless {@code ttft} is set.
   */
  public static class Capacity {
    /** The TTFT objective, e.g. 500ms; unset = planning off. */
    private @Nullable Duration ttft;

    /** The objective's percentile, in [0.5, 0.9999]. */
    private double percentile = 0.95;

    /** How far back arrival rates and token counts are measured, in [1s, 24h]. */
    private Duration window = Duration.ofMinutes(1);

    public @Nullable Duration getTtft() {
      return ttft;
    }

    public void setTtft(@Nullable Duration ttft) {
      this.ttft = ttft;
    }

    public double getPercentile() {
      return percentile;
    }

    public void setPercentile(double percentile) {
      this.percentile = percentile;
    }

    public Duration getWindow() {
      return window;
    }

    public void setWindow(Duration window) {
      this.window = window;
    }
  }

  public Capacity getCapacity() {
    return capacity;
  }

  /** Micrometer meters. */
  public static class Metrics {
    /** Tag decision meters with the tenant (unbounded cardinality: only for few tenants). */
    private boolean tenantTags;

    public boolean isTenantTags() {
      return tenantTags;
    }

    public void setTenantTags(boolean tenantTags) {
      this.tenantTags = tenantTags;
    }
  }

  public Metrics getMetrics() {
    return metrics;
  }

  /** The optional backend metrics poller. */
  public static class Poller {
    /**
     * Poll each backend's {url}/metrics (vLLM or SGLang names) into load reports (needs router-vllm
     * on the classpath).
     */
    private boolean enabled;

    /** Time between polls (each backend's scrapes run in parallel), 10ms..1h. */
    private Duration interval = Duration.ofMillis(500);

    /** Timeout of one request (connect, answer, body), 10ms..60s. */
    private Duration timeout = Duration.ofSeconds(2);

    /**
     * A backend answering neither /metrics nor /health this long is reported to the health policy
     * at every poll until it answers, 0..1h.
     */
    private Duration unreachableAfter = Duration.ofSeconds(10);

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public Duration getInterval() {
      return interval;
    }

    public void setInterval(Duration interval) {
      this.interval = interval;
    }

    public Duration getTimeout() {
      return timeout;
    }

    public void setTimeout(Duration timeout) {
      this.timeout = timeout;
    }

    public Duration getUnreachableAfter() {
      return unreachableAfter;
    }

    public void setUnreachableAfter(Duration unreachableAfter) {
      this.unreachableAfter = unreachableAfter;
    }
  }

  public Poller getPoller() {
    return poller;
  }

  /** One backend. */
  public static class BackendProperties {
    /** Unique id (1..256 characters, no whitespace). */
    private @Nullable String id;

    /** Base URL of the OpenAI-compatible server (used by the metrics poller and hosts). */
    private @Nullable String url;

    /** Served model names (at least one). */
    private List<String> models = new ArrayList<>();

    /** Capabilities such as vision or a LoRA adapter name. */
    private List<String> capabilities = new ArrayList<>();

    /** Free-form labels matched by requests' required labels. */
    private Map<String, String> labels = new LinkedHashMap<>();

    /** KV-cache capacity in blocks (vLLM num_gpu_blocks); 0 = unknown. */
    private long capacityBlocks;

    /** Relative capacity for load balancing, (0, 1000]. */
    private double weight = 1.0;

    public @Nullable String getId() {
      return id;
    }

    public void setId(@Nullable String id) {
      this.id = id;
    }

    public @Nullable String getUrl() {
      return url;
    }

    public void setUrl(@Nullable String url) {
      this.url = url;
    }

    public List<String> getModels() {
      return models;
    }

    public void setModels(List<String> models) {
      this.models = models;
    }

    public List<String> getCapabilities() {
      return capabilities;
    }

    public void setCapabilities(List<String> capabilities) {
      this.capabilities = capabilities;
    }

    public Map<String, String> getLabels() {
      return labels;
    }

    public void setLabels(Map<String, String> labels) {
      this.labels = labels;
    }

    public long getCapacityBlocks() {
      return capacityBlocks;
    }

    public void setCapacityBlocks(long capacityBlocks) {
      this.capacityBlocks = capacityBlocks;
    }

    public double getWeight() {
      return weight;
    }

    public void setWeight(double weight) {
      this.weight = weight;
    }
  }

  /** How prompts become block keys. */
  public static class Hashing {
    /** tokens (token-id blocks) or chars (text blocks, for hosts without a tokenizer). */
    private String kind = "tokens";

    /** Tokens per block for kind=tokens (match the engine's block size), 1..4096. */
    private int blockSize = 16;

    /** UTF-16 chars per block for kind=chars, 1..65536. */
    private int blockChars = 64;

    public String getKind() {
      return kind;
    }

    public void setKind(String kind) {
      this.kind = kind;
    }

    public int getBlockSize() {
      return blockSize;
    }

    public void setBlockSize(int blockSize) {
      this.blockSize = blockSize;
    }

    public int getBlockChars() {
      return blockChars;
    }

    public void setBlockChars(int blockChars) {
      this.blockChars = blockChars;
    }
  }

  /** Scoring policy. */
  public static class Scorer {
    /** Policy name: est-ttft (default) or an anchor policy (round-robin, least-request, ...). */
    private String policy = "est-ttft";

    /** Fit TTFT coefficients online from observed first tokens (est-ttft). */
    private boolean calibrate = true;

    /**
     * Whether calibration also fits each backend's constant (est-ttft; published within the
     * calibration band, at most 8× the configured one); false keeps the configured one.
     */
    private boolean calibrateIntercept = true;

    /**
     * How far a backend's own fitted coefficients may stray from the fleet-wide fit (est-ttft), a
     * factor of at least 1 (default 2; {@code Infinity} turns the bound off): keeps equal backends
     * of a saturated fleet from being fitted far apart by the queueing each absorbed.
     */
    private double fleetBand = 2.0;

    /**
     * How many recent first tokens of its own a backend needs for the whole fleet band (est-ttft),
     * 0..10000 (default 1; 0: the whole band whatever the evidence): a backend that stops getting
     * first tokens is priced at the fleet-wide fit again instead of keeping a stale fit that
     * starves it.
     */
    private double fleetBandEvidence = 1.0;

    /** Idle time after which a session pin is dropped (est-ttft). */
    private Duration sessionTtl = Duration.ofMinutes(30);

    /** Most session pins held (est-ttft); 0 turns session affinity off. */
    private long maxSessions = 100_000;

    /**
     * A briefly busy holder of at least half the prompt keeps it while it costs at most this many
     * times the best estimate (est-ttft); 0 turns prefix affinity off, else 1..100.
     */
    private double prefixAffinityRatio = 1.5;

    /** Requests waiting for their first token up to which a holder counts as briefly busy. */
    private int prefixAffinityMaxWaiting = 1;

    /**
     * Weight of the re-prefill a cold insert causes on a thrashing cache (est-ttft); 0 turns cache
     * pressure off, else up to 100.
     */
    private double cachePressure = 1.0;

    /**
     * A cache counts as thrashing when its LRU age is below 1/this of the largest candidate's
     * (est-ttft), 1..1000.
     */
    private double cacheTurnoverRatio = 4.0;

    /**
     * What a prompt token its backend holds on a lower tier (CPU, disk; from KV events with a
     * non-GPU medium) is worth as a fraction of a GPU hit (est-ttft), 0..1; 0 turns the credit off.
     */
    private double lowerTierCredit = 0.8;

    /**
     * Weight of the future waits a new session's placement decides (est-ttft term {@code
     * future-wait}, horizon learned from the sessions' gaps), 0..1000; 0 turns the term off.
     */
    private double futureWait = 64;

    /**
     * Weight of the parallel start of a new session that sends requests at once (est-ttft term
     * {@code parallel-start}: its first request where a step starts at once; its siblings within
     * the first one's prefill released from the pin), 0..1000; 0 turns the term and the release
     * off.
     */
    private double parallelStart = 1;

    /**
     * Seconds of a hot prefix's future traffic a second holder is credited with when every holder
     * of it has a prefill queued (est-ttft term {@code replica-value}), 0..3600; 0 turns the term
     * off.
     */
    private double replicaValue = 10;

    /**
     * The least share of its holders' time a prefix's own requests must keep busy before {@code
     * replica-value} credits a replica of it, 0..1.
     */
    private double replicaMinLoad = 0.05;

    /**
     * Weight of the wait a candidate's prefill beyond the least imposes on the requests that reach
     * that backend later (est-ttft term {@code extra-work}), 0..1000; 0 turns the term off.
     */
    private double extraWork = 2;

    /**
     * Seconds of a prefix's request rate that discount the extra-work price of copying it ({@code 1
     * / (1 + h × rate)}: a copy of a hot prefix is a replica its next requests reuse), 0..3600; 0
     * prices every copy in full.
     */
    private double extraWorkGroupHorizon = 1;

    /**
     * Share of a decision's candidates that must have a prefill queued before the idle ones pay the
     * extra-work price too (the fleet is saturated), 0..1 or {@code Infinity} (only busy candidates
     * pay).
     */
    private double extraWorkIdleShare = 0.75;

    /** Share of the extra-work price an idle candidate pays when it pays, 0..1; 0 never. */
    private double extraWorkIdleWeight = 0.5;

    /**
     * Least recent prefill utilisation (routed prefill ms per ms) at which an idle candidate pays
     * the extra-work price, 0..1: default 0 (every idle candidate pays once the fleet is saturated,
     * since issue #18 session 33); 0.5, the earlier default, lets a backend that idled through a
     * burst take its copy free.
     */
    private double extraWorkIdleMinUtilisation = 0;

    /**
     * Which requests count a prefix another request is still about to prefill on a busy backend as
     * not cached there (est-ttft {@code pendingPrefix}): {@code off} (default since issue #18
     * session 33: with vLLM v1's scheduling a sibling hits the blocks being computed, and the view
     * cost session fan-outs TTFT p95), {@code session} only a request's own session's siblings,
     * {@code all} every request (benchmarks/README.md, sessions 26 and 33). In every scope an
     * identical copy of a prompt a backend holds stays with it.
     */
    private PendingPrefixScope pendingPrefix = PendingPrefixScope.OFF;

    /**
     * Whether the fleet-balance term may move a pinned session (est-ttft); false: only time and
     * saturation move a session, balance places new sessions and sessionless requests.
     */
    private boolean balanceMovesSessions = false;

    /**
     * Whether the near-tie band keeps an identical copy of a prompt with the backend that holds or
     * is prefilling it while some candidate has a prefill queued (est-ttft; default true since
     * issue #18 session 34); false: a near tie goes to the fewest open leases alone.
     */
    private boolean bandKeepsIdenticalCopies = true;

    public double getFutureWait() {
      return futureWait;
    }

    public PendingPrefixScope getPendingPrefix() {
      return pendingPrefix;
    }

    public void setPendingPrefix(PendingPrefixScope pendingPrefix) {
      this.pendingPrefix = pendingPrefix;
    }

    public void setFutureWait(double futureWait) {
      this.futureWait = futureWait;
    }

    public double getParallelStart() {
      return parallelStart;
    }

    public void setParallelStart(double parallelStart) {
      this.parallelStart = parallelStart;
    }

    public double getReplicaValue() {
      return replicaValue;
    }

    public void setReplicaValue(double replicaValue) {
      this.replicaValue = replicaValue;
    }

    public double getReplicaMinLoad() {
      return replicaMinLoad;
    }

    public void setReplicaMinLoad(double replicaMinLoad) {
      this.replicaMinLoad = replicaMinLoad;
    }

    public double getExtraWork() {
      return extraWork;
    }

    public void setExtraWork(double extraWork) {
      this.extraWork = extraWork;
    }

    public double getExtraWorkGroupHorizon() {
      return extraWorkGroupHorizon;
    }

    public void setExtraWorkGroupHorizon(double extraWorkGroupHorizon) {
      this.extraWorkGroupHorizon = extraWorkGroupHorizon;
    }

    public double getExtraWorkIdleShare() {
      return extraWorkIdleShare;
    }

    public void setExtraWorkIdleShare(double extraWorkIdleShare) {
      this.extraWorkIdleShare = extraWorkIdleShare;
    }

    public double getExtraWorkIdleWeight() {
      return extraWorkIdleWeight;
    }

    public void setExtraWorkIdleWeight(double extraWorkIdleWeight) {
      this.extraWorkIdleWeight = extraWorkIdleWeight;
    }

    public double getExtraWorkIdleMinUtilisation() {
      return extraWorkIdleMinUtilisation;
    }

    public void setExtraWorkIdleMinUtilisation(double extraWorkIdleMinUtilisation) {
      this.extraWorkIdleMinUtilisation = extraWorkIdleMinUtilisation;
    }

    public boolean isBalanceMovesSessions() {
      return balanceMovesSessions;
    }

    public void setBalanceMovesSessions(boolean balanceMovesSessions) {
      this.balanceMovesSessions = balanceMovesSessions;
    }

    public boolean isBandKeepsIdenticalCopies() {
      return bandKeepsIdenticalCopies;
    }

    public void setBandKeepsIdenticalCopies(boolean bandKeepsIdenticalCopies) {
      this.bandKeepsIdenticalCopies = bandKeepsIdenticalCopies;
    }

    public double getLowerTierCredit() {
      return lowerTierCredit;
    }

    public void setLowerTierCredit(double lowerTierCredit) {
      this.lowerTierCredit = lowerTierCredit;
    }

    public double getCachePressure() {
      return cachePressure;
    }

    public void setCachePressure(double cachePressure) {
      this.cachePressure = cachePressure;
    }

    public double getCacheTurnoverRatio() {
      return cacheTurnoverRatio;
    }

    public void setCacheTurnoverRatio(double cacheTurnoverRatio) {
      this.cacheTurnoverRatio = cacheTurnoverRatio;
    }

    public double getPrefixAffinityRatio() {
      return prefixAffinityRatio;
    }

    public void setPrefixAffinityRatio(double prefixAffinityRatio) {
      this.prefixAffinityRatio = prefixAffinityRatio;
    }

    public int getPrefixAffinityMaxWaiting() {
      return prefixAffinityMaxWaiting;
    }

    public void setPrefixAffinityMaxWaiting(int prefixAffinityMaxWaiting) {
      this.prefixAffinityMaxWaiting = prefixAffinityMaxWaiting;
    }

    public String getPolicy() {
      return policy;
    }

    public void setPolicy(String policy) {
      this.policy = policy;
    }

    public double getFleetBandEvidence() {
      return fleetBandEvidence;
    }

    public void setFleetBandEvidence(double fleetBandEvidence) {
      this.fleetBandEvidence = fleetBandEvidence;
    }

    public double getFleetBand() {
      return fleetBand;
    }

    public void setFleetBand(double fleetBand) {
      this.fleetBand = fleetBand;
    }

    public boolean isCalibrateIntercept() {
      return calibrateIntercept;
    }

    public void setCalibrateIntercept(boolean calibrateIntercept) {
      this.calibrateIntercept = calibrateIntercept;
    }

    public boolean isCalibrate() {
      return calibrate;
    }

    public void setCalibrate(boolean calibrate) {
      this.calibrate = calibrate;
    }

    public Duration getSessionTtl() {
      return sessionTtl;
    }

    public void setSessionTtl(Duration sessionTtl) {
      this.sessionTtl = sessionTtl;
    }

    public long getMaxSessions() {
      return maxSessions;
    }

    public void setMaxSessions(long maxSessions) {
      this.maxSessions = maxSessions;
    }
  }

  /** Per-tenant token buckets. */
  public static class Limiter {
    /** Default tokens per minute per tenant (burst: one minute's worth); 0 = unlimited. */
    private long tokensPerMinute;

    /**
     * Per-tenant overrides: tenant → tokens per minute. A tenant id with characters other than
     * lower-case letters, digits, '-' and '.' goes in brackets ({@code tenants.[team_a]=1000});
     * unbracketed, startup fails naming it.
     */
    private Map<String, Long> tenants = new LinkedHashMap<>();

    /** Most tenants held at once. */
    private long maxTenants = 100_000;

    public long getTokensPerMinute() {
      return tokensPerMinute;
    }

    public void setTokensPerMinute(long tokensPerMinute) {
      this.tokensPerMinute = tokensPerMinute;
    }

    public Map<String, Long> getTenants() {
      return tenants;
    }

    public void setTenants(Map<String, Long> tenants) {
      this.tenants = tenants;
    }

    public long getMaxTenants() {
      return maxTenants;
    }

    public void setMaxTenants(long maxTenants) {
      this.maxTenants = maxTenants;
    }
  }

  /** Circuit breaker per backend. */
  public static class Breaker {
    /** Consecutive failures that open the breaker. */
    private int consecutiveFailures = 5;

    /** Time an open breaker waits before admitting probes. */
    private Duration cooldown = Duration.ofSeconds(10);

    /** Probe requests a half-open breaker admits. */
    private int halfOpenProbes = 3;

    public int getConsecutiveFailures() {
      return consecutiveFailures;
    }

    public void setConsecutiveFailures(int consecutiveFailures) {
      this.consecutiveFailures = consecutiveFailures;
    }

    public Duration getCooldown() {
      return cooldown;
    }

    public void setCooldown(Duration cooldown) {
      this.cooldown = cooldown;
    }

    public int getHalfOpenProbes() {
      return halfOpenProbes;
    }

    public void setHalfOpenProbes(int halfOpenProbes) {
      this.halfOpenProbes = halfOpenProbes;
    }
  }

  /** Prefix index. */
  public static class Index {
    /** Capacity in blocks of a backend whose descriptor gives none. */
    private long defaultCapacityBlocks = 100_000;

    /** Lifetime of unconfirmed predictions on backends that send KV events. */
    private Duration predictionTtl = Duration.ofSeconds(30);

    /**
     * Lower-tier (CPU, disk) blocks recorded per backend from its KV events, 0..2^31-9; 0 records
     * none; unset: four times the backend's GPU capacity.
     */
    private @Nullable Long lowerTierBlocks;

    public @Nullable Long getLowerTierBlocks() {
      return lowerTierBlocks;
    }

    public void setLowerTierBlocks(@Nullable Long lowerTierBlocks) {
      this.lowerTierBlocks = lowerTierBlocks;
    }

    /**
     * Whether the engines' reported cached tokens adjust the capacity the index models each
     * backend's cache with.
     */
    private boolean capacityFeedback;

    public boolean isCapacityFeedback() {
      return capacityFeedback;
    }

    public void setCapacityFeedback(boolean capacityFeedback) {
      this.capacityFeedback = capacityFeedback;
    }

    public long getDefaultCapacityBlocks() {
      return defaultCapacityBlocks;
    }

    public void setDefaultCapacityBlocks(long defaultCapacityBlocks) {
      this.defaultCapacityBlocks = defaultCapacityBlocks;
    }

    public Duration getPredictionTtl() {
      return predictionTtl;
    }

    public void setPredictionTtl(Duration predictionTtl) {
      this.predictionTtl = predictionTtl;
    }
  }

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public List<BackendProperties> getBackends() {
    return backends;
  }

  public void setBackends(List<BackendProperties> backends) {
    this.backends = backends;
  }

  public Map<String, String> getModelAliases() {
    return modelAliases;
  }

  public void setModelAliases(Map<String, String> modelAliases) {
    this.modelAliases = modelAliases;
  }

  public Map<String, Map<String, Integer>> getModelSplits() {
    return modelSplits;
  }

  public void setModelSplits(Map<String, Map<String, Integer>> modelSplits) {
    this.modelSplits = modelSplits;
  }

  public int getMaxBackends() {
    return maxBackends;
  }

  public void setMaxBackends(int maxBackends) {
    this.maxBackends = maxBackends;
  }

  public int getRetryBudget() {
    return retryBudget;
  }

  public void setRetryBudget(int retryBudget) {
    this.retryBudget = retryBudget;
  }

  public boolean isPrefixIsolation() {
    return prefixIsolation;
  }

  public void setPrefixIsolation(boolean prefixIsolation) {
    this.prefixIsolation = prefixIsolation;
  }

  public Hashing getHashing() {
    return hashing;
  }

  public Scorer getScorer() {
    return scorer;
  }

  public Limiter getLimiter() {
    return limiter;
  }

  public Breaker getBreaker() {
    return breaker;
  }

  public Index getIndex() {
    return index;
  }
}
