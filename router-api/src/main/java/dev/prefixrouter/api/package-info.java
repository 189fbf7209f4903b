/**
 * The contracts of prefix-router: {@link dev.prefixrouter.api.RoutingEngine} and its builder, the
 * request, decision and backend value types, the lease a caller reports outcomes on, and the
 * inspection snapshot.
 *
 * <p>Every type here is either an immutable value (records) or documented as thread-safe.
 */
@NullMarked
package dev.prefixrouter.api;

import org.jspecify.annotations.NullMarked;
