/**
 * Service-provider interfaces the {@link dev.prefixrouter.api.RoutingEngine} pipeline is written
 * against. Each SPI states its call-site contract (who calls it, from which threads, how often) and
 * its cost budget on the hot path. Implementations must be thread-safe.
 *
 * <p>Backends are named to SPIs by a dense <em>slot</em> number in {@code [0, maxBackends)} that
 * the engine assigns when a backend is added. A slot is reused for a new backend only after {@code
 * removeBackend(slot)} has returned on every SPI, and no call for the old backend reaches an SPI
 * after that.
 */
@NullMarked
package dev.prefixrouter.api.spi;

import org.jspecify.annotations.NullMarked;
