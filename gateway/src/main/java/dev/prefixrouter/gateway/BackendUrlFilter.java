package dev.prefixrouter.gateway;

import java.net.URI;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.cloud.gateway.filter.GlobalFilter;
import org.springframework.cloud.gateway.filter.RouteToRequestUrlFilter;
import org.springframework.cloud.gateway.support.ServerWebExchangeUtils;
import org.springframework.core.Ordered;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * Points the request at the backend {@link PrefixRouterGatewayFilter} chose: its base URL followed
 * by the request's path and query. Runs right after {@link RouteToRequestUrlFilter} (which would
 * otherwise set the route's placeholder URI), on every attempt; does nothing on exchanges the
 * routing filter did not handle. Stateless.
 */
public final class BackendUrlFilter implements GlobalFilter, Ordered {
  /** Order: right after {@link RouteToRequestUrlFilter}. */
  public static final int ORDER = RouteToRequestUrlFilter.ROUTE_TO_URL_FILTER_ORDER + 1;

  @Override
  public Mono<Void> filter(ServerWebExchange exchange, GatewayFilterChain chain) {
    URI base = exchange.getAttribute(PrefixRouterGatewayFilter.TARGET_ATTR);
    if (base != null) {
      URI in = exchange.getRequest().getURI();
      String query = in.getRawQuery();
      URI target = URI.create(base + in.getRawPath() + (query == null ? "" : "?" + query));
      exchange.getAttributes().put(ServerWebExchangeUtils.GATEWAY_REQUEST_URL_ATTR, target);
      if (LatencyProbe.ON) {
        LatencyProbe.mark(exchange.getAttribute(LatencyProbe.ATTR), LatencyProbe.Stage.URL_SET);
      }
    }
    return chain.filter(exchange);
  }

  @Override
  public int getOrder() {
    return ORDER;
  }
}
