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
 * (403). Applies to the application's own port and to a separate {@code management.server.port}
 * alike (the management context's web handler takes its web filters from the application context
 * too; {@code ManagementPortAdminGuardTest} holds it to that). Stateless; the hash comparison is
 * constant-time.
 */
public final class AdminGuard implements WebFilter, Ordered {
  private final List<String> baseSegments;
  private final byte @Nullable [] adminSha256;

  /**
   * @param basePath the actuator's base path (e.g. {@code /actuator})
   * @param adminKeySha256 64 hex digits, or null to refuse every write
   * @throws IllegalArgumentException if the hash is not 64 hex digits
   */
  public AdminGuard(String basePath, @Nullable String adminKeySha256) {
    this.baseSegments = segments(basePath);
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
    if (m == HttpMethod.GET
        || m == HttpMethod.HEAD
        || m == HttpMethod.OPTIONS
        || !underBasePath(exchange.getRequest().getPath().pathWithinApplication())) {
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
        adminSha256 == null
            ? "actuator writes are disabled (set prefix-router.gateway.admin-key-sha256)"
            : "actuator writes need Authorization: Bearer <admin key>");
  }

  /**
   * Whether the path is under the actuator's base path as the handler mappings see it: segments
   * percent-decoded, their {@code ;parameters} dropped, empty segments skipped, compared without
   * regard to case (a guard that compared the raw path let {@code /%61ctuator/...} and {@code
   * /actuator;x/...} through to the endpoint).
   */
  private boolean underBasePath(PathContainer path) {
    int matched = 0; // base segments matched so far
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
        if (matched == baseSegments.size()) {
          return true;
        }
        String base = baseSegments.get(matched++);
        if (to - from != base.length() || !v.regionMatches(true, from, base, 0, base.length())) {
          return false;
        }
      }
    }
    return matched == baseSegments.size();
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
