package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.EligibilityFilter;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RejectReason;
import dev.prefixrouter.api.Rejected;
import dev.prefixrouter.api.RouteRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpHeaders;
import org.springframework.mock.http.server.reactive.MockServerHttpResponse;

/** Every {@link RejectReason} as HTTP: status, OpenAI error code and type, {@code Retry-After}. */
class OpenAiErrorsTest {

  /** One rejection of each kind the engine gives (NO_ELIGIBLE_BACKEND by model and by health). */
  static List<Rejected> everyRejection(Duration wait) {
    RouteRequest req = RouteRequest.builder("t", "m").prompt(Prompt.ofText("hi")).build();
    List<Rejected> all = new ArrayList<>();
    for (RejectReason reason : RejectReason.values()) {
      if (reason == RejectReason.NO_ELIGIBLE_BACKEND) {
        all.add(new Rejected(req, reason, wait, "no", EligibilityFilter.MODEL));
        all.add(new Rejected(req, reason, wait, "no", EligibilityFilter.HEALTH));
      } else {
        all.add(new Rejected(req, reason, wait, "no", null));
      }
    }
    return all;
  }

  @Test
  void eachReasonHasItsStatusCodeAndType() {
    for (Rejected r : everyRejection(Duration.ZERO)) {
      MockServerHttpResponse res = new MockServerHttpResponse();
      OpenAiErrors.rejected(res, r, "").block();
      int status = OpenAiErrors.status(r);
      assertThat(res.getStatusCode().value()).as(r.reason().name()).isEqualTo(status);
      int expected =
          switch (r.reason()) {
            case RATE_LIMITED -> 429;
            case REQUEST_TOO_LARGE -> 413;
            case NO_ELIGIBLE_BACKEND -> r.emptiedBy() == EligibilityFilter.MODEL ? 404 : 503;
            case OVERLOADED -> 503;
            case RETRY_BUDGET_EXHAUSTED, NOT_RETRYABLE -> 502;
          };
      assertThat(status).as(r.reason() + " " + r.emptiedBy()).isEqualTo(expected);
      String body = res.getBodyAsString().block();
      assertThat(body)
          .startsWith("{\"error\":{")
          .contains("\"code\":\"" + OpenAiErrors.code(r) + "\"")
          .contains("\"param\":null")
          .contains(
              "\"type\":\""
                  + (status >= 500
                      ? "server_error"
                      : status == 429 ? "rate_limit_error" : "invalid_request_error")
                  + "\"");
      // without a wait only the quota names a Retry-After (at least 1 s)
      assertThat(res.getHeaders().getFirst(HttpHeaders.RETRY_AFTER))
          .as(r.reason().name())
          .isEqualTo(status == 429 ? "1" : null);
    }
  }

  @Test
  void retryAfterIsTheWaitInWholeSecondsRoundedUp() {
    for (Rejected r : everyRejection(Duration.ofMillis(2_100))) {
      MockServerHttpResponse res = new MockServerHttpResponse();
      OpenAiErrors.rejected(res, r, "").block();
      int status = OpenAiErrors.status(r);
      assertThat(res.getHeaders().getFirst(HttpHeaders.RETRY_AFTER))
          .as(r.reason() + " " + r.emptiedBy())
          .isEqualTo(status == 429 || status == 503 ? "3" : null);
    }
    assertThat(OpenAiErrors.retryAfterSeconds(Duration.ofSeconds(2))).isEqualTo(2);
    assertThat(OpenAiErrors.retryAfterSeconds(Duration.ofMillis(1))).isEqualTo(1);
    assertThat(OpenAiErrors.retryAfterSeconds(Duration.ZERO)).isEqualTo(1);
  }
}
