/**
 * Spring Boot 4 auto-configuration for prefix-router: a {@link dev.prefixrouter.api.RoutingEngine}
 * bean built from {@code prefix-router.*} properties with the default parts, overridable piece by
 * piece.
 */
@NullMarked
package dev.prefixrouter.spring;

import org.jspecify.annotations.NullMarked;
