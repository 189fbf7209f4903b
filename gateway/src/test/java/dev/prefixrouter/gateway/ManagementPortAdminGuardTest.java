package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.RoutingEngine;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalManagementPort;

/**
 * With the actuator on its own port ({@code management.server.port}), its writing operations, and
 * reads of the {@code prefixrouter} endpoint once an admin key is configured, are still refused
 * without the admin key, and allowed with it.
 */
@SpringBootTest(
    classes = GatewayApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
      "management.server.port=0",
      "management.endpoints.web.exposure.include=health,prefixrouter",
      "management.endpoint.prefixrouter.access=unrestricted",
      "prefix-router.backends[0].id=b1",
      "prefix-router.backends[0].url=http://127.0.0.1:9",
      "prefix-router.backends[0].models[0]=m",
      "prefix-router.gateway.admin-key-sha256=" + ManagementPortAdminGuardTest.ADMIN_SHA256
    })
class ManagementPortAdminGuardTest {
  /** SHA-256 of {@code admin-secret}. */
  static final String ADMIN_SHA256 =
      "16175223c8ddce5ace0493c948569c211b03c4c6bb3d3e484434999448cffe01";

  @LocalManagementPort int managementPort;
  @Autowired RoutingEngine engine;

  private final HttpClient client =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  @Test
  void writesOnTheManagementPortNeedTheAdminKey() throws Exception {
    assertThat(ApiKeys.sha256Hex("admin-secret"))
        .as("ADMIN_SHA256 is the hash of the key used below")
        .isEqualTo(ADMIN_SHA256);
    HttpResponse<String> anonymous =
        client.send(add("new1", null), HttpResponse.BodyHandlers.ofString());
    assertThat(anonymous.statusCode()).isEqualTo(401);
    HttpResponse<String> wrong =
        client.send(add("new1", "not-the-key"), HttpResponse.BodyHandlers.ofString());
    assertThat(wrong.statusCode()).isEqualTo(401);
    assertThat(engine.backends().get("new1")).isEmpty();

    HttpResponse<String> admin =
        client.send(add("new1", "admin-secret"), HttpResponse.BodyHandlers.ofString());
    assertThat(admin.statusCode()).as(admin.body()).isBetween(200, 299);
    assertThat(engine.backends().get("new1")).isPresent();
  }

  /** With an admin key configured, reading the fleet snapshot needs it too. */
  @Test
  void readsOnTheManagementPortNeedTheAdminKey() throws Exception {
    assertThat(client.send(read(null), HttpResponse.BodyHandlers.ofString()).statusCode())
        .isEqualTo(401);
    assertThat(client.send(read("not-the-key"), HttpResponse.BodyHandlers.ofString()).statusCode())
        .isEqualTo(401);
    HttpResponse<String> admin =
        client.send(read("admin-secret"), HttpResponse.BodyHandlers.ofString());
    assertThat(admin.statusCode()).as(admin.body()).isEqualTo(200);
    assertThat(admin.body()).contains("b1");
  }

  private HttpRequest read(String key) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + managementPort + "/actuator/prefixrouter"));
    if (key != null) {
      b.header("Authorization", "Bearer " + key);
    }
    return b.build();
  }

  private HttpRequest add(String id, String key) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + managementPort + "/actuator/prefixrouter/" + id))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString("{\"action\":\"add\",\"models\":\"x\"}"));
    if (key != null) {
      b.header("Authorization", "Bearer " + key);
    }
    return b.build();
  }
}
