package dev.prefixrouter.api;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Describes one inference backend (one vLLM / SGLang server, or one data-parallel engine of it).
 * Immutable; change a backend at runtime by {@link BackendRegistry#add adding} an updated
 * descriptor with the same id.
 *
 * <pre>{@code
 * Backend b = Backend.of("b0", "qwen2.5-7b").withCapacityBlocks(20_000).withCapability("vision");
 * }</pre>
 *
 * @param id unique id, 1..256 characters, none of them whitespace, a control character (Unicode Cc:
 *     NUL, ESC, U+0085...), a format character (Cf: U+202E...) or a line or paragraph separator, so
 *     that an id is safe to write into a log line
 * @param models served model names (at least one)
 * @param capabilities free-form capabilities matched by {@link RouteRequest#requiredCapabilities()}
 * @param labels free-form labels matched by {@link RouteRequest#requiredLabels()}
 * @param capacityBlocks KV-cache capacity in blocks (e.g. vLLM {@code num_gpu_blocks}); {@code 0}
 *     means unknown and lets the prefix index use its default
 * @param weight relative capacity for load balancing, in {@code (0, 1000]}; 1 for a typical node
 */
public record Backend(
    String id,
    Set<String> models,
    Set<String> capabilities,
    Map<String, String> labels,
    long capacityBlocks,
    double weight) {

  /** Longest accepted id. */
  public static final int MAX_ID_LENGTH = 256;

  public Backend {
    Objects.requireNonNull(id, "id");
    if (id.isEmpty() || id.length() > MAX_ID_LENGTH || !printable(id)) {
      throw new IllegalArgumentException(
          "id must be 1.."
              + MAX_ID_LENGTH
              + " characters without whitespace, control or format characters, was '"
              + Bounds.echo(id)
              + "' ("
              + id.length()
              + " chars)");
    }
    models = Set.copyOf(models);
    if (models.isEmpty()) {
      throw new IllegalArgumentException("backend '" + id + "' must serve at least one model");
    }
    for (String m : models) {
      if (m.isBlank()) {
        throw new IllegalArgumentException("backend '" + id + "' has a blank model name");
      }
    }
    capabilities = Set.copyOf(capabilities);
    labels = Map.copyOf(labels);
    if (capacityBlocks < 0) {
      throw new IllegalArgumentException(
          "capacityBlocks of '" + id + "' must be >= 0, was " + capacityBlocks);
    }
    if (!(weight > 0 && weight <= 1000)) {
      throw new IllegalArgumentException(
          "weight of '" + id + "' must be in (0, 1000], was " + weight);
    }
  }

  private static boolean printable(String id) {
    for (int i = 0; i < id.length(); i++) {
      char c = id.charAt(i);
      if (Character.isWhitespace(c) || Bounds.unsafe(c)) {
        return false;
      }
    }
    return true;
  }

  /** A backend serving the given models, unknown capacity, weight 1. */
  public static Backend of(String id, String... models) {
    return new Backend(id, Set.of(models), Set.of(), Map.of(), 0, 1.0);
  }

  public Backend withCapacityBlocks(long capacityBlocks) {
    return new Backend(id, models, capabilities, labels, capacityBlocks, weight);
  }

  public Backend withWeight(double weight) {
    return new Backend(id, models, capabilities, labels, capacityBlocks, weight);
  }

  public Backend withModel(String model) {
    Set<String> m = new HashSet<>(models);
    m.add(model);
    return new Backend(id, m, capabilities, labels, capacityBlocks, weight);
  }

  public Backend withCapability(String capability) {
    Set<String> c = new HashSet<>(capabilities);
    c.add(capability);
    return new Backend(id, models, c, labels, capacityBlocks, weight);
  }

  public Backend withLabel(String key, String value) {
    Map<String, String> l = new HashMap<>(labels);
    l.put(key, value);
    return new Backend(id, models, capabilities, l, capacityBlocks, weight);
  }

  /**
   * A copy whose role in a disaggregated deployment is {@code role}: the role capabilities ({@link
   * Role#PREFILL_CAPABILITY}, {@link Role#DECODE_CAPABILITY}) are replaced by those of {@code
   * role}; other capabilities are kept.
   */
  public Backend withRole(Role role) {
    Objects.requireNonNull(role, "role");
    Set<String> c = new HashSet<>(capabilities);
    c.remove(Role.PREFILL_CAPABILITY);
    c.remove(Role.DECODE_CAPABILITY);
    c.addAll(role.capabilities());
    return new Backend(id, models, c, labels, capacityBlocks, weight);
  }

  /**
   * This backend's role, read from its capabilities: {@link Role#BOTH} when it carries both role
   * capabilities or neither. Note that a {@link DisaggregatedRouter} only pairs backends whose role
   * capabilities are set (see {@link Role}); a backend without them serves whole requests.
   */
  public Role role() {
    return Role.of(capabilities);
  }

  /** Whether this backend serves {@code model}. */
  public boolean serves(String model) {
    return models.contains(model);
  }
}
