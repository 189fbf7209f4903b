package dev.prefixrouter.api;

/**
 * An engine-neutral KV-cache event, as published by vLLM ({@code vllm/distributed/kv_events.py})
 * and SGLang. Hosts decode the engine's wire format (msgpack over ZMQ) into these and pass batches
 * to {@link RoutingEngine#applyKvEvents}.
 *
 * <p>Engine block hashes are opaque 64-bit patterns kept in a {@code long}: vLLM's unsigned 64-bit
 * values above {@link Long#MAX_VALUE} appear negative here. Convert with {@link EngineHashes}.
 */
public sealed interface KvEvent permits BlockStored, BlockRemoved, AllBlocksCleared {}
