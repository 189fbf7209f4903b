package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.BlockHasher;
import org.jspecify.annotations.Nullable;

/**
 * The seed of a request's block-key chain: 0 when nothing isolates it, otherwise the hasher's seed
 * of its isolation namespace (the tenant under prefix isolation, and the cache salt when present).
 * Requests share cached prefixes exactly when their namespaces are equal. Thread-safe, immutable.
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

  static String namespace(@Nullable String tenant, @Nullable String salt) {
    String ns = tenant != null ? "tenant:" + tenant : "";
    if (salt != null) {
      ns = ns + "\u0000salt:" + salt;
    }
    return ns;
  }
}
