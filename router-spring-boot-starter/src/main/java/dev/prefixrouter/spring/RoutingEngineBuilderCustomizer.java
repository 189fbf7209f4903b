package dev.prefixrouter.spring;

import dev.prefixrouter.api.RoutingEngineBuilder;

/**
 * Adjusts the {@link RoutingEngineBuilder} after the properties are applied and before the engine
 * is built. Precedence: defaults &lt; properties &lt; customizers (in {@code @Order}) &lt; a user's
 * own {@code RoutingEngine} bean, which replaces everything.
 */
@FunctionalInterface
public interface RoutingEngineBuilderCustomizer {
  void customize(RoutingEngineBuilder builder);
}
