package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.client.HttpClient;
import reactor.netty.http.server.HttpServer;
import reactor.netty.resources.ConnectionProvider;
import reactor.netty.resources.LoopResources;

/**
 * {@link LoopAffinityConnectionProvider}: a pool per event loop (the shared one elsewhere), and
 * with Reactor Netty's client on those loops, every request made from a loop gets a connection of
 * that loop, which a single shared pool does not guarantee.
 */
class LoopAffinityConnectionProviderTest {
  private final LoopResources loops = LoopResources.create("affinity-test", 2, true);
  private final List<ConnectionProvider> made = new ArrayList<>();
  private DisposableServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.disposeNow();
    }
    made.forEach(ConnectionProvider::dispose);
    loops.disposeLater(Duration.ZERO, Duration.ofSeconds(2)).block();
  }

  private ConnectionProvider pool() {
    ConnectionProvider p = ConnectionProvider.builder("t" + made.size()).maxConnections(16).build();
    made.add(p);
    return p;
  }

  private static <T> T on(EventLoop loop, Callable<T> task) throws Exception {
    return loop.submit(task).get(20, TimeUnit.SECONDS); // generous: a loaded host stalls
  }

  @Test
  void aPoolPerEventLoopAndOneSharedElsewhere() throws Exception {
    LoopAffinityConnectionProvider p = new LoopAffinityConnectionProvider(this::pool);
    EventLoopGroup group = loops.onClient(true);
    EventLoop a = group.next();
    EventLoop b = group.next();
    assertThat(a).isNotSameAs(b);

    ConnectionProvider shared = p.pool();
    assertThat(LoopAffinityConnectionProvider.onEventLoop()).isFalse();
    assertThat(shared).isSameAs(made.get(0));
    ConnectionProvider onA = on(a, p::pool);
    assertThat(onA).isNotSameAs(shared);
    assertThat(on(a, p::pool)).isSameAs(onA);
    ConnectionProvider onB = on(b, p::pool);
    assertThat(onB).isNotSameAs(shared).isNotSameAs(onA);
    assertThat(p.pools()).isEqualTo(3);
    assertThat(p.pool()).isSameAs(shared);

    p.dispose();
    assertThat(p.isDisposed()).isTrue();
    assertThat(made).allSatisfy(c -> assertThat(c.isDisposed()).isTrue());
  }

  @Test
  void requestsFromALoopUseConnectionsOfThatLoop() throws Exception {
    server =
        HttpServer.create()
            .host("127.0.0.1")
            .port(0)
            .handle((req, res) -> res.sendString(Mono.just("ok")))
            .bindNow();
    LoopAffinityConnectionProvider p = new LoopAffinityConnectionProvider(this::pool);
    HttpClient client =
        HttpClient.create(p).runOn(loops).baseUrl("http://127.0.0.1:" + server.port());
    EventLoopGroup group = loops.onClient(true);
    EventLoop a = group.next();
    EventLoop b = group.next();
    // alternate the loops, so a shared pool would hand one loop's idle connection to the other
    for (int i = 0; i < 20; i++) {
      EventLoop from = i % 2 == 0 ? a : b;
      EventLoop served =
          on(
                  from,
                  () ->
                      client
                          .get()
                          .uri("/")
                          .responseConnection(
                              (res, conn) ->
                                  conn.inbound()
                                      .receive()
                                      .then(Mono.just(conn.channel().eventLoop())))
                          .next()
                          .toFuture())
              .get(20, TimeUnit.SECONDS);
      assertThat(served).as("request %d", i).isSameAs(from);
    }
    assertThat(p.pools()).isEqualTo(3);
  }
}
