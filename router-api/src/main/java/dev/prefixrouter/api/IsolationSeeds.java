package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.BlockHasher;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * The seed of a request's block-key chain: 0 when nothing isolates it, otherwise the hasher's seed
 * of its isolation namespace (the tenant under prefix isolation, and the cache salt when present).
 * Requests share cached prefixes exactly when their namespaces are equal, and the namespace is an
 * unambiguous encoding of the pair: each part is written as a tag, its length and its chars ({@code
 * t5:acme|s3:abc}), so no tenant or salt, whatever chars it holds, spells another pair.
 *
 * <p>KV events carry a salt but no tenant ({@link #eventSeed}). Without prefix isolation a salt
 * alone names the namespace. Under prefix isolation the seed of the last routed request with that
 * salt is used, learned here (at most {@value #LEARNED_SALTS} salts; past that the table is emptied
 * and learnt again), else the seed of the salt as its own tenant (the setup {@code
 * RoutingEngineBuilder.prefixIsolation} recommends: the tenant passed as {@code cache_salt}). A
 * salt shared by several tenants keys events as the last of them; their engine blocks are shared
 * too, as vLLM isolates by salt alone. Thread-safe.
 */
final class IsolationSeeds {
  /** Salts whose isolated seed is remembered for KV events. */
  static final int LEARNED_SALTS = 65_536;

  private final BlockHasher hasher;
  private final boolean prefixIsolation;
  private final ConcurrentHashMap<String, Long> learned = new ConcurrentHashMap<>();

  IsolationSeeds(BlockHasher hasher, boolean prefixIsolation) {
    this.hasher = hasher;
    this.prefixIsolation = prefixIsolation;
  }

  long seed(RouteRequest r) {
    String salt = r.cacheSalt();
    if (!prefixIsolation && salt == null) {
      return 0L;
    }
    long seed = hasher.seed(namespace(prefixIsolation ? r.tenant() : null, salt));
    if (prefixIsolation && salt != null) {
      Long known = learned.get(salt);
      if (known == null || known != seed) {
        if (learned.size() >= LEARNED_SALTS) {
          learned.clear();
        }
        learned.put(salt, seed);
      }
    }
    return seed;
  }

  /** The seed of the requests with {@code salt} whose blocks a KV event reports (see above). */
  long eventSeed(String salt) {
    if (!prefixIsolation) {
      return hasher.seed(namespace(null, salt));
    }
    Long known = learned.get(salt);
    return known != null ? known : hasher.seed(namespace(salt, salt));
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
