package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.BlockHasher;
import org.jspecify.annotations.Nullable;

/**
 * The seed of a request's block-key chain: 0 when nothing isolates it, otherwise the hasher's seed
 * of its isolation namespace (the tenant under prefix isolation, and the cache salt when present).
 * Requests share cached prefixes exactly when their namespaces are equal, and the namespace is an
 * unambiguous encoding of the pair: each part is written as a tag, its length and its chars ({@code
 * t5:acme|s3:abc}), so no tenant or salt, whatever chars it holds, spells another pair.
 * Thread-safe, immutable.
 */
final class IsolationSeeds {
  private final BlockHasher hasher;
  private final boolean prefixIsolation;

  IsolationSeeds(BlockHasher hasher, boolean prefixIsolation) {
    this.hasher = hasher;
    this.prefixIsolation = prefixIsolation;
  }

  long seed(RouteRequest r) {
    String salt = r.cacheSalt();
    if (!prefixIsolation && salt == null) {
      return 0L;
    }
    return hasher.seed(namespace(prefixIsolation ? r.tenant() : null, salt));
  }

  /** The namespace of a (tenant, salt) pair; injective over pairs, nulls included. */
  static String namespace(@Nullable String tenant, @Nullable String salt) {
    StringBuilder sb = new StringBuilder(16 + length(tenant) + length(salt));
    part(sb, 't', tenant);
    sb.append('|');
    part(sb, 's', salt);
    return sb.toString();
  }

  private static void part(StringBuilder sb, char tag, @Nullable String value) {
    if (value == null) {
      sb.append(tag).append('-');
    } else {
      sb.append(tag).append(value.length()).append(':').append(value);
    }
  }

  private static int length(@Nullable String s) {
    return s == null ? 0 : s.length();
  }
}
