package dev.prefixrouter.gateway;

import io.netty.resolver.AddressResolverGroup;
import io.netty.util.concurrent.FastThreadLocalThread;
import java.net.SocketAddress;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.NonBlocking;
import reactor.netty.Connection;
import reactor.netty.ConnectionObserver;
import reactor.netty.resources.ConnectionProvider;
import reactor.netty.transport.TransportConfig;

/**
 * A connection pool per event loop: a request that the gateway forwards from an event loop takes
 * its upstream connection from that loop's own pool, and a new connection is opened on that loop
 * (Reactor Netty's client loops are colocated with the server's), so both hops of a request run on
 * one thread. With one shared pool, a connection opened on another loop is reused as well, and then
 * the request is written on that loop and every response chunk hands off to the client's loop
 * through the loop's task queue, a wake-up of another thread for each chunk.
 *
 * <p>Threads that are not event loops (a failover that starts from a timer, a test's own thread)
 * share one further pool, as do loops beyond {@value #MAX_POOLS} (not expected: Reactor Netty runs
 * one loop per core by default). Every pool is made by the same factory, so each has the configured
 * pool's settings; with a bounded pool ({@code max-connections}) the bound holds per pool, so this
 * provider is used only for an elastic pool (Spring Cloud Gateway's default).
 *
 * <p>Cost of {@link #acquire}: one {@link ThreadLocal} read on top of the pool's own. Thread-safe.
 */
final class LoopAffinityConnectionProvider implements ConnectionProvider {
  /** Most pools (event loops plus the shared one). */
  static final int MAX_POOLS = 256;

  private final Supplier<ConnectionProvider> factory;
  private final ConnectionProvider shared;
  private final List<ConnectionProvider> all = new CopyOnWriteArrayList<>();
  private final ThreadLocal<@Nullable ConnectionProvider> mine = new ThreadLocal<>();
  private volatile boolean disposed;

  /**
   * @param factory makes one pool (called once for the shared pool and once per event loop)
   */
  LoopAffinityConnectionProvider(Supplier<ConnectionProvider> factory) {
    this.factory = Objects.requireNonNull(factory, "factory");
    this.shared = Objects.requireNonNull(factory.get(), "factory made null");
    all.add(shared);
  }

  /** Whether the calling thread is an event loop (Netty's thread type and Reactor's marker). */
  static boolean onEventLoop() {
    Thread t = Thread.currentThread();
    return t instanceof FastThreadLocalThread && t instanceof NonBlocking;
  }

  /** The pool of the calling thread: its own on an event loop, else the shared one. */
  ConnectionProvider pool() {
    ConnectionProvider p = mine.get();
    if (p != null) {
      return p;
    }
    if (!onEventLoop() || disposed) {
      return shared;
    }
    synchronized (all) {
      if (all.size() >= MAX_POOLS) {
        p = shared;
      } else {
        p = Objects.requireNonNull(factory.get(), "factory made null");
        all.add(p);
      }
    }
    mine.set(p);
    return p;
  }

  /** The pools made so far (the shared one first). */
  int pools() {
    return all.size();
  }

  @Override
  public Mono<? extends Connection> acquire(
      TransportConfig config,
      ConnectionObserver connectionObserver,
      @Nullable Supplier<? extends SocketAddress> remoteAddress,
      @Nullable AddressResolverGroup<?> resolverGroup) {
    return pool().acquire(config, connectionObserver, remoteAddress, resolverGroup);
  }

  @Override
  public void disposeWhen(SocketAddress address) {
    for (ConnectionProvider p : all) {
      p.disposeWhen(address);
    }
  }

  @Override
  public void dispose() {
    disposed = true;
    for (ConnectionProvider p : all) {
      p.dispose();
    }
  }

  @Override
  public Mono<Void> disposeLater() {
    disposed = true;
    return Flux.fromIterable(all).flatMap(ConnectionProvider::disposeLater).then();
  }

  @Override
  public boolean isDisposed() {
    return disposed;
  }

  @Override
  public int maxConnections() {
    return shared.maxConnections();
  }

  @Override
  public @Nullable Map<SocketAddress, Integer> maxConnectionsPerHost() {
    return shared.maxConnectionsPerHost();
  }

  @Override
  public String name() {
    return shared.name();
  }
}
