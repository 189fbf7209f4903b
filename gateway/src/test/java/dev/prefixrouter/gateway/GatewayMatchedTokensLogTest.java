package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import dev.prefixrouter.radix.BlockHashers;
import dev.prefixrouter.radix.RadixPrefixIndex;
import dev.prefixrouter.spring.BackendUrls;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.event.KeyValuePair;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.http.HttpStatus;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;

/**
 * The request log line's {@code matched_tokens} is the index's match on the chosen backend ({@code
 * Routed.indexMatchedTokens()}, as {@code prefixrouter.matched.ratio} and the dashboard's "Prefix
 * match ratio"), not a scorer's discount for prefixes still being prefilled. The filter is called
 * directly; the chain answers as a backend would, without a network.
 */
class GatewayMatchedTokensLogTest {
  static final String BODY =
      "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\""
          + "a prompt long enough to fill several blocks of eight characters each"
          + "\"}]}";

  /** Ranks as given and expects the engine to serve nothing of any match from its cache. */
  static final class NothingServedScorer implements Scorer {
    @Override
    public String name() {
      return "nothing-served";
    }

    @Override
    public void score(ScoringContext ctx) {
      ctx.sortByCost(0);
    }

    @Override
    public int cachedTokens(ScoringContext ctx, int candidate) {
      return 0;
    }
  }

  @Test
  void theLogLinesMatchedTokensAreTheIndexsMatchNotTheScorersDiscountedCount() {
    RoutingEngine engine =
        RoutingEngine.builder()
            .hasher(BlockHashers.chars(8))
            .prefixIndex(RadixPrefixIndex.create())
            .scorer(new NothingServedScorer())
            .backend(Backend.of("a", "m"))
            .build();
    PrefixRouterGatewayProperties p = new PrefixRouterGatewayProperties();
    p.setResponseTimeout(Duration.ofSeconds(10));
    BackendUrls urls = new BackendUrls();
    urls.put("a", "http://127.0.0.1:1");
    PrefixRouterGatewayFilter filter =
        new PrefixRouterGatewayFilter(
            engine, urls, ApiKeys.of(List.of()), p, new GatewayMetrics(null));

    assertTheSecondLineLogsTheIndexsMatch(logLinesOfTwoRequests(filter));
  }

  /**
   * Sends {@link #BODY} twice through {@code filter} (the second finds the first's prediction in
   * the index; the backend answers 400, so each lease ends and its line is logged) and returns the
   * key values of the request log lines.
   */
  static List<Map<String, Object>> logLinesOfTwoRequests(PrefixRouterGatewayFilter filter) {
    Logger logger = (Logger) LoggerFactory.getLogger(PrefixRouterGatewayFilter.class);
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    appender.start();
    logger.addAppender(appender);
    try {
      GatewayFilterChain chain =
          exchange -> {
            exchange.getResponse().setStatusCode(HttpStatus.BAD_REQUEST);
            return exchange.getResponse().setComplete();
          };
      for (int i = 0; i < 2; i++) {
        MockServerWebExchange exchange =
            MockServerWebExchange.from(
                MockServerHttpRequest.post("http://gw/v1/chat/completions")
                    .header("Content-Type", "application/json")
                    .body(BODY));
        filter.filter(exchange, chain).block(Duration.ofSeconds(10));
      }
    } finally {
      logger.detachAppender(appender);
    }
    return appender.list.stream()
        .filter(e -> e.getKeyValuePairs() != null)
        .map(
            e ->
                e.getKeyValuePairs().stream()
                    .collect(Collectors.toMap(kv -> kv.key, (KeyValuePair kv) -> kv.value)))
        .filter(kv -> kv.containsKey("matched_tokens"))
        .toList();
  }

  /** The first line matched nothing; the second logs the index's match, not the scorer's 0. */
  static void assertTheSecondLineLogsTheIndexsMatch(List<Map<String, Object>> lines) {
    assertThat(lines).hasSize(2);
    assertThat(lines.get(0).get("matched_tokens")).as("nothing believed yet").isEqualTo(0);
    int prompt = (Integer) lines.get(1).get("prompt_tokens");
    assertThat(lines.get(1).get("matched_tokens"))
        .as("the second request's index match (the scorer expected none of it served)")
        .isInstanceOf(Integer.class)
        .satisfies(m -> assertThat((Integer) m).isPositive().isLessThanOrEqualTo(prompt));
  }
}
