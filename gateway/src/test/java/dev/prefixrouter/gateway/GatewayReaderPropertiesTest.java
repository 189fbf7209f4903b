package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The starter's {@code prefix-router.reader.*} output reservation applies to the gateway's
 * requests: with {@code max-reserved-output-tokens=20}, a request asking 1,000 output tokens
 * reserves 20 and fits a tenant of 60 tokens a minute (the gateway used to build its reader without
 * them, and reserved the 1,000: 413).
 */
@SpringBootTest(
    classes = GatewayApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
      "prefix-router.scorer.policy=round-robin",
      "prefix-router.limiter.tenants.tiny=60",
      "prefix-router.reader.max-reserved-output-tokens=20"
    })
class GatewayReaderPropertiesTest {
  static final FakeEngine ENGINE = engine();

  @DynamicPropertySource
  static void backends(DynamicPropertyRegistry r) {
    r.add("prefix-router.backends[0].id", () -> "only");
    r.add("prefix-router.backends[0].url", ENGINE::url);
    r.add("prefix-router.backends[0].models[0]", () -> "m");
  }

  @LocalServerPort int port;

  @AfterAll
  static void stop() {
    ENGINE.close();
  }

  @Test
  void theReservationCapOfTheReaderPropertiesApplies() throws Exception {
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpResponse<String> res =
        client.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
                .timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json")
                .header("X-Tenant", "tiny")
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"model\":\"m\",\"max_tokens\":1000,"
                            + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(res.statusCode()).as(res.body()).isEqualTo(200);
  }

  private static FakeEngine engine() {
    try {
      return new FakeEngine("only", FakeEngine.Mode.OK);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
