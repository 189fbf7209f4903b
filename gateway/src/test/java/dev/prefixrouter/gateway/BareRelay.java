package dev.prefixrouter.gateway;

import reactor.netty.DisposableServer;
import reactor.netty.http.client.HttpClient;
import reactor.netty.http.server.HttpServer;
import reactor.netty.resources.ConnectionProvider;

/**
 * The least an HTTP relay on Reactor Netty does, for the latency baseline of the gateway
 * (benchmarks/README.md, "Gateway: what any hop costs on this machine"): every request is sent to
 * one fixed backend with its method, path and headers, its body streamed through, and the backend's
 * status, headers and body streamed back buffer by buffer (each flushed when no further buffer is
 * waiting, as Spring Cloud Gateway writes). No routing, parsing, filters, metrics or logs. The same
 * Netty and Reactor Netty as the gateway jar; upstream connections pooled without a bound (as
 * Spring Cloud Gateway's elastic pool), event loops as Reactor Netty's defaults or {@code
 * -Dreactor.netty.ioWorkerCount}.
 *
 * <pre>{@code
 * java -cp 'BOOT-INF/lib/*' gateway/src/test/java/dev/prefixrouter/gateway/BareRelay.java \
 *     PORT http://127.0.0.1:BACKEND_PORT
 * }</pre>
 *
 * (the class path: the gateway jar's libraries, {@code unzip gateway/target/gateway.jar
 * 'BOOT-INF/lib/*'}).
 */
final class BareRelay {
  private BareRelay() {}

  public static void main(String[] args) {
    int port = Integer.parseInt(args[0]);
    String backend = args[1];
    HttpClient client =
        HttpClient.create(
                ConnectionProvider.builder("bare-relay")
                    .maxConnections(10_000)
                    .pendingAcquireMaxCount(-1)
                    .build())
            .baseUrl(backend);
    DisposableServer server =
        HttpServer.create()
            .host("127.0.0.1")
            .port(port)
            .handle(
                (in, out) ->
                    client
                        .headers(h -> h.set(in.requestHeaders()))
                        .request(in.method())
                        .uri(in.uri())
                        .send(in.receive().retain())
                        .response(
                            (up, body) ->
                                out.status(up.status())
                                    .headers(up.responseHeaders())
                                    .send(body.retain())))
            .bindNow();
    System.out.println("bare relay on 127.0.0.1:" + port + " -> " + backend);
    server.onDispose().block();
  }
}
