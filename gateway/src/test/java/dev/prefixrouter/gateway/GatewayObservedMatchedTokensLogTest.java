package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.spi.Scorer;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;

/**
 * As {@link GatewayMatchedTokensLogTest}, in the gateway's default wiring: the application's
 * context, whose observation registry makes the starter hand the filter its observed engine (a
 * {@code Routed} copy around a wrapped lease per decision). The log line's {@code matched_tokens}
 * is still the index's match, not the scorer's discount.
 */
@SpringBootTest(
    classes = GatewayApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
      "prefix-router.hashing.kind=chars",
      "prefix-router.hashing.block-chars=8",
      "prefix-router.gateway.response-timeout=10s",
      "prefix-router.backends[0].id=a",
      "prefix-router.backends[0].models[0]=m",
      "prefix-router.backends[0].url=http://127.0.0.1:1"
    })
@Import(GatewayObservedMatchedTokensLogTest.NothingServed.class)
class GatewayObservedMatchedTokensLogTest {

  /** The scorer that expects nothing of a match served, instead of the starter's est-ttft. */
  @TestConfiguration(proxyBeanMethods = false)
  static class NothingServed {
    @Bean
    Scorer nothingServedScorer() {
      return new GatewayMatchedTokensLogTest.NothingServedScorer();
    }
  }

  @Autowired RoutingEngine engine;
  @Autowired ObservationRegistry observations;
  @Autowired PrefixRouterGatewayFilter filter;

  @Test
  void withTheObservedEngineTheLogLinesMatchedTokensAreStillTheIndexsMatch() {
    assertThat(observations.isNoop()).as("the gateway's observation registry").isFalse();
    assertThat(engine.toString()).as("the starter's observed engine").startsWith("observed ");

    GatewayMatchedTokensLogTest.assertTheSecondLineLogsTheIndexsMatch(
        GatewayMatchedTokensLogTest.logLinesOfTwoRequests(filter));
  }
}
