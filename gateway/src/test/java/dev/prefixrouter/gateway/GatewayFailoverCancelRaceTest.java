package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.spi.Admission;
import dev.prefixrouter.api.spi.RoutingListener;
import dev.prefixrouter.api.spi.TenantLimiter;
import dev.prefixrouter.spring.BackendUrls;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiPredicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.cloud.gateway.filter.GatewayFilterChain;
import org.springframework.http.HttpStatus;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * A failover that races the client's cancel leaves no lease behind. The failover after a timeout
 * runs on the timer's thread and the one after a 5xx on the upstream's, and a cancel does not stop
 * either: the client goes away at the exact moment the race needs (a routing listener cancels the
 * client's subscription while the old lease fails or the new one is made), so the tests are
 * deterministic. Every lease must end, the backends' in-flight counts return to zero and the
 * tenant's tokens are all refunded (the new lease's request is never sent).
 */
class GatewayFailoverCancelRaceTest {
  private static final String HOOK = GatewayFailoverCancelRaceTest.class.getName();

  @AfterEach
  void resetHook() {
    Schedulers.resetOnScheduleHook(HOOK);
  }

  /** Takes and trues up tokens against one balance per test. */
  static final class Balance implements TenantLimiter {
    final AtomicLong taken = new AtomicLong();

    @Override
    public Admission tryAcquire(String tenant, long tokens, long nowNanos) {
      taken.addAndGet(tokens);
      return Admission.GRANTED;
    }

    @Override
    public void adjust(String tenant, long deltaTokens, long nowNanos) {
      taken.addAndGet(deltaTokens);
    }
  }

  /** The client: cancelled from the listener, on whatever thread the race happens. */
  static final class Client extends BaseSubscriber<Void> {
    final AtomicReference<Thread> cancelledOn = new AtomicReference<>();

    void leave() {
      cancelledOn.set(Thread.currentThread());
      cancel();
    }
  }

  /** The old lease fails for the timeout; the client leaves at that moment; no failover follows. */
  @Test
  void aClientThatLeavesAsTheHeaderTimeoutFailsItsLeaseGetsNoFailoverLease() throws Exception {
    Run run =
        new Run(
            (event, r) -> event.equals("failed") && r.attempt() == 0, (exchange) -> Mono.never());
    run.awaitTimerTask();
    run.assertEveryLeaseEnded();
  }

  /** The timeout's failover lease is made as the client leaves: it is ended, never sent. */
  @Test
  void aTimeoutFailoverLeaseMadeAsTheClientLeavesIsEnded() throws Exception {
    Run run =
        new Run(
            (event, r) -> event.equals("routed") && r.attempt() == 1, (exchange) -> Mono.never());
    run.awaitTimerTask();
    assertThat(run.routed).as("the failover lease was made").hasSize(2);
    run.assertEveryLeaseEnded();
  }

  /** A 5xx's failover lease is made as the client leaves: it is ended, never sent. */
  @Test
  void a5xxFailoverLeaseMadeAsTheClientLeavesIsEnded() throws Exception {
    Run run =
        new Run(
            (event, r) -> event.equals("routed") && r.attempt() == 1,
            exchange -> {
              exchange.getResponse().setStatusCode(HttpStatus.INTERNAL_SERVER_ERROR);
              return exchange.getResponse().writeWith(Flux.empty());
            });
    // all on this thread: the 5xx, the failover and the cancel happen within subscribe
    assertThat(run.routed).as("the failover lease was made").hasSize(2);
    run.assertEveryLeaseEnded();
  }

  /** One request through a filter on two backends, the client leaving when {@code leaveOn} says. */
  private static final class Run {
    final List<Routed> routed = new CopyOnWriteArrayList<>();
    final Client client = new Client();
    final CountDownLatch timerTaskDone = new CountDownLatch(1);
    final Balance balance = new Balance();
    final RoutingEngine engine;

    Run(
        BiPredicate<String, Routed> leaveOn,
        java.util.function.Function<ServerWebExchange, Mono<Void>> upstream)
        throws Exception {
      // the task the client left in has returned: whatever the race did is done
      Schedulers.onScheduleHook(
          HOOK,
          task ->
              () -> {
                try {
                  task.run();
                } finally {
                  if (client.cancelledOn.get() == Thread.currentThread()) {
                    timerTaskDone.countDown();
                  }
                }
              });
      RoutingListener listener =
          new RoutingListener() {
            @Override
            public void onRouted(Routed r) {
              routed.add(r);
              if (leaveOn.test("routed", r)) {
                client.leave();
              }
            }

            @Override
            public void onFailed(Routed r, Failure failure, boolean beforeFirstToken) {
              if (leaveOn.test("failed", r)) {
                client.leave();
              }
            }
          };
      engine =
          RoutingEngine.builder()
              .limiter(balance)
              .listener(listener)
              .backend(Backend.of("a", "m"))
              .backend(Backend.of("b", "m"))
              .build();
      BackendUrls urls = new BackendUrls();
      urls.put("a", "http://127.0.0.1:1");
      urls.put("b", "http://127.0.0.1:2");
      PrefixRouterGatewayProperties p = new PrefixRouterGatewayProperties();
      p.setResponseTimeout(Duration.ofMillis(50));
      PrefixRouterGatewayFilter filter =
          new PrefixRouterGatewayFilter(
              engine, urls, ApiKeys.of(List.of()), p, new GatewayMetrics(null));
      GatewayFilterChain chain = exchange -> Mono.defer(() -> upstream.apply(exchange));
      MockServerWebExchange exchange =
          MockServerWebExchange.from(
              MockServerHttpRequest.post("http://gw/v1/chat/completions")
                  .header("Content-Type", "application/json")
                  .body(
                      "{\"model\":\"m\",\"max_tokens\":100,"
                          + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"));
      filter.filter(exchange, chain).subscribe(client);
    }

    void awaitTimerTask() throws InterruptedException {
      assertThat(timerTaskDone.await(10, TimeUnit.SECONDS))
          .as("the client left on the timer's thread")
          .isTrue();
    }

    void assertEveryLeaseEnded() {
      assertThat(client.cancelledOn.get()).as("the client left").isNotNull();
      assertThat(routed)
          .allSatisfy(
              r ->
                  assertThat(r.lease().isEnded())
                      .as("lease of attempt %d ended", r.attempt())
                      .isTrue());
      assertThat(engine.inspect().inFlight()).as("in flight").isZero();
      assertThat(balance.taken.get()).as("tokens still taken from the tenant").isZero();
    }
  }
}
