package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpMethod;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * Which actuator requests {@link AdminGuard} lets through: reads of the {@code prefixrouter}
 * endpoint need the admin key once reads are guarded (keys configured), on every spelling of its
 * path; other reads and, without keys, every read pass.
 */
class AdminGuardTest {
  private static final String ADMIN = "admin-secret";

  @Test
  void withoutKeysEveryReadPasses() {
    AdminGuard open = new AdminGuard("/actuator", AdminGuard.ENDPOINT_PATH, null, false);
    assertThat(status(open, HttpMethod.GET, "/actuator/prefixrouter", null)).isZero();
    assertThat(status(open, HttpMethod.GET, "/actuator/prefixrouter/b1", null)).isZero();
    assertThat(status(open, HttpMethod.POST, "/actuator/prefixrouter/b1", null)).isEqualTo(403);
  }

  @Test
  void withApiKeysAndNoAdminKeyTheEndpointIsNotReadable() {
    AdminGuard g = new AdminGuard("/actuator", AdminGuard.ENDPOINT_PATH, null, true);
    for (String path :
        new String[] {
          "/actuator/prefixrouter",
          "/actuator/prefixrouter/",
          "/actuator/prefixrouter/b1",
          "/%61ctuator/prefixrouter",
          "/actuator/Prefix%52outer/b1",
          "/actuator;x=1/prefixrouter;y=2",
          "/actuator//prefixrouter//"
        }) {
      assertThat(status(g, HttpMethod.GET, path, null)).as(path).isEqualTo(403);
      assertThat(status(g, HttpMethod.HEAD, path, ADMIN)).as(path).isEqualTo(403);
    }
    for (String path :
        new String[] {
          "/actuator", "/actuator/health", "/actuator/prometheus", "/actuator/prefixrouterx"
        }) {
      assertThat(status(g, HttpMethod.GET, path, null)).as(path).isZero();
    }
    assertThat(status(g, HttpMethod.OPTIONS, "/actuator/prefixrouter", null)).isZero();
  }

  @Test
  void withAnAdminKeyReadsOfTheEndpointNeedIt() {
    AdminGuard g = new AdminGuard("/actuator", ManagementPortAdminGuardTest.ADMIN_SHA256);
    assertThat(status(g, HttpMethod.GET, "/actuator/prefixrouter", null)).isEqualTo(401);
    assertThat(status(g, HttpMethod.GET, "/actuator/prefixrouter/b1", "sk-tenant")).isEqualTo(401);
    assertThat(status(g, HttpMethod.GET, "/actuator/prefixrouter", ADMIN)).isZero();
    assertThat(status(g, HttpMethod.POST, "/actuator/prefixrouter/b1", ADMIN)).isZero();
    assertThat(status(g, HttpMethod.GET, "/actuator/health", null)).isZero();
  }

  @Test
  void aPathMappedEndpointIsGuardedAtItsPath() {
    AdminGuard g =
        new AdminGuard("/manage", "ops/router", ManagementPortAdminGuardTest.ADMIN_SHA256, true);
    assertThat(status(g, HttpMethod.GET, "/manage/ops/router", null)).isEqualTo(401);
    assertThat(status(g, HttpMethod.GET, "/manage/ops/router/b1", null)).isEqualTo(401);
    assertThat(status(g, HttpMethod.GET, "/manage/ops/router", ADMIN)).isZero();
    assertThat(status(g, HttpMethod.GET, "/manage/ops", null)).isZero();
  }

  /** The status the guard answered, or 0 when it passed the request on. */
  private static int status(AdminGuard guard, HttpMethod method, String path, String key) {
    MockServerHttpRequest.BaseBuilder<?> b = MockServerHttpRequest.method(method, URI.create(path));
    if (key != null) {
      b.header("Authorization", "Bearer " + key);
    }
    MockServerWebExchange ex = MockServerWebExchange.from(b.build());
    AtomicBoolean passed = new AtomicBoolean();
    guard
        .filter(
            ex,
            e -> {
              passed.set(true);
              return Mono.empty();
            })
        .block();
    if (passed.get()) {
      return 0;
    }
    return ex.getResponse().getStatusCode() == null ? -1 : ex.getResponse().getStatusCode().value();
  }
}
