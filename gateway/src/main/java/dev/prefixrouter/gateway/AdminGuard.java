package dev.prefixrouter.gateway;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Locale;
import org.jspecify.annotations.Nullable;
import org.springframework.core.Ordered;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
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
  private final String basePath;
  private final byte @Nullable [] adminSha256;

  /**
   * @param basePath the actuator's base path (e.g. {@code /actuator})
   * @param adminKeySha256 64 hex digits, or null to refuse every write
   * @throws IllegalArgumentException if the hash is not 64 hex digits
   */
  public AdminGuard(String basePath, @Nullable String adminKeySha256) {
    this.basePath = basePath.endsWith("/") ? basePath : basePath + "/";
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
    String path = exchange.getRequest().getPath().pathWithinApplication().value();
    if (m == HttpMethod.GET
        || m == HttpMethod.HEAD
        || m == HttpMethod.OPTIONS
        || !(path + "/").startsWith(basePath)) {
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

  @Override
  public int getOrder() {
    return Ordered.HIGHEST_PRECEDENCE;
  }
}
