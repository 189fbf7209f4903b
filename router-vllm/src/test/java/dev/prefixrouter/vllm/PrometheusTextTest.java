package dev.prefixrouter.vllm;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class PrometheusTextTest {

  private static final String VLLM =
      """
      # HELP vllm:num_requests_running Number of requests in model execution batches.
      # TYPE vllm:num_requests_running gauge
      vllm:num_requests_running{engine="0",model_name="Qwen/Qwen2.5-7B-Instruct"} 3.0
      vllm:num_requests_running{engine="1",model_name="Qwen/Qwen2.5-7B-Instruct"} 2.0
      # TYPE vllm:num_requests_waiting gauge
      vllm:num_requests_waiting{engine="0",model_name="Qwen/Qwen2.5-7B-Instruct"} 1.0
      vllm:num_requests_waiting{model_name="Qwen/Qwen2.5-7B-Instruct",engine="1"} 0.0
      # TYPE vllm:kv_cache_usage_perc gauge
      vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen2.5-7B-Instruct"} 0.083
      vllm:kv_cache_usage_perc{engine="1",model_name="Qwen/Qwen2.5-7B-Instruct"} 0.25
      # TYPE vllm:prefix_cache_queries_total counter
      vllm:prefix_cache_queries_total{engine="0",model_name="Qwen/Qwen2.5-7B-Instruct"} 125440.0
      vllm:prefix_cache_queries_created{engine="0",model_name="Qwen/Qwen2.5-7B-Instruct"} 1.7507e+09
      vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="Q"} 51.0
      vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="0",gpu_memory_utilization="0.9",num_gpu_blocks="81767",prefix_caching_hash_algo="sha256"} 1.0
      vllm:cache_config_info{block_size="16",engine="1",num_gpu_blocks="81767"} 1.0
      """;

  @Test
  void parsesRealShapedVllmExposition() {
    PrometheusText.Scrape s = PrometheusText.parse(VLLM);
    assertThat(s.malformedLines()).isZero();
    assertThat(s.samples()).hasSize(11);
    PrometheusText.Sample first = s.samples().get(0);
    assertThat(first.name()).isEqualTo("vllm:num_requests_running");
    assertThat(first.labels())
        .containsEntry("engine", "0")
        .containsEntry("model_name", "Qwen/Qwen2.5-7B-Instruct");
    EngineMetrics m = EngineMetrics.from(s);
    assertThat(m.found()).isTrue();
    assertThat(m.running()).isEqualTo(5); // summed over DP engines
    assertThat(m.waiting()).isEqualTo(1);
    assertThat(m.kvUsage()).isEqualTo(0.25); // worst engine
    assertThat(m.capacityTokens()).hasValue(163_534L * 16); // blocks of 16 tokens, both engines
    assertThat(m.capacityBlocks(16)).hasValue(163_534);
    assertThat(m.capacityBlocks(64)).hasValue(163_534 / 4);
  }

  /** Capacities summed over data-parallel engines saturate instead of wrapping to a small one. */
  @Test
  void capacitiesThatSumPastLongMaxSaturate() {
    String text =
        """
        vllm:num_requests_running{engine="0"} 1
        vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="9223372036854775807"} 1
        vllm:cache_config_info{block_size="1",engine="1",num_gpu_blocks="9223372036854775807"} 1
        vllm:cache_config_info{block_size="16",engine="2",num_gpu_blocks="5000"} 1
        """;
    assertThat(EngineMetrics.from(PrometheusText.parse(text)).capacityTokens())
        .hasValue(Long.MAX_VALUE);
  }

  @Test
  void escapesSpecialValuesAndMalformedLines() {
    String text =
        """
        m{path="a\\\\b",q="say \\"hi\\"",nl="x\\ny"} NaN
        m2 +Inf 1700000000000
        m3{a="1"} -Inf
        broken{a="1" 3
        {a="1"} 3
        nolabelvalue
        m4{a=unquoted} 1
        m5 notanumber
        """;
    PrometheusText.Scrape s = PrometheusText.parse(text);
    assertThat(s.samples()).hasSize(3);
    assertThat(s.malformedLines()).isEqualTo(5);
    PrometheusText.Sample m = s.samples().get(0);
    assertThat(m.label("path")).isEqualTo("a\\b");
    assertThat(m.label("q")).isEqualTo("say \"hi\"");
    assertThat(m.label("nl")).isEqualTo("x\ny");
    assertThat(m.value()).isNaN();
    assertThat(s.samples().get(1).value()).isInfinite().isPositive();
    assertThat(s.samples().get(2).value()).isInfinite().isNegative();
  }

  @Test
  void deprecatedAndSglangNamesAreUnderstood() {
    EngineMetrics old =
        EngineMetrics.from(
            PrometheusText.parse(
                "vllm:num_requests_running 2\nvllm:gpu_cache_usage_perc{engine=\"0\"} 0.5\n"));
    assertThat(old.kvUsage()).isEqualTo(0.5);
    EngineMetrics both =
        EngineMetrics.from(
            PrometheusText.parse("vllm:kv_cache_usage_perc 0.3\nvllm:gpu_cache_usage_perc 0.9\n"));
    assertThat(both.kvUsage()).as("the current name wins").isEqualTo(0.3);
    EngineMetrics sglang =
        EngineMetrics.from(
            PrometheusText.parse(
                """
                sglang:num_running_reqs{model_name="m",tp_rank="0"} 7
                sglang:num_queue_reqs{model_name="m"} 4
                sglang:token_usage{model_name="m"} 0.62
                sglang:cache_config_info{page_size="1",num_pages="500000"} 1
                """));
    assertThat(sglang.running()).isEqualTo(7);
    assertThat(sglang.waiting()).isEqualTo(4);
    assertThat(sglang.kvUsage()).isEqualTo(0.62);
    assertThat(sglang.capacityTokens()).as("pages of one token").hasValue(500_000);
    assertThat(sglang.capacityBlocks(16)).hasValue(31_250);
    EngineMetrics none = EngineMetrics.from(PrometheusText.parse("# nothing\nother 1\n"));
    assertThat(none.found()).isFalse();
    assertThat(none.toLoadReport().running()).isZero();
    EngineMetrics weird =
        EngineMetrics.from(
            PrometheusText.parse(
                "vllm:num_requests_running NaN\nvllm:kv_cache_usage_perc 7\n"
                    + "vllm:cache_config_info{num_gpu_blocks=\"None\"} 1\n"));
    assertThat(weird.running()).isZero();
    assertThat(weird.kvUsage()).isEqualTo(1.0);
    assertThat(weird.capacityTokens()).isEmpty();
    EngineMetrics noBlockSize =
        EngineMetrics.from(
            PrometheusText.parse(
                "vllm:num_requests_running 1\nvllm:cache_config_info{num_gpu_blocks=\"100\"} 1\n"));
    assertThat(noBlockSize.capacityTokens()).as("a block size is never assumed").isEmpty();
    EngineMetrics tokens =
        EngineMetrics.from(
            PrometheusText.parse(
                "vllm:num_requests_running 1\n"
                    + "vllm:cache_config_info{block_size=\"16\",kv_cache_size_tokens=\"5000\","
                    + "num_gpu_blocks=\"300\"} 1\n"));
    assertThat(tokens.capacityTokens()).as("the engine's own token count wins").hasValue(5_000);
  }
}
