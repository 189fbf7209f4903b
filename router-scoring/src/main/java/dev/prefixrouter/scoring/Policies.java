package dev.prefixrouter.scoring;

import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.scoring.anchors.ConsistentHash;
import dev.prefixrouter.scoring.anchors.DynamoKv;
import dev.prefixrouter.scoring.anchors.GatewayEstTtft;
import dev.prefixrouter.scoring.anchors.LeastRequest;
import dev.prefixrouter.scoring.anchors.LlmdWeighted;
import dev.prefixrouter.scoring.anchors.PowerOfTwo;
import dev.prefixrouter.scoring.anchors.RoundRobin;
import dev.prefixrouter.scoring.anchors.SglangCacheAware;
import java.util.List;
import java.util.Locale;
import java.util.function.Supplier;

/**
 * Every routing policy by name: ours and the anchor policies of other routers ({@link
 * dev.prefixrouter.scoring.anchors}), each with its published defaults. Select by name for
 * experiments ({@link #byName(String)}); the simulator runs them side by side. Each name builds a
 * fresh, thread-safe scorer.
 *
 * <table>
 *   <caption>Policies</caption>
 *   <tr><th>name</th><th>scorer</th></tr>
 *   <tr><td>{@code est-ttft}</td><td>ours: {@link EstimatedTtftScorer#defaults()}</td></tr>
 *   <tr><td>{@code est-ttft-sticky}</td><td>ours without the fleet-balance term</td></tr>
 *   <tr><td>{@code round-robin}</td><td>{@link RoundRobin}</td></tr>
 *   <tr><td>{@code least-request}</td><td>{@link LeastRequest}</td></tr>
 *   <tr><td>{@code p2c}</td><td>{@link PowerOfTwo}, seed 42</td></tr>
 *   <tr><td>{@code consistent-hash}</td><td>{@link ConsistentHash}</td></tr>
 *   <tr><td>{@code sglang-cache-aware}</td><td>{@link SglangCacheAware#defaults()}</td></tr>
 *   <tr><td>{@code sglang-smg}</td><td>{@link SglangCacheAware#smg()}</td></tr>
 *   <tr><td>{@code dynamo-kv}</td><td>{@link DynamoKv#defaults()}</td></tr>
 *   <tr><td>{@code llmd-3-2-2}</td><td>{@link LlmdWeighted#defaults()}</td></tr>
 *   <tr><td>{@code gateway-shipped}</td><td>{@link GatewayEstTtft#shipped()}</td></tr>
 *   <tr><td>{@code gateway-calibrated}</td><td>{@link GatewayEstTtft#calibrated()}</td></tr>
 * </table>
 *
 * <p>A variant of est-ttft built from fewer terms and rules is named {@code
 * est-ttft/-<name>[/-<name>...]}, each {@code <name>} a built-in term or rule to leave out ({@link
 * EstimatedTtftScorer.Builder#without}): e.g. {@code est-ttft/-balance/-cache-pressure}. The
 * simulator and {@code ScoringBenchmark} accept such names.
 */
public final class Policies {
  private Policies() {}

  /** Names accepted by {@link #byName}, in presentation order. */
  public static final List<String> NAMES =
      List.of(
          "est-ttft",
          "est-ttft-sticky",
          "round-robin",
          "least-request",
          "p2c",
          "consistent-hash",
          "sglang-cache-aware",
          "sglang-smg",
          "dynamo-kv",
          "llmd-3-2-2",
          "gateway-shipped",
          "gateway-calibrated");

  /**
   * A fresh scorer for a policy name (case-insensitive).
   *
   * @throws IllegalArgumentException for an unknown name, listing the known ones
   */
  public static Scorer byName(String name) {
    if (name.toLowerCase(Locale.ROOT).startsWith(VARIANT)) {
      return variant(name);
    }
    Supplier<Scorer> s =
        switch (name.toLowerCase(Locale.ROOT)) {
          case "est-ttft" -> EstimatedTtftScorer::defaults;
          case "est-ttft-sticky" ->
              () -> EstimatedTtftScorer.builder().name("est-ttft-sticky").balance(0, 0, 1).build();
          case "round-robin" -> RoundRobin::new;
          case "least-request" -> LeastRequest::new;
          case "p2c" -> () -> new PowerOfTwo(42);
          case "consistent-hash" -> ConsistentHash::new;
          case "sglang-cache-aware" -> SglangCacheAware::defaults;
          case "sglang-smg" -> SglangCacheAware::smg;
          case "dynamo-kv" -> DynamoKv::defaults;
          case "llmd-3-2-2" -> LlmdWeighted::defaults;
          case "gateway-shipped" -> GatewayEstTtft::shipped;
          case "gateway-calibrated" -> GatewayEstTtft::calibrated;
          default ->
              throw new IllegalArgumentException(
                  "unknown policy '" + name + "'; known: " + String.join(", ", NAMES));
        };
    return s.get();
  }

  private static final String VARIANT = "est-ttft/";

  /** Whether {@link #byName} accepts {@code name} (a listed name or a valid est-ttft variant). */
  public static boolean isKnown(String name) {
    if (NAMES.contains(name.toLowerCase(Locale.ROOT))) {
      return true;
    }
    try {
      return name.toLowerCase(Locale.ROOT).startsWith(VARIANT) && variant(name) != null;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /** {@code est-ttft/-a/-b}: the default est-ttft without the named terms or rules. */
  private static Scorer variant(String spec) {
    String lower = spec.toLowerCase(Locale.ROOT);
    EstimatedTtftScorer.Builder b = EstimatedTtftScorer.builder().name(lower);
    for (String part : lower.substring(VARIANT.length()).split("/", -1)) {
      if (!part.startsWith("-") || part.length() < 2) {
        throw new IllegalArgumentException(
            "est-ttft variant '"
                + spec
                + "': each part after 'est-ttft/' must be -<term or rule>, one of "
                + String.join(", ", EstimatedTtftScorer.Builder.BUILT_IN));
      }
      b.without(part.substring(1));
    }
    return b.build();
  }
}
