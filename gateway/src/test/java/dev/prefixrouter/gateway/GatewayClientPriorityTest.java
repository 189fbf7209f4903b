package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.spring.BackendUrls;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * {@code prefix-router.gateway.client-priority}: a client's {@code priority} is removed from the
 * forwarded body unless the property says {@code forward}; its {@code kv_transfer_params} are
 * removed either way. The filter is called directly and the body it forwards is read where the
 * gateway's Netty routing would send it.
 */
class GatewayClientPriorityTest {
  private static final String BODY =
      "{\"model\":\"m\",\"priority\":-5,\"kv_transfer_params\":{\"remote_block_ids\":[7]},"
          + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

  @Test
  void priorityIsStrippedByDefault() {
    PrefixRouterGatewayProperties p = new PrefixRouterGatewayProperties();
    assertThat(p.getClientPriority()).isEqualTo(PrefixRouterGatewayProperties.ClientPriority.STRIP);
    assertThat(forwarded(p))
        .isEqualTo("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
  }

  @Test
  void priorityIsForwardedWhenTheOperatorSaysSoButKvTransferParamsNever() {
    PrefixRouterGatewayProperties p = new PrefixRouterGatewayProperties();
    p.setClientPriority(PrefixRouterGatewayProperties.ClientPriority.FORWARD);
    assertThat(forwarded(p))
        .isEqualTo(
            "{\"model\":\"m\",\"priority\":-5,"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
  }

  private static String forwarded(PrefixRouterGatewayProperties p) {
    p.setResponseTimeout(Duration.ofSeconds(10));
    RoutingEngine engine = RoutingEngine.builder().backend(Backend.of("a", "m")).build();
    BackendUrls urls = new BackendUrls();
    urls.put("a", "http://127.0.0.1:1");
    PrefixRouterGatewayFilter filter =
        new PrefixRouterGatewayFilter(
            engine, urls, ApiKeys.of(List.of()), p, new GatewayMetrics(null));
    AtomicReference<String> sent = new AtomicReference<>();
    GatewayFilterChain chain =
        exchange ->
            DataBufferUtils.join(exchange.getRequest().getBody())
                .doOnNext(
                    b -> {
                      sent.set(b.toString(StandardCharsets.UTF_8));
                      DataBufferUtils.release(b);
                    })
                .then(Mono.empty());
    MockServerWebExchange exchange =
        MockServerWebExchange.from(
            MockServerHttpRequest.post("http://gw/v1/chat/completions")
                .header("Content-Type", "application/json")
                .body(BODY));
    filter.filter(exchange, chain).block(Duration.ofSeconds(10));
    return sent.get();
  }
}
