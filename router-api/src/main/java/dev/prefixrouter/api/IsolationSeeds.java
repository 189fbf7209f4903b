package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.BlockHasher;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * The seed of a request's block-key chain: 0 when nothing isolates it, otherwise the hasher's seed
 * of its isolation namespace (the tenant under prefix isolation, the cache salt when present, and
 * the LoRA adapter when the request's model is a declared adapter). Requests share cached prefixes
 * exactly when their namespaces are equal, and the namespace is an unambiguous encoding of the
 * triple: each part is written as a tag, its length and its chars ({@code t5:acme|s3:abc}, plus
 * {@code |l4:sql1} for an adapter, absent otherwise so that base-model seeds are unchanged), so no
 * tenant, salt or adapter, whatever chars it holds, spells another triple.
 *
 * <p>KV events carry a salt but no tenant ({@link #eventSeed}). Without prefix isolation a salt
 * alone names the namespace. Under prefix isolation the seed of the last routed request with that
 * salt is used, learned here (at most {@value #LEARNED_SALTS} salts; past that the table is emptied
 * and learnt again), else the seed of the salt as its own tenant (the setup {@code
 * RoutingEngineBuilder.prefixIsolation} recommends: the tenant passed as {@code cache_salt}), or,
 * for a tenant-bound salt {@code <length>:<tenant>[|<client salt>]} as the gateway forwards them,
 * the seed of that tenant with that salt ({@link #saltTenant}). A salt shared by several tenants
 * keys events as the last of them; their engine blocks are shared too, as vLLM isolates by salt
 * alone. An event's {@code lora_name} is the adapter part: vLLM hashes it into every block of the
 * adapter's requests. Thread-safe.
 */
final class IsolationSeeds {
  /** Salts whose isolated seed is remembered for KV events. */
  static final int LEARNED_SALTS = 65_536;

  private final BlockHasher hasher;
  private final boolean prefixIsolation;
  private final Set<String> adapters;
  private final ConcurrentHashMap<String, Long> learned = new ConcurrentHashMap<>();

  IsolationSeeds(BlockHasher hasher, boolean prefixIsolation) {
    this(hasher, prefixIsolation, Set.of());
  }

  IsolationSeeds(BlockHasher hasher, boolean prefixIsolation, Set<String> loraAdapters) {
    this.hasher = hasher;
    this.prefixIsolation = prefixIsolation;
    this.adapters = Set.copyOf(loraAdapters);
  }

  /** The seed of a request for {@code model} (resolved): its tenant, salt and adapter. */
  long seed(RouteRequest r, String model) {
    String salt = r.cacheSalt();
    String lora = adapters.isEmpty() || !adapters.contains(model) ? null : model;
    if (!prefixIsolation && salt == null && lora == null) {
      return 0L;
    }
    long seed = hasher.seed(namespace(prefixIsolation ? r.tenant() : null, salt, lora));
    if (prefixIsolation && salt != null) {
      String key = namespace(null, salt, lora); // a namespace: no salt spells another's key
      Long known = learned.get(key);
      if (known == null || known != seed) {
        if (learned.size() >= LEARNED_SALTS) {
          learned.clear();
        }
        learned.put(key, seed);
      }
    }
    return seed;
  }

  /**
   * The seed of the namespace a request's cache content lives in when served by {@code model}
   * (resolved: an alias or a split may name an adapter), as its keys are seeded: its tenant under
   * prefix isolation, its salt, its adapter; for per-request state keyed by content, such as chunk
   * ids, that must not be shared across namespaces the KV cache keeps apart. Unlike {@link #seed},
   * never 0 and never learnt: the content of the base namespace has a seed of its own too.
   */
  long contentSeed(RouteRequest r, String model) {
    String lora = adapters.isEmpty() || !adapters.contains(model) ? null : model;
    return hasher.seed(namespace(prefixIsolation ? r.tenant() : null, r.cacheSalt(), lora));
  }

  /** The seed of the base namespace (no tenant, salt or adapter), as {@link #contentSeed}. */
  long baseContentSeed() {
    return hasher.seed(namespace(null, null, null));
  }

  /** {@link #seed(RouteRequest, String)} for a request's own model (tests). */
  long seed(RouteRequest r) {
    return seed(r, r.model());
  }

  /** The seed of the requests with {@code salt} whose blocks a KV event reports (see above). */
  long eventSeed(String salt) {
    return eventSeed(salt, null);
  }

  /**
   * The seed of the requests with {@code salt} (or none) for adapter {@code lora} (or the base
   * model) whose blocks a KV event reports; 0 for neither.
   */
  long eventSeed(@Nullable String salt, @Nullable String lora) {
    if (salt == null) {
      return lora == null ? 0L : hasher.seed(namespace(null, null, lora));
    }
    if (!prefixIsolation) {
      return hasher.seed(namespace(null, salt, lora));
    }
    Long known = learned.get(namespace(null, salt, lora));
    return known != null ? known : hasher.seed(namespace(saltTenant(salt), salt, lora));
  }

  /**
   * The tenant an unlearnt salt names: for a tenant-bound salt {@code <length>:<tenant>}, followed
   * by nothing or by {@code |<client salt>} (what the gateway forwards under prefix isolation),
   * that tenant; otherwise the salt itself (the tenant passed as its own salt).
   */
  static String saltTenant(String salt) {
    int colon = salt.indexOf(':');
    if (colon < 1 || colon > 9) {
      return salt;
    }
    int length = 0;
    for (int i = 0; i < colon; i++) {
      char ch = salt.charAt(i);
      if (ch < '0' || ch > '9') {
        return salt;
      }
      length = 10 * length + (ch - '0');
    }
    int end = colon + 1 + length;
    if (end > salt.length() || (end < salt.length() && salt.charAt(end) != '|')) {
      return salt;
    }
    return salt.substring(colon + 1, end);
  }

  /** The namespace of a (tenant, salt) pair; injective over pairs, nulls included. */
  static String namespace(@Nullable String tenant, @Nullable String salt) {
    return namespace(tenant, salt, null);
  }

  /**
   * The namespace of a (tenant, salt, adapter) triple; injective over triples, nulls included
   * (without an adapter, the pair's namespace).
   */
  static String namespace(@Nullable String tenant, @Nullable String salt, @Nullable String lora) {
    StringBuilder sb = new StringBuilder(20 + length(tenant) + length(salt) + length(lora));
    part(sb, 't', tenant);
    sb.append('|');
    part(sb, 's', salt);
    if (lora != null) {
      sb.append('|');
      part(sb, 'l', lora);
    }
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
