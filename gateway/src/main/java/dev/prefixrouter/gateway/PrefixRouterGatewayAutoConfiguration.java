package dev.prefixrouter.gateway;

import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.spring.BackendUrls;
import dev.prefixrouter.spring.PrefixRouterAutoConfiguration;
import dev.prefixrouter.spring.PrefixRouterProperties;
import dev.prefixrouter.spring.ReaderProperties;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.cloud.gateway.route.RouteLocator;
import org.springframework.cloud.gateway.route.builder.RouteLocatorBuilder;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.http.HttpMethod;
import org.springframework.web.reactive.function.server.RequestPredicates;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;

/**
 * Wires the gateway onto the starter's {@link RoutingEngine} and its {@link BackendUrls} ({@code
 * prefix-router.backends[*].url}, and the actuator's {@code add} with a {@code url} for backends
 * added at runtime): {@link ApiKeys}, {@link PrefixRouterGatewayFilter} with {@link
 * BackendUrlFilter}, {@link AdminGuard}, and (unless {@code
 * prefix-router.gateway.routes-enabled=false}) the route {@value #ROUTE_ID} for the three POST
 * endpoints plus {@code GET /v1/models}. An application that defines its own routes adds the filter
 * bean to them.
 */
@AutoConfiguration(after = PrefixRouterAutoConfiguration.class)
@ConditionalOnBean(RoutingEngine.class)
@EnableConfigurationProperties(PrefixRouterGatewayProperties.class)
public class PrefixRouterGatewayAutoConfiguration {
  /** Id of the route this configuration adds. */
  public static final String ROUTE_ID = "prefix-router-openai";

  /** Placeholder URI of that route; every request's URL is the chosen backend's. */
  static final String PLACEHOLDER_URI = "http://prefix-router.invalid";

  @Bean
  @ConditionalOnMissingBean
  public ApiKeys prefixRouterApiKeys(PrefixRouterGatewayProperties p) {
    return ApiKeys.of(p.getApiKeys());
  }

  @Bean
  @ConditionalOnMissingBean
  public GatewayMetrics prefixRouterGatewayMetrics(ObjectProvider<MeterRegistry> registry) {
    return new GatewayMetrics(registry.getIfAvailable());
  }

  @Bean
  @ConditionalOnMissingBean
  public PrefixRouterGatewayFilter prefixRouterGatewayFilter(
      RoutingEngine engine,
      BackendUrls urls,
      ApiKeys keys,
      PrefixRouterGatewayProperties p,
      GatewayMetrics metrics,
      ObjectProvider<ReaderProperties> reader,
      ObjectProvider<PrefixRouterProperties> router) {
    PrefixRouterProperties rp = router.getIfAvailable();
    return new PrefixRouterGatewayFilter(
        engine,
        urls,
        keys,
        p,
        metrics,
        reader.getIfAvailable(),
        rp != null && rp.isPrefixIsolation());
  }

  @Bean
  @ConditionalOnMissingBean
  public BackendUrlFilter prefixRouterBackendUrlFilter() {
    return new BackendUrlFilter();
  }

  @Bean
  @ConditionalOnMissingBean
  public AdminGuard prefixRouterAdminGuard(
      PrefixRouterGatewayProperties p, ApiKeys keys, Environment env) {
    // with keys configured, the fleet snapshot (tenants, their tokens, backends) is the admin's
    return new AdminGuard(
        env.getProperty("management.endpoints.web.base-path", "/actuator"),
        env.getProperty(
            "management.endpoints.web.path-mapping.prefixrouter", AdminGuard.ENDPOINT_PATH),
        p.getAdminKeySha256(),
        keys.enabled() || p.getAdminKeySha256() != null);
  }

  @Bean
  @ConditionalOnProperty(
      prefix = "prefix-router.gateway",
      name = "routes-enabled",
      havingValue = "true",
      matchIfMissing = true)
  public RouteLocator prefixRouterRoutes(
      RouteLocatorBuilder builder, PrefixRouterGatewayFilter filter) {
    return builder
        .routes()
        .route(
            ROUTE_ID,
            r ->
                r.path("/v1/chat/completions", "/v1/completions", "/v1/responses")
                    .and()
                    .method(HttpMethod.POST)
                    .filters(f -> f.filter(filter))
                    .uri(PLACEHOLDER_URI))
        .build();
  }

  @Bean
  @ConditionalOnProperty(
      prefix = "prefix-router.gateway",
      name = "routes-enabled",
      havingValue = "true",
      matchIfMissing = true)
  public RouterFunction<ServerResponse> prefixRouterModels(RoutingEngine engine, ApiKeys keys) {
    ModelsHandler h = new ModelsHandler(engine, keys);
    return RouterFunctions.route(RequestPredicates.GET("/v1/models"), h::handle);
  }
}
