package dev.prefixrouter.api;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * An OpenAI-compatible request body as read by {@link OpenAiRequestReader}.
 *
 * @param routeRequest the request to route
 * @param endpoint which API the body belongs to
 * @param stream the body's {@code stream} flag
 * @param user the body's {@code user} field, if any
 * @param promptCount number of prompts in a {@code /v1/completions} body (the first one is routed
 *     on); 1 for chat
 */
public record OpenAiRequest(
    RouteRequest routeRequest,
    Endpoint endpoint,
    boolean stream,
    @Nullable String user,
    int promptCount) {

  /** The OpenAI endpoints the reader understands. */
  public enum Endpoint {
    /** {@code /v1/chat/completions}: a {@code messages} array. */
    CHAT_COMPLETIONS,
    /** {@code /v1/completions}: a {@code prompt}. */
    COMPLETIONS
  }

  public OpenAiRequest {
    Objects.requireNonNull(routeRequest, "routeRequest");
    Objects.requireNonNull(endpoint, "endpoint");
  }
}
