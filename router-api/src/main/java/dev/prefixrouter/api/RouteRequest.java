package dev.prefixrouter.api;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * One request to route. Immutable; build it with {@link #builder(String, String)}.
 *
 * <pre>{@code
 * RouteRequest r = RouteRequest.builder("acme", "qwen2.5-7b")
 *     .prompt(Prompt.ofTokens(ids)).maxOutputTokens(256).session("chat-42").build();
 * }</pre>
 *
 * @param tenant who is charged for the request (token buckets, prefix isolation); never blank, at
 *     most {@link #MAX_NAME_LENGTH} characters
 * @param model the requested model name, before alias resolution and A/B splits; never blank, at
 *     most {@link #MAX_NAME_LENGTH} characters
 * @param prompt the prompt
 * @param sessionId optional conversation id for session affinity and sticky A/B splits; at most
 *     {@link #MAX_SESSION_ID_LENGTH} characters
 * @param maxOutputTokens output tokens reserved against the tenant's bucket at admission (trued up
 *     on completion); {@code >= 0}
 * @param sheddable whether the request may be rejected with {@link RejectReason#OVERLOADED} when
 *     its TTFT budget cannot be met
 * @param requiredCapabilities capabilities every candidate backend must have (e.g. {@code vision},
 *     a LoRA adapter name)
 * @param requiredLabels labels every candidate backend must carry with exactly these values
 * @param ttftBudget optional time-to-first-token objective for SLO admission
 * @param requestId optional id echoed in logs and listener events
 * @param cacheSalt optional vLLM {@code cache_salt}: requests with different salts never share
 *     cached prefixes, so the salt is folded into the block-key seed; at most {@link
 *     #MAX_CACHE_SALT_LENGTH} characters
 * @param media content digests of the request's media (images, audio, video), e.g. the SHA-256 hex
 *     digests router-vllm's reader renders into the prompt; a scorer may prefer backends that
 *     processed the same media recently (their encoder cache). At most {@link #MAX_MEDIA}, each
 *     1..{@link #MAX_MEDIA_DIGEST_LENGTH} characters; empty for none
 * @param additionalPromptTokens estimated tokens of the request's other prompts, which the backend
 *     prefills too but the request is not routed on (a {@code /v1/completions} body with a list of
 *     prompts: router-vllm's reader routes on the first and counts the rest here). They count as
 *     prompt tokens everywhere else: the reservation against the tenant's bucket and its {@link
 *     RejectReason#REQUEST_TOO_LARGE} check, {@link Routed#promptTokens()}, the charges of a failed
 *     or cancelled request, and the cost the scorers estimate. The engine's cached-token count of
 *     such a request covers every prompt, so it is not compared with the routed prompt's match
 *     ({@link CacheAccuracy}, the index's feedback). In [0, {@link #MAX_ADDITIONAL_PROMPT_TOKENS}];
 *     0 for a single prompt
 */
public record RouteRequest(
    String tenant,
    String model,
    Prompt prompt,
    @Nullable String sessionId,
    int maxOutputTokens,
    boolean sheddable,
    Set<String> requiredCapabilities,
    Map<String, String> requiredLabels,
    @Nullable Duration ttftBudget,
    @Nullable String requestId,
    @Nullable String cacheSalt,
    Set<String> media,
    int additionalPromptTokens) {

  /** Most media digests one request carries. */
  public static final int MAX_MEDIA = 64;

  /** Longest accepted media digest. */
  public static final int MAX_MEDIA_DIGEST_LENGTH = 128;

  /** Largest accepted {@code maxOutputTokens}: 16 Mi tokens. */
  public static final int MAX_OUTPUT_TOKENS_LIMIT = 1 << 24;

  /**
   * Longest accepted tenant and model name (characters): every per-tenant structure (buckets,
   * metrics, isolation seeds) holds the name, so its length bounds their memory with their count.
   */
  public static final int MAX_NAME_LENGTH = 256;

  /** Longest accepted session id (characters): session pins and terms hold one per session. */
  public static final int MAX_SESSION_ID_LENGTH = 1024;

  /** Longest accepted {@code cacheSalt}. */
  public static final int MAX_CACHE_SALT_LENGTH = 1024;

  /** Largest accepted {@code additionalPromptTokens}: 256 Mi tokens. */
  public static final int MAX_ADDITIONAL_PROMPT_TOKENS = 1 << 28;

  public RouteRequest {
    Objects.requireNonNull(tenant, "tenant");
    Objects.requireNonNull(model, "model");
    Objects.requireNonNull(prompt, "prompt");
    if (tenant.isBlank()) {
      throw new IllegalArgumentException("tenant must not be blank");
    }
    if (model.isBlank()) {
      throw new IllegalArgumentException("model must not be blank");
    }
    if (tenant.length() > MAX_NAME_LENGTH) {
      throw new IllegalArgumentException(
          "tenant must be at most " + MAX_NAME_LENGTH + " characters, was " + tenant.length());
    }
    if (model.length() > MAX_NAME_LENGTH) {
      throw new IllegalArgumentException(
          "model must be at most " + MAX_NAME_LENGTH + " characters, was " + model.length());
    }
    if (maxOutputTokens < 0 || maxOutputTokens > MAX_OUTPUT_TOKENS_LIMIT) {
      throw new IllegalArgumentException(
          "maxOutputTokens must be in [0, "
              + MAX_OUTPUT_TOKENS_LIMIT
              + "], was "
              + maxOutputTokens);
    }
    if (additionalPromptTokens < 0 || additionalPromptTokens > MAX_ADDITIONAL_PROMPT_TOKENS) {
      throw new IllegalArgumentException(
          "additionalPromptTokens must be in [0, "
              + MAX_ADDITIONAL_PROMPT_TOKENS
              + "], was "
              + additionalPromptTokens);
    }
    // the empty case is the common one: Set.of()/Map.of() are shared, copyOf would allocate
    requiredCapabilities =
        requiredCapabilities.isEmpty() ? Set.of() : Set.copyOf(requiredCapabilities);
    requiredLabels = requiredLabels.isEmpty() ? Map.of() : Map.copyOf(requiredLabels);
    if (ttftBudget != null && (ttftBudget.isNegative() || ttftBudget.isZero())) {
      throw new IllegalArgumentException("ttftBudget must be positive, was " + ttftBudget);
    }
    if (sessionId != null && sessionId.isEmpty()) {
      throw new IllegalArgumentException("sessionId must not be empty (use null for none)");
    }
    if (sessionId != null && sessionId.length() > MAX_SESSION_ID_LENGTH) {
      throw new IllegalArgumentException(
          "sessionId must be at most "
              + MAX_SESSION_ID_LENGTH
              + " characters, was "
              + sessionId.length());
    }
    if (cacheSalt != null && cacheSalt.length() > MAX_CACHE_SALT_LENGTH) {
      throw new IllegalArgumentException(
          "cacheSalt must be at most "
              + MAX_CACHE_SALT_LENGTH
              + " characters, was "
              + cacheSalt.length());
    }
    media = media.isEmpty() ? Set.of() : Set.copyOf(media);
    if (media.size() > MAX_MEDIA) {
      throw new IllegalArgumentException(
          "at most " + MAX_MEDIA + " media digests, got " + media.size());
    }
    for (String d : media) {
      if (d.isEmpty() || d.length() > MAX_MEDIA_DIGEST_LENGTH) {
        throw new IllegalArgumentException(
            "a media digest must be 1.."
                + MAX_MEDIA_DIGEST_LENGTH
                + " characters, was "
                + d.length());
      }
    }
  }

  /** A request with one prompt (no {@code additionalPromptTokens}). */
  public RouteRequest(
      String tenant,
      String model,
      Prompt prompt,
      @Nullable String sessionId,
      int maxOutputTokens,
      boolean sheddable,
      Set<String> requiredCapabilities,
      Map<String, String> requiredLabels,
      @Nullable Duration ttftBudget,
      @Nullable String requestId,
      @Nullable String cacheSalt,
      Set<String> media) {
    this(
        tenant,
        model,
        prompt,
        sessionId,
        maxOutputTokens,
        sheddable,
        requiredCapabilities,
        requiredLabels,
        ttftBudget,
        requestId,
        cacheSalt,
        media,
        0);
  }

  /** A request as before media digests were carried (none). */
  public RouteRequest(
      String tenant,
      String model,
      Prompt prompt,
      @Nullable String sessionId,
      int maxOutputTokens,
      boolean sheddable,
      Set<String> requiredCapabilities,
      Map<String, String> requiredLabels,
      @Nullable Duration ttftBudget,
      @Nullable String requestId,
      @Nullable String cacheSalt) {
    this(
        tenant,
        model,
        prompt,
        sessionId,
        maxOutputTokens,
        sheddable,
        requiredCapabilities,
        requiredLabels,
        ttftBudget,
        requestId,
        cacheSalt,
        Set.of(),
        0);
  }

  /**
   * The request's estimated prompt tokens: the routed prompt's estimate plus {@link
   * #additionalPromptTokens}, at most {@link Integer#MAX_VALUE}.
   */
  public int promptTokens() {
    return (int)
        Math.min(Integer.MAX_VALUE, (long) prompt.estimatedTokens() + additionalPromptTokens);
  }

  public static Builder builder(String tenant, String model) {
    return new Builder(tenant, model);
  }

  /** A builder preloaded with this request's fields. */
  public Builder toBuilder() {
    Builder b = new Builder(tenant, model);
    b.prompt = prompt;
    b.sessionId = sessionId;
    b.maxOutputTokens = maxOutputTokens;
    b.sheddable = sheddable;
    if (!requiredCapabilities.isEmpty()) {
      b.capabilities().addAll(requiredCapabilities);
    }
    if (!requiredLabels.isEmpty()) {
      b.labels().putAll(requiredLabels);
    }
    b.ttftBudget = ttftBudget;
    b.requestId = requestId;
    b.cacheSalt = cacheSalt;
    if (!media.isEmpty()) {
      b.media().addAll(media);
    }
    b.additionalPromptTokens = additionalPromptTokens;
    return b;
  }

  /** Builder for {@link RouteRequest}; not thread-safe. Setters validate at once. */
  public static final class Builder {
    private final String tenant;
    private final String model;
    private static final Prompt NO_PROMPT = Prompt.ofTokens();

    private Prompt prompt = NO_PROMPT;
    private @Nullable String sessionId;
    private int maxOutputTokens;
    private boolean sheddable;
    private @Nullable Set<String> capabilities; // created on first use
    private @Nullable Map<String, String> labels;
    private @Nullable Duration ttftBudget;
    private @Nullable String requestId;
    private @Nullable String cacheSalt;
    private @Nullable Set<String> media;
    private int additionalPromptTokens;

    private Builder(String tenant, String model) {
      this.tenant = Objects.requireNonNull(tenant, "tenant");
      this.model = Objects.requireNonNull(model, "model");
    }

    private Set<String> capabilities() {
      if (capabilities == null) {
        capabilities = new LinkedHashSet<>();
      }
      return capabilities;
    }

    private Set<String> media() {
      if (media == null) {
        media = new LinkedHashSet<>();
      }
      return media;
    }

    /** Adds the content digest of one media item (image, audio, video) the request carries. */
    public Builder media(String digest) {
      media().add(Objects.requireNonNull(digest, "digest"));
      return this;
    }

    private Map<String, String> labels() {
      if (labels == null) {
        labels = new LinkedHashMap<>();
      }
      return labels;
    }

    public Builder prompt(Prompt prompt) {
      this.prompt = Objects.requireNonNull(prompt, "prompt");
      return this;
    }

    public Builder session(@Nullable String sessionId) {
      this.sessionId = sessionId;
      return this;
    }

    public Builder maxOutputTokens(int maxOutputTokens) {
      if (maxOutputTokens < 0) {
        throw new IllegalArgumentException("maxOutputTokens must be >= 0, was " + maxOutputTokens);
      }
      this.maxOutputTokens = maxOutputTokens;
      return this;
    }

    public Builder sheddable(boolean sheddable) {
      this.sheddable = sheddable;
      return this;
    }

    public Builder requireCapability(String capability) {
      capabilities().add(Objects.requireNonNull(capability, "capability"));
      return this;
    }

    public Builder requireLabel(String key, String value) {
      labels().put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
      return this;
    }

    public Builder ttftBudget(@Nullable Duration ttftBudget) {
      this.ttftBudget = ttftBudget;
      return this;
    }

    public Builder requestId(@Nullable String requestId) {
      this.requestId = requestId;
      return this;
    }

    public Builder cacheSalt(@Nullable String cacheSalt) {
      this.cacheSalt = cacheSalt;
      return this;
    }

    /** See {@link RouteRequest#additionalPromptTokens()}; validated by {@link #build()}. */
    public Builder additionalPromptTokens(int tokens) {
      this.additionalPromptTokens = tokens;
      return this;
    }

    public RouteRequest build() {
      return new RouteRequest(
          tenant,
          model,
          prompt,
          sessionId,
          maxOutputTokens,
          sheddable,
          capabilities == null ? Set.of() : capabilities,
          labels == null ? Map.of() : labels,
          ttftBudget,
          requestId,
          cacheSalt,
          media == null ? Set.of() : media,
          additionalPromptTokens);
    }
  }
}
