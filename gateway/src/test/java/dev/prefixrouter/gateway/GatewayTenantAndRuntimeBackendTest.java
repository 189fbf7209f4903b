package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.RoutingEngine;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The gateway without API keys: the tenant comes from the {@code X-Tenant} header (never from the
 * body's {@code user} by default), and a backend added at runtime through the actuator with a
 * {@code url} is served through the gateway at that URL.
 */
@SpringBootTest(
    classes = GatewayApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
      "prefix-router.scorer.policy=round-robin",
      "prefix-router.limiter.tenants.tiny=60",
      "management.endpoints.web.exposure.include=health,prefixrouter",
      "management.endpoint.prefixrouter.access=unrestricted",
      "prefix-router.gateway.admin-key-sha256=" + ManagementPortAdminGuardTest.ADMIN_SHA256
    })
class GatewayTenantAndRuntimeBackendTest {
  static final FakeEngine FIRST = engine("first");
  static final FakeEngine LATE = engine("late");

  @DynamicPropertySource
  static void backends(DynamicPropertyRegistry r) {
    r.add("prefix-router.backends[0].id", () -> "first");
    r.add("prefix-router.backends[0].url", FIRST::url);
    r.add("prefix-router.backends[0].models[0]", () -> "m");
  }

  @LocalServerPort int port;
  @Autowired RoutingEngine engine;

  private final HttpClient client =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(2))
          .build();

  @AfterAll
  static void stop() {
    FIRST.close();
    LATE.close();
  }

  @Test
  void theTenantComesFromTheHeaderNeverFromTheBody() throws Exception {
    // tenant "tiny" holds 60 tokens a minute: 1,000 output tokens can never fit (413)
    HttpResponse<String> tiny = send("/v1/chat/completions", chat("m", 1000, null), "tiny");
    assertThat(tiny.statusCode()).isEqualTo(413);
    assertThat(tiny.body()).contains("\"code\":\"request_too_large\"");
    // without the header: the default tenant, unlimited
    assertThat(send("/v1/chat/completions", chat("m", 1000, null), null).statusCode())
        .isEqualTo(200);
    // the body's user does not name the tenant unless tenant-from-user is set
    assertThat(send("/v1/chat/completions", chat("m", 1000, "tiny"), null).statusCode())
        .isEqualTo(200);
  }

  @Test
  void aBackendAddedAtRuntimeIsServedAtItsUrl() throws Exception {
    HttpResponse<String> unknown = send("/v1/chat/completions", chat("late-model", 10, null), null);
    assertThat(unknown.statusCode()).isEqualTo(404);
    HttpResponse<String> add =
        client.send(
            HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + port + "/actuator/prefixrouter/late"))
                .header("Content-Type", "application/json")
                .header("Authorization", "Bearer admin-secret")
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"action\":\"add\",\"models\":\"late-model\",\"url\":\""
                            + LATE.url()
                            + "\"}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(add.statusCode()).as(add.body()).isBetween(200, 299);
    assertThat(engine.backends().get("late")).isPresent();

    HttpResponse<String> res = send("/v1/chat/completions", chat("late-model", 10, null), null);
    assertThat(res.statusCode()).isEqualTo(200);
    assertThat(res.body()).contains("hi from late");
    assertThat(res.headers().firstValue(PrefixRouterGatewayFilter.BACKEND_HEADER)).hasValue("late");
    assertThat(LATE.requests.get()).isEqualTo(1);
  }

  /**
   * The admin key is checked on the path the endpoint is matched on: an encoded letter or a {@code
   * ;parameter} in the base path used to pass the guard and still reach the endpoint.
   */
  @Test
  void aDisguisedActuatorPathStillNeedsTheAdminKey() throws Exception {
    for (String path :
        new String[] {
          "/%61ctuator/prefixrouter/evil",
          "/actuator;x=1/prefixrouter/evil",
          "//actuator/prefixrouter/evil",
          "/ACTUATOR/prefixrouter/evil"
        }) {
      HttpResponse<String> add =
          client.send(
              HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                  .header("Content-Type", "application/json")
                  .POST(
                      HttpRequest.BodyPublishers.ofString(
                          "{\"action\":\"add\",\"models\":\"m\",\"url\":\"http://127.0.0.1:9\"}"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(add.statusCode()).as(path + ": " + add.body()).isEqualTo(401);
      assertThat(engine.backends().get("evil")).as(path).isEmpty();
    }
  }

  private HttpResponse<String> send(String path, String body, String tenant) throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofSeconds(10))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body));
    if (tenant != null) {
      b.header("X-Tenant", tenant);
    }
    return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static String chat(String model, int maxTokens, String user) {
    return "{\"model\":\""
        + model
        + "\",\"max_tokens\":"
        + maxTokens
        + (user == null ? "" : ",\"user\":\"" + user + "\"")
        + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
  }

  private static FakeEngine engine(String name) {
    try {
      return new FakeEngine(name, FakeEngine.Mode.OK);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
