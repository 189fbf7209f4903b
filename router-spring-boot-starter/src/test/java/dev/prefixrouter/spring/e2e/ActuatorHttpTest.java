package dev.prefixrouter.spring.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.RoutingEngine;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;

/** The {@code prefixrouter} actuator endpoint over real HTTP, as an operator would call it. */
class ActuatorHttpTest {
  private final HttpClient http = HttpClient.newHttpClient();

  @Configuration(proxyBeanMethods = false)
  @EnableAutoConfiguration
  static class App {}

  private static ConfigurableApplicationContext start(String... extra) {
    List<String> props = new ArrayList<>();
    props.add("server.port=0");
    props.add("server.address=127.0.0.1");
    props.add("management.endpoints.web.exposure.include=prefixrouter");
    props.add("prefix-router.backends[0].id=b0");
    props.add("prefix-router.backends[0].models=qwen2.5-7b");
    props.add("prefix-router.backends[0].capabilities=vision");
    props.add("prefix-router.backends[0].capacity-blocks=20000");
    props.add("prefix-router.backends[0].weight=2.0");
    props.addAll(List.of(extra));
    return new SpringApplicationBuilder(App.class).properties(props.toArray(new String[0])).run();
  }

  private HttpResponse<String> post(ConfigurableApplicationContext app, String id, String body)
      throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create(base(app) + "/actuator/prefixrouter/" + id))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> get(ConfigurableApplicationContext app, String path)
      throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create(base(app) + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static String base(ConfigurableApplicationContext app) {
    return "http://127.0.0.1:" + app.getEnvironment().getProperty("local.server.port");
  }

  @Test
  void writesAnswerPreciseStatusesWhenEnabled() throws Exception {
    try (ConfigurableApplicationContext app =
        start("management.endpoint.prefixrouter.access=unrestricted")) {
      RoutingEngine engine = app.getBean(RoutingEngine.class);

      // the README's body: models as a comma-separated string
      HttpResponse<String> add =
          post(app, "b1", "{\"action\": \"add\", \"models\": \"qwen2.5-7b\"}");
      assertThat(add.statusCode()).as(add.body()).isEqualTo(200);
      assertThat(add.body()).contains("\"result\":\"added\"");
      assertThat(engine.backends().get("b1").orElseThrow().models()).containsExactly("qwen2.5-7b");
      assertThat(post(app, "b2", "{\"action\":\"add\",\"models\":\"m1, m2\"}").statusCode())
          .isEqualTo(200);
      assertThat(engine.backends().get("b2").orElseThrow().models())
          .containsExactlyInAnyOrder("m1", "m2");

      // Spring Boot reads actuator bodies as string values: an array is refused (documented)
      HttpResponse<String> array =
          post(app, "b3", "{\"action\":\"add\",\"models\":[\"m1\",\"m3\"]}");
      assertThat(array.statusCode()).as(array.body()).isEqualTo(400);
      assertThat(array.body()).doesNotContain("\tat ");
      assertThat(engine.backends().get("b3")).isEmpty();

      // add on an existing id is a conflict and changes nothing
      HttpResponse<String> again =
          post(app, "b0", "{\"action\":\"add\",\"models\":\"other\",\"capacityBlocks\":1}");
      assertThat(again.statusCode()).as(again.body()).isEqualTo(409);
      Backend b0 = engine.backends().get("b0").orElseThrow();
      assertThat(b0.models()).containsExactly("qwen2.5-7b");
      assertThat(b0.capabilities()).containsExactly("vision");
      assertThat(b0.capacityBlocks()).isEqualTo(20_000);
      assertThat(b0.weight()).isEqualTo(2.0);

      // unknown ids: 404
      for (String action : List.of("remove", "drain", "undrain")) {
        HttpResponse<String> r = post(app, "nope", "{\"action\":\"" + action + "\"}");
        assertThat(r.statusCode()).as(action + ": " + r.body()).isEqualTo(404);
        assertThat(r.body()).contains("no backend 'nope'");
      }
      assertThat(get(app, "/actuator/prefixrouter/nope").statusCode()).isEqualTo(404);

      // unknown action, missing action, add without models: 400 without a stack trace
      for (String body :
          List.of(
              "{\"action\":\"explode\"}",
              "{}",
              "{\"action\":\"add\"}",
              "{\"action\":\"add\"," + "\"models\":\" , \"}")) {
        HttpResponse<String> r = post(app, "b0", body);
        assertThat(r.statusCode()).as(body + " → " + r.body()).isEqualTo(400);
        assertThat(r.body()).doesNotContain("Exception").doesNotContain("\tat ");
      }

      HttpResponse<String> drain = post(app, "b0", "{\"action\":\"drain\"}");
      assertThat(drain.statusCode()).isEqualTo(200);
      assertThat(post(app, "b1", "{\"action\":\"remove\"}").statusCode()).isEqualTo(200);
      assertThat(engine.backends().get("b1")).isEmpty();
    }
  }

  @Test
  void theEndpointIsReadOnlyByDefault() throws Exception {
    try (ConfigurableApplicationContext app = start()) {
      assertThat(get(app, "/actuator/prefixrouter").statusCode()).isEqualTo(200);
      HttpResponse<String> add = post(app, "b9", "{\"action\":\"add\",\"models\":\"m\"}");
      assertThat(add.statusCode()).as(add.body()).isBetween(400, 499);
      HttpResponse<String> drain = post(app, "b0", "{\"action\":\"drain\"}");
      assertThat(drain.statusCode()).isBetween(400, 499);
      RoutingEngine engine = app.getBean(RoutingEngine.class);
      assertThat(engine.backends().get("b9")).isEmpty();
      assertThat(engine.inspect().backend("b0").orElseThrow().draining()).isFalse();
    }
  }
}
