package dev.prefixrouter.gateway;

import java.util.List;
import org.springframework.boot.web.server.autoconfigure.ServerProperties;
import org.springframework.cloud.gateway.config.HttpClientCustomizer;
import org.springframework.cloud.gateway.config.HttpClientFactory;
import org.springframework.cloud.gateway.config.HttpClientProperties;
import org.springframework.cloud.gateway.config.HttpClientSslConfigurer;
import reactor.netty.http.client.HttpClient;
import reactor.netty.resources.ConnectionProvider;

/**
 * Spring Cloud Gateway's {@link HttpClientFactory} (every {@code
 * spring.cloud.gateway.server.webflux.httpclient.*} property and {@link HttpClientCustomizer}
 * applies as before) whose upstream connection pool is a {@link LoopAffinityConnectionProvider}
 * when the configured pool is elastic (the default): one pool per event loop, so that a request's
 * upstream connection lives on the event loop of its client connection. A fixed or disabled pool is
 * left as Spring Cloud Gateway makes it.
 */
public class LoopAffinityHttpClientFactory extends HttpClientFactory {

  /** As {@link HttpClientFactory}'s constructor. */
  public LoopAffinityHttpClientFactory(
      HttpClientProperties properties,
      ServerProperties serverProperties,
      HttpClientSslConfigurer sslConfigurer,
      List<HttpClientCustomizer> customizers) {
    super(properties, serverProperties, sslConfigurer, customizers);
  }

  @Override
  protected HttpClient createInstance() {
    HttpClient client = super.createInstance();
    if (!LatencyProbe.ON) {
      return client;
    }
    // the routing filter puts the request's timestamps into the Reactor context of its attempt
    return client
        .doOnRequest(
            (req, conn) ->
                LatencyProbe.mark(
                    req.currentContextView().getOrDefault(LatencyProbe.ATTR, null),
                    LatencyProbe.Stage.CONNECTION))
        .doAfterRequest(
            (req, conn) ->
                LatencyProbe.mark(
                    req.currentContextView().getOrDefault(LatencyProbe.ATTR, null),
                    LatencyProbe.Stage.REQUEST_SENT));
  }

  @Override
  protected ConnectionProvider buildConnectionProvider(HttpClientProperties properties) {
    if (properties.getPool().getType() != HttpClientProperties.Pool.PoolType.ELASTIC) {
      return super.buildConnectionProvider(properties);
    }
    return new LoopAffinityConnectionProvider(() -> super.buildConnectionProvider(properties));
  }
}
