package dev.prefixrouter.vllm;

import dev.prefixrouter.api.RouteRequest;
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
 *     on); 1 otherwise
 * @param choices completions asked per prompt: {@code max(n, best_of)}, 1 when absent; counted in
 *     the reservation
 * @param priority the body's {@code priority} (vLLM's scheduling priority, lower runs first), 0
 *     when absent; for the host to forward
 * @param hasPriority whether the body has a top-level {@code priority} member (a host that does not
 *     let clients pick their scheduling priority removes it)
 * @param hasKvTransferParams whether the body has a top-level {@code kv_transfer_params} member:
 *     vLLM's KV connectors read it to fetch or hold KV blocks by id (prefill/decode
 *     disaggregation), which a client must not choose, so a host forwarding client bodies removes
 *     it
 */
public record OpenAiRequest(
    RouteRequest routeRequest,
    Endpoint endpoint,
    boolean stream,
    @Nullable String user,
    int promptCount,
    int choices,
    int priority,
    boolean hasPriority,
    boolean hasKvTransferParams) {

  /** The OpenAI endpoints the reader understands. */
  public enum Endpoint {
    /** {@code /v1/chat/completions}: a {@code messages} array. */
    CHAT_COMPLETIONS,
    /** {@code /v1/completions}: a {@code prompt}. */
    COMPLETIONS,
    /** {@code /v1/responses}: an {@code input}, with optional {@code instructions}. */
    RESPONSES
  }

  public OpenAiRequest {
    Objects.requireNonNull(routeRequest, "routeRequest");
    Objects.requireNonNull(endpoint, "endpoint");
  }

  /**
   * As the canonical constructor, {@code hasPriority} being {@code priority != 0} and without
   * {@code kv_transfer_params}.
   */
  public OpenAiRequest(
      RouteRequest routeRequest,
      Endpoint endpoint,
      boolean stream,
      @Nullable String user,
      int promptCount,
      int choices,
      int priority) {
    this(
        routeRequest, endpoint, stream, user, promptCount, choices, priority, priority != 0, false);
  }
}
