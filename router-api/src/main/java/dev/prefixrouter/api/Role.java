package dev.prefixrouter.api;

import java.util.Set;

/**
 * The phase(s) of a request a backend serves in a disaggregated (prefill/decode) deployment. A role
 * is carried by the backend's {@link Backend#capabilities() capabilities} ({@link
 * #PREFILL_CAPABILITY}, {@link #DECODE_CAPABILITY}), so it travels wherever a descriptor does
 * (membership sync, the actuator) and the engine's capability filter selects by it without a
 * separate rule; set it with {@link Backend#withRole(Role)}.
 *
 * <p>{@link RoutingEngine#route} ignores roles: a disaggregated model is routed through a {@link
 * DisaggregatedRouter}, which draws prefill backends from those carrying {@link
 * #PREFILL_CAPABILITY} and decode backends from those carrying {@link #DECODE_CAPABILITY}.
 */
public enum Role {
  /**
   * Computes prompts (the KV cache) and hands them to a decode backend; produces the first token.
   */
  PREFILL,
  /** Receives a prompt's KV cache from a prefill backend and generates the output. */
  DECODE,
  /** Serves both phases: a colocated backend, or one that may take either leg of a pair. */
  BOTH;

  /** The capability that marks a backend able to take a pair's prefill leg. */
  public static final String PREFILL_CAPABILITY = "pd.prefill";

  /** The capability that marks a backend able to take a pair's decode leg. */
  public static final String DECODE_CAPABILITY = "pd.decode";

  /** The role capabilities a backend of this role carries. */
  Set<String> capabilities() {
    return switch (this) {
      case PREFILL -> Set.of(PREFILL_CAPABILITY);
      case DECODE -> Set.of(DECODE_CAPABILITY);
      case BOTH -> Set.of(PREFILL_CAPABILITY, DECODE_CAPABILITY);
    };
  }

  /**
   * The role a capability set declares: {@link #BOTH} when it carries both role capabilities or
   * neither (a backend without a declared role serves whole requests).
   */
  static Role of(Set<String> capabilities) {
    boolean p = capabilities.contains(PREFILL_CAPABILITY);
    boolean d = capabilities.contains(DECODE_CAPABILITY);
    if (p == d) {
      return BOTH;
    }
    return p ? PREFILL : DECODE;
  }
}
