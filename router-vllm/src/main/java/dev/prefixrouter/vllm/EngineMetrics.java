package dev.prefixrouter.vllm;

import dev.prefixrouter.api.LoadReport;
import java.util.OptionalLong;

/**
 * Load of one backend read from a vLLM or SGLang {@code /metrics} scrape: running and waiting
 * requests summed over data-parallel engines, KV usage as the worst engine's, and the KV capacity
 * in blocks when the server publishes it. Names (reference/engine-interfaces.md): vLLM {@code
 * vllm:num_requests_running}, {@code vllm:num_requests_waiting}, {@code vllm:kv_cache_usage_perc}
 * (falling back to the deprecated {@code vllm:gpu_cache_usage_perc}), {@code
 * vllm:cache_config_info{num_gpu_blocks}}; SGLang {@code sglang:num_running_reqs}, {@code
 * sglang:num_queue_reqs}, {@code sglang:token_usage}, {@code sglang:cache_config_info{num_pages}}.
 *
 * @param running requests running
 * @param waiting requests waiting
 * @param kvUsage KV usage in [0, 1]
 * @param capacityBlocks KV capacity in blocks, if published
 * @param found whether any load metric was present
 */
public record EngineMetrics(
    int running, int waiting, double kvUsage, OptionalLong capacityBlocks, boolean found) {

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
        case "vllm:cache_config_info" -> capacity = sum(capacity, s.label("num_gpu_blocks"));
        case "sglang:cache_config_info" -> capacity = sum(capacity, s.label("num_pages"));
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

  private static long sum(long acc, String label) {
    if (label == null || label.equals("None")) {
      return acc;
    }
    try {
      long n = Long.parseLong(label.strip());
      // saturates: samples that sum past Long.MAX_VALUE must not wrap into a small capacity
      long a = Math.max(0, acc);
      return n < 0 ? acc : n > Long.MAX_VALUE - a ? Long.MAX_VALUE : a + n;
    } catch (NumberFormatException e) {
      return acc;
    }
  }
}
