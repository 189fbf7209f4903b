/**
 * The decision rules of other routers, published as {@link dev.prefixrouter.api.spi.Scorer}s so
 * that our scorer can be compared against them on identical arrivals: {@link RoundRobin}, {@link
 * LeastRequest}, {@link PowerOfTwo}, {@link ConsistentHash}, {@link SglangCacheAware}, {@link
 * DynamoKv}, {@link LlmdWeighted} and {@link GatewayEstTtft}. Each class's javadoc states the rule
 * it implements and the system it comes from; {@link dev.prefixrouter.scoring.Policies#byName}
 * builds each with its published defaults.
 *
 * <p>Where a rule needs state the library keeps elsewhere, the shared parts are used: prefix
 * matches come from the engine's {@code PrefixIndex}, loads from the router's own in-flight counts,
 * queues and KV usage from host load reports. Every scorer here is thread-safe, allocates nothing
 * per candidate unless stated, and costs O(n log n) per {@code score} in the number of candidates
 * (a sort by cost).
 */
@NullMarked
package dev.prefixrouter.scoring.anchors;

import org.jspecify.annotations.NullMarked;
