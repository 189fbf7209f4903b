/**
 * Shared state for several gateway replicas through Redis (Lettuce). Today: {@link
 * dev.prefixrouter.redis.RedisTenantLimiter}, tenant quotas that hold for the fleet of replicas.
 * Routing never waits on Redis: every Redis call runs on the module's own worker thread, and a
 * replica that cannot reach Redis falls back to local state.
 */
@NullMarked
package dev.prefixrouter.redis;

import org.jspecify.annotations.NullMarked;
