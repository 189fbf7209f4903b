package dev.prefixrouter.gateway;

import dev.prefixrouter.api.EligibilityFilter;
import dev.prefixrouter.api.RejectReason;
import dev.prefixrouter.api.Rejected;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpResponse;
import reactor.core.publisher.Mono;
import tools.jackson.databind.json.JsonMapper;

/**
 * Errors in OpenAI's shape, {@code {"error": {"message", "type", "param", "code"}}}, and the HTTP
 * status of each {@link RejectReason}:
 *
 * <table>
 * <caption>Rejections as HTTP</caption>
 * <tr><th>reason</th><th>status</th><th>code</th></tr>
 * <tr><td>RATE_LIMITED</td><td>429 with {@code Retry-After} (whole seconds, rounded up)</td>
 *     <td>rate_limit_exceeded</td></tr>
 * <tr><td>REQUEST_TOO_LARGE</td><td>413: the tenant's bucket can never hold it, so not 429,
 *     which clients retry</td><td>request_too_large</td></tr>
 * <tr><td>NO_ELIGIBLE_BACKEND emptied by MODEL</td><td>404</td><td>model_not_found</td></tr>
 * <tr><td>NO_ELIGIBLE_BACKEND, other filters</td><td>503</td><td>no_healthy_backend</td></tr>
 * <tr><td>OVERLOADED</td><td>503</td><td>overloaded</td></tr>
 * <tr><td>RETRY_BUDGET_EXHAUSTED, NOT_RETRYABLE</td><td>502</td><td>backend_failed</td></tr>
 * </table>
 *
 * <p>A 503 carries {@code Retry-After} when the rejection names a wait. Stateless.
 */
public final class OpenAiErrors {
  private static final JsonMapper JSON = JsonMapper.builder().build();

  private OpenAiErrors() {}

  /** The HTTP status of a rejection. */
  public static int status(Rejected r) {
    return switch (r.reason()) {
      case RATE_LIMITED -> 429;
      case REQUEST_TOO_LARGE -> 413;
      case NO_ELIGIBLE_BACKEND -> r.emptiedBy() == EligibilityFilter.MODEL ? 404 : 503;
      case OVERLOADED -> 503;
      case RETRY_BUDGET_EXHAUSTED, NOT_RETRYABLE -> 502;
    };
  }

  /** The OpenAI error {@code code} of a rejection. */
  public static String code(Rejected r) {
    return switch (r.reason()) {
      case RATE_LIMITED -> "rate_limit_exceeded";
      case REQUEST_TOO_LARGE -> "request_too_large";
      case NO_ELIGIBLE_BACKEND ->
          r.emptiedBy() == EligibilityFilter.MODEL ? "model_not_found" : "no_healthy_backend";
      case OVERLOADED -> "overloaded";
      case RETRY_BUDGET_EXHAUSTED, NOT_RETRYABLE -> "backend_failed";
    };
  }

  /** Whole seconds for {@code Retry-After}: the wait rounded up, at least 1. */
  static long retryAfterSeconds(Duration wait) {
    long s = wait.getSeconds() + (wait.getNano() > 0 ? 1 : 0);
    return Math.max(1, s);
  }

  /** Writes a rejection; {@code prefix} (may be empty) goes before the engine's message. */
  static Mono<Void> rejected(ServerHttpResponse response, Rejected r, String prefix) {
    int status = status(r);
    boolean wait = status == 429 || (status == 503 && !r.retryAfter().isZero());
    if (wait) {
      response
          .getHeaders()
          .set(HttpHeaders.RETRY_AFTER, Long.toString(retryAfterSeconds(r.retryAfter())));
    }
    String type = status >= 500 ? "server_error" : status == 429 ? "rate_limit_error" : null;
    return write(
        response,
        status,
        type == null ? "invalid_request_error" : type,
        code(r),
        null,
        prefix + r.message());
  }

  /** Writes one error; the response must not be committed. */
  static Mono<Void> write(
      ServerHttpResponse response,
      int status,
      String type,
      @Nullable String code,
      @Nullable String param,
      String message) {
    Map<String, Object> error = new LinkedHashMap<>();
    error.put("message", message);
    error.put("type", type);
    error.put("param", param);
    error.put("code", code);
    byte[] bytes = JSON.writeValueAsBytes(Map.of("error", error));
    response.setStatusCode(HttpStatus.valueOf(status));
    response.getHeaders().setContentType(MediaType.APPLICATION_JSON);
    response.getHeaders().setContentLength(bytes.length);
    DataBuffer buffer = response.bufferFactory().wrap(bytes);
    return response.writeWith(Mono.just(buffer));
  }

  static String utf8(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }
}
