/**
 * An OpenAI-compatible gateway on Spring Cloud Gateway (server WebFlux) that asks prefix-router's
 * {@link dev.prefixrouter.api.RoutingEngine} which backend serves each request.
 */
@NullMarked
package dev.prefixrouter.gateway;

import org.jspecify.annotations.NullMarked;
