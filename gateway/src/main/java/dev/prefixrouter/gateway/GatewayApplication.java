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
 * read-only unless its access is raised, and then writes need the admin key; once API keys or an
 * admin key are configured its reads need the admin key too, see {@link AdminGuard}), and Netty's
 * buffer leak detector off. An application embedding the library gets none of these defaults.
 */
@SpringBootApplication
public class GatewayApplication {

  /** The runnable jar's default properties. */
  static Map<String, Object> defaults() {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("spring.application.name", "prefix-router-gateway");
    d.put("logging.structured.format.console", "ecs");
    d.put("management.endpoints.web.exposure.include", "health,prometheus,prefixrouter");
    // per-request CPU (benchmarks/README.md, "Gateway: added latency"): an inference engine needs
    // no X-Forwarded-*/Forwarded headers, the upstream call's own observation and Spring Cloud
    // Gateway's per-route timer (spring.cloud.gateway.requests) duplicate the gateway's per-model
    // meters and Boot's http.server.requests, and a long-task timer per observation is not read
    // by anyone
    d.put("spring.cloud.gateway.server.webflux.x-forwarded.enabled", "false");
    d.put("spring.cloud.gateway.server.webflux.forwarded.enabled", "false");
    d.put("spring.cloud.gateway.server.webflux.observability.enabled", "false");
    d.put("spring.cloud.gateway.server.webflux.metrics.enabled", "false");
    d.put("management.metrics.observations.ignored-meters", "long-task-timer");
    // Netty's leak detector samples about 1 % of buffers with a stack trace each (~1.4 % of the
    // event loops' samples at 64 paced streams); the tests run with it on (their contexts do not
    // take these defaults)
    d.put("spring.netty.leak-detection", "disabled");
    return d;
  }

  /**
   * Reactor Netty's event-loop threads, unless {@code -Dreactor.netty.ioWorkerCount} is given: one
   * per available processor rather than Reactor Netty's default of at least 4. The gateway serves
   * both hops of a request (client and engine) on these loops; with more loops than cores the two
   * hops of one request land on different threads more often and hand off through the loop's task
   * queue and wake-ups, which measured at about 1.1 ms of event-loop CPU per streamed request on 2
   * cores against 0.6 ms with 2 loops (benchmarks/README.md, "Gateway: added latency").
   */
  static final String IO_WORKER_COUNT = "reactor.netty.ioWorkerCount";

  /** Starts the gateway. */
  public static void main(String[] args) {
    if (System.getProperty(IO_WORKER_COUNT) == null) {
      System.setProperty(
          IO_WORKER_COUNT,
          Integer.toString(Math.max(1, Runtime.getRuntime().availableProcessors())));
    }
    SpringApplication app = new SpringApplication(GatewayApplication.class);
    app.setDefaultProperties(defaults());
    app.run(args);
  }
}
