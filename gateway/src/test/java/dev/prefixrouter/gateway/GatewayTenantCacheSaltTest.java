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
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Under prefix isolation the gateway binds every forwarded {@code cache_salt} to the authenticated
 * tenant: a client that sent another tenant's salt used to have it forwarded as it came, so vLLM
 * (which isolates by salt alone) served it that tenant's cached blocks, and its request taught the
 * router to key that tenant's KV events into its own namespace.
 */
@SpringBootTest(
    classes = GatewayApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"prefix-router.scorer.policy=round-robin", "prefix-router.prefix-isolation=true"})
class GatewayTenantCacheSaltTest {
  static final FakeEngine ENGINE = engine();
  static final String KEY_A = "key-of-tenant-a";
  static final String KEY_B = "key-of-tenant-b";
  static final JsonMapper JSON = JsonMapper.builder().build();

  @DynamicPropertySource
  static void backends(DynamicPropertyRegistry r) {
    r.add("prefix-router.backends[0].id", () -> "only");
    r.add("prefix-router.backends[0].url", ENGINE::url);
    r.add("prefix-router.backends[0].models[0]", () -> "m");
    r.add("prefix-router.gateway.api-keys[0].tenant", () -> "a");
    r.add("prefix-router.gateway.api-keys[1].tenant", () -> "b");
    r.add("prefix-router.gateway.api-keys[0].sha256", () -> ApiKeys.sha256Hex(KEY_A));
    r.add("prefix-router.gateway.api-keys[1].sha256", () -> ApiKeys.sha256Hex(KEY_B));
  }

  @LocalServerPort int port;

  @AfterAll
  static void stop() {
    ENGINE.close();
  }

  private String forwardedSalt(String key, String body) throws Exception {
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    int before = ENGINE.bodies.size();
    HttpResponse<String> res =
        client.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
                .timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json")
                .header("Authorization", "Bearer " + key)
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(res.statusCode()).as(res.body()).isEqualTo(200);
    assertThat(ENGINE.bodies).hasSize(before + 1);
    JsonNode forwarded = JSON.readTree(ENGINE.bodies.get(before));
    assertThat(forwarded.get("messages")).as("the rest of the body as sent").hasSize(1);
    return forwarded.path("cache_salt").asString(null);
  }

  @Test
  void theForwardedSaltIsTheTenantsWhateverTheClientSent() throws Exception {
    String hi = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";
    assertThat(forwardedSalt(KEY_A, "{\"model\":\"m\"," + hi + ",\"cache_salt\":\"b\"}"))
        .isEqualTo("1:a|b");
    assertThat(forwardedSalt(KEY_A, "{\"model\":\"m\"," + hi + "}")).isEqualTo("1:a");
    assertThat(forwardedSalt(KEY_B, "{\"model\":\"m\"," + hi + "}")).isEqualTo("1:b");
  }

  private static FakeEngine engine() {
    try {
      return new FakeEngine("only", FakeEngine.Mode.OK);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
