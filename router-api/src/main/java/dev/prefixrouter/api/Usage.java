package dev.prefixrouter.api;

/**
 * What a completed request actually consumed, as the engine reported it (OpenAI {@code usage}).
 *
 * <p>The engine's cached count closes the router's loop: the router compares it with the tokens its
 * prefix index matched on that backend when it routed the request ({@link
 * Routed#indexMatchedTokens()}), counts the error per backend ({@link CacheAccuracy}) and tells the
 * prefix index ({@link dev.prefixrouter.api.spi.PrefixIndex#onEngineCached}). Only a count the
 * engine reported is used: build the usage with {@link #of(int, int)} (or {@code cachedReported =
 * false}) when the response carried none (vLLM reports {@code prompt_tokens_details} only with
 * {@code --enable-prompt-tokens-details}), since a missing count is not "nothing was cached".
 *
 * @param promptTokens prompt tokens processed
 * @param completionTokens output tokens generated
 * @param cachedTokens prompt tokens served from the prefix cache ({@code
 *     prompt_tokens_details.cached_tokens}), or 0 when not reported
 * @param cachedReported whether the engine reported {@code cachedTokens} (false: unknown, and
 *     {@code cachedTokens} is 0)
 */
public record Usage(
    int promptTokens, int completionTokens, int cachedTokens, boolean cachedReported) {
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
    if (!cachedReported && cachedTokens != 0) {
      throw new IllegalArgumentException(
          "cachedTokens must be 0 when not reported, was " + cachedTokens);
    }
  }

  /**
   * A usage whose cached count the engine reported ({@code cachedReported = true}).
   *
   * @throws IllegalArgumentException if a count is negative or {@code cachedTokens > promptTokens}
   */
  public Usage(int promptTokens, int completionTokens, int cachedTokens) {
    this(promptTokens, completionTokens, cachedTokens, true);
  }

  /** A usage without the engine's cached count ({@code cachedReported = false}). */
  public static Usage of(int promptTokens, int completionTokens) {
    return new Usage(promptTokens, completionTokens, 0, false);
  }

  /** Total tokens charged to the tenant. */
  public long totalTokens() {
    return (long) promptTokens + completionTokens;
  }
}
