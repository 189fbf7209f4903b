package dev.prefixrouter.gateway;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.web.server.autoconfigure.ServerProperties;
import org.springframework.cloud.gateway.config.GatewayAutoConfiguration;
import org.springframework.cloud.gateway.config.HttpClientCustomizer;
import org.springframework.cloud.gateway.config.HttpClientFactory;
import org.springframework.cloud.gateway.config.HttpClientProperties;
import org.springframework.cloud.gateway.config.HttpClientSslConfigurer;
import org.springframework.context.annotation.Bean;

/**
 * Replaces Spring Cloud Gateway's upstream {@link HttpClientFactory} by a {@link
 * LoopAffinityHttpClientFactory} (a connection pool per event loop), unless {@code
 * prefix-router.gateway.upstream-loop-affinity=false} or the application defines its own factory.
 * Runs before Spring Cloud Gateway's auto-configuration, whose factory then backs off.
 */
@AutoConfiguration(before = GatewayAutoConfiguration.class)
@ConditionalOnClass(HttpClientFactory.class)
@ConditionalOnProperty(
    prefix = "prefix-router.gateway",
    name = "upstream-loop-affinity",
    havingValue = "true",
    matchIfMissing = true)
public class PrefixRouterGatewayHttpClientAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean(HttpClientFactory.class)
  public HttpClientFactory gatewayHttpClientFactory(
      HttpClientProperties properties,
      ServerProperties serverProperties,
      ObjectProvider<HttpClientCustomizer> customizers,
      HttpClientSslConfigurer sslConfigurer) {
    return new LoopAffinityHttpClientFactory(
        properties, serverProperties, sslConfigurer, customizers.orderedStream().toList());
  }
}
