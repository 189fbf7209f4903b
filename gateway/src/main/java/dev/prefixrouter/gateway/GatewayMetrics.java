package dev.prefixrouter.gateway;

import dev.prefixrouter.api.Rejected;
import dev.prefixrouter.api.Usage;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * The gateway's meters (all tags low-cardinality: {@code model} is the served model the engine
 * resolved, one of the configured backends' models, never the client's string):
 *
 * <ul>
 *   <li>{@code prefixrouter.gateway.ttft} (timer, seconds, histogram buckets; tag {@code model}):
 *       time from the request's arrival to its first content chunk, as the client sees it (routing
 *       and failovers included), streamed requests only;
 *   <li>{@code prefixrouter.gateway.requests} (timer, seconds, histogram buckets; tags {@code
 *       model}, {@code outcome} = ok, client_error, failed, cancelled): end-to-end time;
 *   <li>{@code prefixrouter.gateway.tokens} (counter, tokens; tags {@code model}, {@code kind} =
 *       prompt, completion, cached): usage charged;
 *   <li>{@code prefixrouter.gateway.failovers} (counter; tag {@code model});
 *   <li>{@code prefixrouter.gateway.rejected} (counter; tags {@code reason}, {@code status}):
 *       engine rejections and requests refused before routing (reason unauthorized, too_large,
 *       bad_request).
 * </ul>
 *
 * Thread-safe; meters are cached per tag set, so a call costs one map lookup.
 */
public final class GatewayMetrics {
  private static final Duration MIN = Duration.ofMillis(1);
  private static final Duration MAX = Duration.ofMinutes(5);

  private final @Nullable MeterRegistry registry;
  private final Map<String, Timer> timers = new ConcurrentHashMap<>();
  private final Map<String, Counter> counters = new ConcurrentHashMap<>();

  /**
   * @param registry where to register, or null for no meters
   */
  public GatewayMetrics(@Nullable MeterRegistry registry) {
    this.registry = registry;
  }

  void ttft(String model, long nanos) {
    if (registry != null) {
      timer("prefixrouter.gateway.ttft", "model", model, null, null)
          .record(nanos, TimeUnit.NANOSECONDS);
    }
  }

  void request(String model, String outcome, long nanos) {
    if (registry != null) {
      timer("prefixrouter.gateway.requests", "model", model, "outcome", outcome)
          .record(nanos, TimeUnit.NANOSECONDS);
    }
  }

  void tokens(String model, Usage u) {
    if (registry != null) {
      counter("prefixrouter.gateway.tokens", "model", model, "kind", "prompt")
          .increment(u.promptTokens());
      counter("prefixrouter.gateway.tokens", "model", model, "kind", "completion")
          .increment(u.completionTokens());
      counter("prefixrouter.gateway.tokens", "model", model, "kind", "cached")
          .increment(u.cachedTokens());
    }
  }

  void failover(String model) {
    if (registry != null) {
      counter("prefixrouter.gateway.failovers", "model", model, null, null).increment();
    }
  }

  void rejected(Rejected r) {
    if (registry != null) {
      counter(
              "prefixrouter.gateway.rejected",
              "reason",
              r.reason().name().toLowerCase(Locale.ROOT),
              "status",
              Integer.toString(OpenAiErrors.status(r)))
          .increment();
    }
  }

  void refused(String reason) {
    if (registry != null) {
      counter("prefixrouter.gateway.rejected", "reason", reason, "status", status(reason))
          .increment();
    }
  }

  private static String status(String reason) {
    return switch (reason) {
      case "unauthorized" -> "401";
      case "too_large" -> "413";
      default -> "400";
    };
  }

  private Timer timer(String name, String k1, String v1, @Nullable String k2, @Nullable String v2) {
    MeterRegistry reg = registry;
    String key = name + '\0' + v1 + '\0' + v2;
    return timers.computeIfAbsent(
        key,
        x -> {
          Timer.Builder b =
              Timer.builder(name)
                  .tag(k1, v1)
                  .publishPercentileHistogram()
                  .minimumExpectedValue(MIN)
                  .maximumExpectedValue(MAX);
          if (k2 != null && v2 != null) {
            b = b.tag(k2, v2);
          }
          return b.register(reg);
        });
  }

  private Counter counter(
      String name, String k1, String v1, @Nullable String k2, @Nullable String v2) {
    MeterRegistry reg = registry;
    String key = name + '\0' + v1 + '\0' + v2;
    return counters.computeIfAbsent(
        key,
        x -> {
          Counter.Builder b = Counter.builder(name).tag(k1, v1);
          if (k2 != null && v2 != null) {
            b = b.tag(k2, v2);
          }
          return b.register(reg);
        });
  }
}
