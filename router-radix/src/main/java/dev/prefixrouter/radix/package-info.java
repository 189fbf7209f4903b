/**
 * Block hashing ({@link dev.prefixrouter.radix.BlockHashers}) and the concurrent prefix index
 * ({@link dev.prefixrouter.radix.RadixPrefixIndex}) with its per-backend LRU mirror and KV-event
 * ingestion.
 */
@NullMarked
package dev.prefixrouter.radix;

import org.jspecify.annotations.NullMarked;
