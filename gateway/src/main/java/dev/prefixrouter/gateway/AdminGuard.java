package dev.prefixrouter.gateway;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;
import org.springframework.core.Ordered;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.http.server.PathContainer;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * Protects the actuator's writing operations (such as {@code POST /actuator/prefixrouter/{id}},
 * which changes the fleet): any request under the actuator base path other than GET, HEAD or
 * OPTIONS needs {@code Authorization: Bearer <admin key>} whose SHA-256 is {@code
 * prefix-router.gateway.admin-key-sha256}; without that property every such request is refused
 * (403).
 *
 * <p>With {@code guardReads} (the auto-configuration sets it when any API key or the admin key is
 * configured), GET and HEAD of the {@code prefixrouter} endpoint ({@code /actuator/prefixrouter}
 * and everything under it: the fleet snapshot, with every tenant's name, remaining tokens and
 * rejections, and every backend) need the admin key too: 401 without it or with another key (a
 * tenant's API key is not enough), 403 when no admin key is configured. A gateway that asks its
 * clients for keys does not show them its tenants. Other reads ({@code health}, {@code prometheus},
 * the actuator's index) and OPTIONS stay open; without any key configured reads stay open as well.
 *
 * <p>Applies to the application's own port and to a separate {@code management.server.port} alike
 * (the management context's web handler takes its web filters from the application context too;
 * {@code ManagementPortAdminGuardTest} holds it to that). Paths are compared as the handler
 * mappings see them (decoded, without {@code ;parameters} or empty segments, regardless of case).
 * Stateless; the hash comparison is constant-time.
 */
public final class AdminGuard implements WebFilter, Ordered {
  /** The {@code prefixrouter} endpoint's path under the base path unless it is path-mapped. */
  public static final String ENDPOINT_PATH = "prefixrouter";

  private final List<String> baseSegments;
  private final List<String> endpointSegments;
  private final boolean guardReads;
  private final byte @Nullable [] adminSha256;

  /**
   * As {@link #AdminGuard(String, String, String, boolean)} with the endpoint at {@value
   * #ENDPOINT_PATH}, its reads guarded when an admin key is given.
   */
  public AdminGuard(String basePath, @Nullable String adminKeySha256) {
    this(basePath, ENDPOINT_PATH, adminKeySha256, adminKeySha256 != null);
  }

  /**
   * @param basePath the actuator's base path (e.g. {@code /actuator})
   * @param endpointPath the {@code prefixrouter} endpoint's path under the base path ({@value
   *     #ENDPOINT_PATH} unless {@code management.endpoints.web.path-mapping.prefixrouter} says
   *     otherwise)
   * @param adminKeySha256 64 hex digits, or null to refuse every write (and, with {@code
   *     guardReads}, every read of the endpoint)
   * @param guardReads whether reads of the endpoint need the admin key too
   * @throws IllegalArgumentException if the hash is not 64 hex digits, or the endpoint path is
   *     blank
   */
  public AdminGuard(
      String basePath, String endpointPath, @Nullable String adminKeySha256, boolean guardReads) {
    this.baseSegments = segments(basePath);
    List<String> endpoint = new ArrayList<>(baseSegments);
    endpoint.addAll(segments(endpointPath));
    if (endpoint.size() == baseSegments.size()) {
      throw new IllegalArgumentException("the prefixrouter endpoint's path must not be blank");
    }
    this.endpointSegments = List.copyOf(endpoint);
    this.guardReads = guardReads;
    if (adminKeySha256 != null && !ApiKeys.isSha256Hex(adminKeySha256)) {
      throw new IllegalArgumentException(
          "prefix-router.gateway.admin-key-sha256 must be 64 hex digits (a SHA-256)");
    }
    this.adminSha256 =
        adminKeySha256 == null
            ? null
            : adminKeySha256.toLowerCase(Locale.ROOT).getBytes(StandardCharsets.US_ASCII);
  }

  @Override
  public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
    HttpMethod m = exchange.getRequest().getMethod();
    PathContainer path = exchange.getRequest().getPath().pathWithinApplication();
    boolean read = m == HttpMethod.GET || m == HttpMethod.HEAD;
    if (m == HttpMethod.OPTIONS
        || (read && (!guardReads || !under(path, endpointSegments)))
        || (!read && !under(path, baseSegments))) {
      return chain.filter(exchange);
    }
    String key =
        ApiKeys.bearer(exchange.getRequest().getHeaders().getFirst(HttpHeaders.AUTHORIZATION));
    if (adminSha256 != null
        && key != null
        && MessageDigest.isEqual(
            adminSha256, ApiKeys.sha256Hex(key).getBytes(StandardCharsets.US_ASCII))) {
      return chain.filter(exchange);
    }
    return OpenAiErrors.write(
        exchange.getResponse(),
        adminSha256 == null ? 403 : 401,
        "invalid_request_error",
        "admin_key_required",
        null,
        read
            ? adminSha256 == null
                ? "the prefixrouter endpoint is not readable while API keys are configured and"
                    + " no admin key is (set prefix-router.gateway.admin-key-sha256)"
                : "the prefixrouter endpoint needs Authorization: Bearer <admin key>"
            : adminSha256 == null
                ? "actuator writes are disabled (set prefix-router.gateway.admin-key-sha256)"
                : "actuator writes need Authorization: Bearer <admin key>");
  }

  /**
   * Whether the path is at or under {@code prefix} (the actuator's base path or the endpoint's
   * path) as the handler mappings see it: segments percent-decoded, their {@code ;parameters}
   * dropped, empty segments skipped, compared without regard to case (a guard that compared the raw
   * path let {@code /%61ctuator/...} and {@code /actuator;x/...} through to the endpoint).
   */
  private static boolean under(PathContainer path, List<String> prefix) {
    int matched = 0; // prefix segments matched so far
    for (PathContainer.Element e : path.elements()) {
      if (!(e instanceof PathContainer.PathSegment s)) {
        continue;
      }
      String v = s.valueToMatch();
      // the non-empty parts of the decoded segment (a decoded %2F splits it), without allocating
      for (int from = 0, to; from < v.length(); from = to + 1) {
        to = v.indexOf('/', from);
        if (to < 0) {
          to = v.length();
        }
        if (to == from) {
          continue;
        }
        if (matched == prefix.size()) {
          return true;
        }
        String base = prefix.get(matched++);
        if (to - from != base.length() || !v.regionMatches(true, from, base, 0, base.length())) {
          return false;
        }
      }
    }
    return matched == prefix.size();
  }

  /** The non-empty parts of {@code path} split at {@code /}. */
  private static List<String> segments(String path) {
    List<String> out = new ArrayList<>();
    for (String part : path.split("/")) {
      if (!part.isEmpty()) {
        out.add(part);
      }
    }
    return out;
  }

  @Override
  public int getOrder() {
    return Ordered.HIGHEST_PRECEDENCE;
  }
}
