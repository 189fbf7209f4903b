package dev.prefixrouter.api;

/**
 * What a completed request actually consumed, as the engine reported it (OpenAI {@code usage}).
 *
 * @param promptTokens prompt tokens processed
 * @param completionTokens output tokens generated
 * @param cachedTokens prompt tokens served from the prefix cache ({@code
 *     prompt_tokens_details.cached_tokens}), or 0 when unknown
 */
public record Usage(int promptTokens, int completionTokens, int cachedTokens) {
  public Usage {
    if (promptTokens < 0 || completionTokens < 0 || cachedTokens < 0) {
      throw new IllegalArgumentException(
          "token counts must be >= 0, were prompt="
              + promptTokens
              + " completion="
              + completionTokens
              + " cached="
              + cachedTokens);
    }
    if (cachedTokens > promptTokens) {
      throw new IllegalArgumentException(
          "cachedTokens ("
              + cachedTokens
              + ") must not exceed promptTokens ("
              + promptTokens
              + ")");
    }
  }

  public static Usage of(int promptTokens, int completionTokens) {
    return new Usage(promptTokens, completionTokens, 0);
  }

  /** Total tokens charged to the tenant. */
  public long totalTokens() {
    return (long) promptTokens + completionTokens;
  }
}
