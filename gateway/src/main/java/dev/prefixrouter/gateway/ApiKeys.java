package dev.prefixrouter.gateway;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * API keys known only by their SHA-256: {@code Authorization: Bearer <key>} → tenant. The keys
 * themselves are never stored or logged. Immutable and thread-safe; a lookup hashes the key once
 * (cost linear in its length, at most {@value #MAX_KEY_LENGTH} chars).
 */
public final class ApiKeys {
  /** Longest key accepted (longer ones are refused without hashing). */
  public static final int MAX_KEY_LENGTH = 4096;

  private static final String BEARER = "bearer ";
  private final Map<String, String> tenantBySha256;

  private ApiKeys(Map<String, String> tenantBySha256) {
    this.tenantBySha256 = Map.copyOf(tenantBySha256);
  }

  /**
   * Builds the lookup from configuration.
   *
   * @throws IllegalArgumentException naming the entry whose hash is not 64 hex digits, whose tenant
   *     is blank, or whose hash appears twice
   */
  public static ApiKeys of(List<PrefixRouterGatewayProperties.ApiKey> keys) {
    Map<String, String> out = new HashMap<>();
    for (int i = 0; i < keys.size(); i++) {
      PrefixRouterGatewayProperties.ApiKey k = keys.get(i);
      String where = "prefix-router.gateway.api-keys[" + i + "]";
      String hash = k.getSha256();
      if (hash == null || !isSha256Hex(hash)) {
        throw new IllegalArgumentException(where + ".sha256 must be 64 hex digits (a SHA-256)");
      }
      String tenant = k.getTenant();
      if (tenant == null || tenant.isBlank()) {
        throw new IllegalArgumentException(where + ".tenant must not be blank");
      }
      if (out.put(hash.toLowerCase(Locale.ROOT), tenant) != null) {
        throw new IllegalArgumentException(where + ".sha256 is listed twice");
      }
    }
    return new ApiKeys(out);
  }

  /** Whether any key is configured (then every request must carry one). */
  public boolean enabled() {
    return !tenantBySha256.isEmpty();
  }

  /**
   * The tenant of the key in an {@code Authorization} header value, or null if the header is
   * absent, not a bearer token, too long, or names no configured key.
   */
  public @Nullable String tenant(@Nullable String authorization) {
    String key = bearer(authorization);
    return key == null ? null : tenantBySha256.get(sha256Hex(key));
  }

  /** The key of a {@code Bearer} header value, or null. */
  static @Nullable String bearer(@Nullable String authorization) {
    if (authorization == null
        || authorization.length() <= BEARER.length()
        || authorization.length() > BEARER.length() + MAX_KEY_LENGTH
        || !authorization.regionMatches(true, 0, BEARER, 0, BEARER.length())) {
      return null;
    }
    String key = authorization.substring(BEARER.length()).strip();
    return key.isEmpty() ? null : key;
  }

  /** Lower-case hex SHA-256 of the UTF-8 bytes of {@code key}. */
  public static String sha256Hex(String key) {
    try {
      MessageDigest d = MessageDigest.getInstance("SHA-256");
      return HexFormat.of().formatHex(d.digest(key.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every JVM", e);
    }
  }

  static boolean isSha256Hex(String s) {
    if (s.length() != 64) {
      return false;
    }
    for (int i = 0; i < s.length(); i++) {
      if (Character.digit(s.charAt(i), 16) < 0) {
        return false;
      }
    }
    return true;
  }
}
