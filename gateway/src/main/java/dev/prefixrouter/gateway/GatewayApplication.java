package dev.prefixrouter.gateway;

import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * The runnable gateway: {@code java -jar gateway/target/gateway.jar} with the backends given as
 * {@code prefix-router.backends[i].*} properties (see the README, "Run the gateway").
 *
 * <p>Defaults of the runnable jar (each can be overridden like any Spring Boot property): JSON logs
 * in Elastic Common Schema on the console ({@code logging.structured.format.console=ecs}; each
 * request's line carries {@code request_id} and {@code trace_id}), and the actuator endpoints
 * {@code health}, {@code prometheus} and {@code prefixrouter} exposed over HTTP (the latter
 * read-only unless its access is raised, and then writes need the admin key, see {@link
 * AdminGuard}). An application embedding the library gets neither default.
 */
@SpringBootApplication
public class GatewayApplication {

  /** The runnable jar's default properties. */
  static Map<String, Object> defaults() {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("spring.application.name", "prefix-router-gateway");
    d.put("logging.structured.format.console", "ecs");
    d.put("management.endpoints.web.exposure.include", "health,prometheus,prefixrouter");
    return d;
  }

  /** Starts the gateway. */
  public static void main(String[] args) {
    SpringApplication app = new SpringApplication(GatewayApplication.class);
    app.setDefaultProperties(defaults());
    app.run(args);
  }
}
