package dev.prefixrouter.vllm;

import dev.prefixrouter.api.LoadReport;
import java.util.OptionalLong;

/**
 * Load of one backend read from a vLLM or SGLang {@code /metrics} scrape: running and waiting
 * requests summed over data-parallel engines, KV usage as the worst engine's, and the KV capacity
 * in tokens when the server publishes it. Names (reference/engine-interfaces.md): vLLM {@code
 * vllm:num_requests_running}, {@code vllm:num_requests_waiting}, {@code vllm:kv_cache_usage_perc}
 * (falling back to the deprecated {@code vllm:gpu_cache_usage_perc}), {@code
 * vllm:cache_config_info{num_gpu_blocks, block_size}}; SGLang {@code sglang:num_running_reqs},
 * {@code sglang:num_queue_reqs}, {@code sglang:token_usage}, {@code
 * sglang:cache_config_info{num_pages, page_size}}.
 *
 * <p><b>Capacity units.</b> An engine counts its KV cache in its own blocks: vLLM's {@code
 * num_gpu_blocks} are {@code block_size} tokens each (16 by default, 64 with FlashMLA), SGLang's
 * {@code num_pages} are {@code page_size} tokens each (1 by default). The capacity is therefore
 * kept in tokens (reference §1.5): {@code kv_cache_size_tokens} when a vLLM engine publishes it,
 * else {@code num_gpu_blocks × block_size}; {@code num_pages × page_size} (a missing {@code
 * page_size} is SGLang's default, 1). A vLLM sample without a {@code block_size} label gives no
 * capacity (a block size is never assumed). {@link #capacityBlocks(int)} converts to the router's
 * blocks.
 *
 * @param running requests running
 * @param waiting requests waiting
 * @param kvUsage KV usage in [0, 1]
 * @param capacityTokens KV capacity in tokens summed over data-parallel engines, if published
 * @param found whether any load metric was present
 */
public record EngineMetrics(
    int running, int waiting, double kvUsage, OptionalLong capacityTokens, boolean found) {

  /**
   * The KV capacity in the router's blocks of {@code tokensPerBlock} tokens (rounded down), if
   * published.
   */
  public OptionalLong capacityBlocks(int tokensPerBlock) {
    if (tokensPerBlock < 1) {
      throw new IllegalArgumentException("tokensPerBlock must be >= 1, was " + tokensPerBlock);
    }
    return capacityTokens.isPresent()
        ? OptionalLong.of(capacityTokens.getAsLong() / tokensPerBlock)
        : OptionalLong.empty();
  }

  public LoadReport toLoadReport() {
    return LoadReport.of(running, waiting, kvUsage);
  }

  public static EngineMetrics from(PrometheusText.Scrape scrape) {
    double running = 0;
    double waiting = 0;
    double kv = -1;
    double kvDeprecated = -1;
    long capacity = -1;
    boolean found = false;
    for (PrometheusText.Sample s : scrape.samples()) {
      double v = s.value();
      switch (s.name()) {
        case "vllm:num_requests_running", "sglang:num_running_reqs" -> {
          running += finite(v);
          found = true;
        }
        case "vllm:num_requests_waiting", "sglang:num_queue_reqs" -> {
          waiting += finite(v);
          found = true;
        }
        case "vllm:kv_cache_usage_perc", "sglang:token_usage" -> {
          kv = Math.max(kv, finite(v));
          found = true;
        }
        case "vllm:gpu_cache_usage_perc" -> kvDeprecated = Math.max(kvDeprecated, finite(v));
        case "vllm:cache_config_info" -> {
          long tokens = number(s.label("kv_cache_size_tokens"));
          if (tokens < 0) {
            tokens = times(number(s.label("num_gpu_blocks")), number(s.label("block_size")));
          }
          capacity = sum(capacity, tokens);
        }
        case "sglang:cache_config_info" -> {
          long pageSize = number(s.label("page_size"));
          capacity =
              sum(
                  capacity,
                  times(number(s.label("num_pages")), s.label("page_size") == null ? 1 : pageSize));
        }
        default -> {}
      }
    }
    if (kv < 0 && kvDeprecated >= 0) {
      kv = kvDeprecated;
      found = true;
    }
    return new EngineMetrics(
        (int) Math.min(Integer.MAX_VALUE, Math.round(running)),
        (int) Math.min(Integer.MAX_VALUE, Math.round(waiting)),
        Math.max(0, Math.min(1, kv < 0 ? 0 : kv)),
        capacity < 0 ? OptionalLong.empty() : OptionalLong.of(capacity),
        found);
  }

  private static double finite(double v) {
    return Double.isFinite(v) && v >= 0 ? v : 0;
  }

  /** A label's non-negative integer, or -1 if absent, {@code "None"}, negative or not a number. */
  private static long number(String label) {
    if (label == null || label.equals("None")) {
      return -1;
    }
    try {
      long n = Long.parseLong(label.strip());
      return n < 0 ? -1 : n;
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /** {@code a × b}, saturating at Long.MAX_VALUE; -1 if either is unknown (-1). */
  private static long times(long a, long b) {
    if (a < 0 || b < 0) {
      return -1;
    }
    long hi = Math.multiplyHigh(a, b);
    long lo = a * b;
    return hi != 0 || lo < 0 ? Long.MAX_VALUE : lo;
  }

  /** Adds {@code n} (ignored if unknown, -1) to {@code acc} (-1: nothing yet), saturating. */
  private static long sum(long acc, long n) {
    if (n < 0) {
      return acc;
    }
    // saturates: samples that sum past Long.MAX_VALUE must not wrap into a small capacity
    long a = Math.max(0, acc);
    return n > Long.MAX_VALUE - a ? Long.MAX_VALUE : a + n;
  }
}
