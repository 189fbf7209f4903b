package dev.prefixrouter.bench.sim;

/**
 * Speed and size of one simulated vLLM-like backend. Step time {@code a + b·prefill + c·decode};
 * defaults are the inference-sim fit for Llama-3.1-8B on one H100 (vLLM v0.8.4): 5,752.7 µs per
 * step, 17.25 µs per uncached prefill token, 6.00 µs per decode token, 29,205 KV blocks of 16
 * tokens; token budget 8192 and 256 sequences (vLLM's defaults for large GPUs, capped). No media
 * encoder unless {@link #withEncoder}.
 */
record BackendProfile(
    double stepBaseMs,
    double prefillMsPerToken,
    double decodeMsPerToken,
    int tokenBudget,
    int maxSeqs,
    int capacityBlocks,
    double encodeMs,
    int encoderItems) {

  static final int BLOCK = 16;

  static BackendProfile h100(int capacityBlocks) {
    return new BackendProfile(5.7527, 0.01725, 0.006, 8192, 256, capacityBlocks, 0, 0);
  }

  /**
   * With a media encoder: a request's media item not in the backend's encoder cache (an LRU of
   * {@code items} media) adds {@code encodeMs} to the step that admits it.
   */
  BackendProfile withEncoder(double encodeMs, int items) {
    return new BackendProfile(
        stepBaseMs,
        prefillMsPerToken,
        decodeMsPerToken,
        tokenBudget,
        maxSeqs,
        capacityBlocks,
        encodeMs,
        items);
  }

  long stepNanos(int prefillTokens, int decodeTokens, double slowdown) {
    double ms = stepBaseMs + prefillMsPerToken * prefillTokens + decodeMsPerToken * decodeTokens;
    return (long) (ms * slowdown * 1e6);
  }
}
