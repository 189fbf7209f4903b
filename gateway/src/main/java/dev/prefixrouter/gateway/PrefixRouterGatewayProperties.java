package dev.prefixrouter.gateway;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.util.unit.DataSize;

/** {@code prefix-router.gateway.*}: the OpenAI-compatible routes, tenants, keys and timeouts. */
@ConfigurationProperties("prefix-router.gateway")
public class PrefixRouterGatewayProperties {

  /**
   * Whether to add the routes /v1/chat/completions, /v1/completions and /v1/responses (POST,
   * through the engine) and /v1/models (GET, answered from the engine's backends).
   */
  private boolean routesEnabled = true;

  /**
   * Request header naming the tenant when API keys are off; blank = none. With API keys on, the
   * key's tenant is used and this header is ignored.
   */
  private String tenantHeader = "X-Tenant";

  /**
   * Whether the body's {@code user} may name the tenant when no header or key does. Off by default:
   * a client must not pick its own quota.
   */
  private boolean tenantFromUser;

  /** Tenant of requests that no key, header (or, if allowed, body) names. */
  private String defaultTenant = "anonymous";

  /** Largest request body read (it is read once, into memory), 1 KiB .. 1 GiB. */
  private DataSize maxBodySize = DataSize.ofMegabytes(8);

  /**
   * Longest silence of a backend's response: before the response headers of a streamed request,
   * between the response headers and the first chunk, and between two chunks (SSE-aware: a long
   * stream is fine as long as it keeps moving). Positive. A non-streamed request's wait for the
   * headers is {@code response-timeout}. Silence while the client reads nothing (its backpressure
   * holds the backend's chunks back) is the client's: after this long the request ends as
   * cancelled, not counted against the backend, and the client's connection is closed.
   */
  private Duration idleTimeout = Duration.ofSeconds(60);

  /**
   * Longest wait for a backend's response headers on a non-streamed request, whose headers come
   * only with the whole completion (so this bounds its generation time); positive. A streamed
   * request's wait for the headers is bounded by {@code idle-timeout}, since an engine answers a
   * stream's headers at once. A backend that misses it is failed as a timeout and the request fails
   * over within the retry budget (504 when none is left).
   */
  private Duration responseTimeout = Duration.ofMinutes(5);

  /**
   * Longest time a client may take to send its whole request body, positive; a slower one gets 408
   * and its connection's body is not read further (a client trickling bytes would otherwise hold a
   * connection and up to {@code max-body-size} of buffer for as long as it likes).
   */
  private Duration bodyTimeout = Duration.ofSeconds(30);

  /**
   * Ask the engine for a final usage chunk on streamed chat and completions requests ({@code
   * stream_options.include_usage}) when the client did not, so the tenant is charged real counts.
   */
  private boolean includeUsage = true;

  /**
   * What becomes of a client's {@code priority} (vLLM's scheduling priority, lower runs first):
   * {@code strip} (the default) removes it from the forwarded body, so under vLLM's {@code
   * --scheduling-policy priority} no tenant can put its requests ahead of another's (and an engine
   * on the default first-come policy, which refuses a non-zero priority, never sees one); {@code
   * forward} passes it on, for a gateway whose clients are all trusted to pick their priority. (The
   * client's {@code kv_transfer_params}, which would let it point the engine's KV connector at
   * cached blocks by id, are always removed.)
   */
  private ClientPriority clientPriority = ClientPriority.STRIP;

  /** What becomes of a client's {@code priority}; see {@code client-priority}. */
  public enum ClientPriority {
    /** Removed from the forwarded body. */
    STRIP,
    /** Forwarded as the client sent it. */
    FORWARD
  }

  /**
   * Whether each event loop keeps its own pool of upstream connections (when Spring Cloud Gateway's
   * pool is elastic, its default), so a request's two hops run on one event loop instead of handing
   * every response chunk to another loop; see {@link LoopAffinityConnectionProvider}.
   */
  private boolean upstreamLoopAffinity = true;

  /**
   * API keys, each as the SHA-256 of the key (64 hex digits) and its tenant. When any is set, every
   * request needs {@code Authorization: Bearer <key>} with one of them (else 401), and reading the
   * actuator's {@code prefixrouter} endpoint needs the admin key ({@code admin-key-sha256}; no API
   * key will do, and without an admin key those reads are refused).
   */
  private List<ApiKey> apiKeys = new ArrayList<>();

  /**
   * SHA-256 (64 hex digits) of the key that may use writing actuator operations ({@code
   * Authorization: Bearer <key>}); unset = every non-read actuator request is refused (403). When
   * this or any API key is set, reads of the actuator's {@code prefixrouter} endpoint (the fleet
   * snapshot: tenants, their remaining tokens, backends) need this key too: 401 without it, 403
   * when API keys are set and this is not. With no key configured at all, those reads are open (the
   * endpoint is read-only unless its access is raised). {@code health} and {@code prometheus} stay
   * open either way. See {@link AdminGuard}.
   */
  private @Nullable String adminKeySha256;

  /** One API key, stored only as its hash. */
  public static class ApiKey {
    /** SHA-256 of the key, 64 hex digits. */
    private @Nullable String sha256;

    /** Tenant charged for requests made with this key. */
    private @Nullable String tenant;

    public @Nullable String getSha256() {
      return sha256;
    }

    public void setSha256(@Nullable String sha256) {
      this.sha256 = sha256;
    }

    public @Nullable String getTenant() {
      return tenant;
    }

    public void setTenant(@Nullable String tenant) {
      this.tenant = tenant;
    }
  }

  public boolean isRoutesEnabled() {
    return routesEnabled;
  }

  public void setRoutesEnabled(boolean routesEnabled) {
    this.routesEnabled = routesEnabled;
  }

  public String getTenantHeader() {
    return tenantHeader;
  }

  public void setTenantHeader(String tenantHeader) {
    this.tenantHeader = tenantHeader;
  }

  public boolean isTenantFromUser() {
    return tenantFromUser;
  }

  public void setTenantFromUser(boolean tenantFromUser) {
    this.tenantFromUser = tenantFromUser;
  }

  public String getDefaultTenant() {
    return defaultTenant;
  }

  public void setDefaultTenant(String defaultTenant) {
    this.defaultTenant = defaultTenant;
  }

  public DataSize getMaxBodySize() {
    return maxBodySize;
  }

  public void setMaxBodySize(DataSize maxBodySize) {
    this.maxBodySize = maxBodySize;
  }

  public Duration getIdleTimeout() {
    return idleTimeout;
  }

  public void setIdleTimeout(Duration idleTimeout) {
    this.idleTimeout = idleTimeout;
  }

  public Duration getResponseTimeout() {
    return responseTimeout;
  }

  public Duration getBodyTimeout() {
    return bodyTimeout;
  }

  public void setBodyTimeout(Duration bodyTimeout) {
    this.bodyTimeout = bodyTimeout;
  }

  public void setResponseTimeout(Duration responseTimeout) {
    this.responseTimeout = responseTimeout;
  }

  public ClientPriority getClientPriority() {
    return clientPriority;
  }

  public void setClientPriority(ClientPriority clientPriority) {
    this.clientPriority = clientPriority;
  }

  public boolean isUpstreamLoopAffinity() {
    return upstreamLoopAffinity;
  }

  public void setUpstreamLoopAffinity(boolean upstreamLoopAffinity) {
    this.upstreamLoopAffinity = upstreamLoopAffinity;
  }

  public boolean isIncludeUsage() {
    return includeUsage;
  }

  public void setIncludeUsage(boolean includeUsage) {
    this.includeUsage = includeUsage;
  }

  public List<ApiKey> getApiKeys() {
    return apiKeys;
  }

  public void setApiKeys(List<ApiKey> apiKeys) {
    this.apiKeys = apiKeys;
  }

  public @Nullable String getAdminKeySha256() {
    return adminKeySha256;
  }

  public void setAdminKeySha256(@Nullable String adminKeySha256) {
    this.adminKeySha256 = adminKeySha256;
  }
}
