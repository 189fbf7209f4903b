package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/** The idle timeout counts silence between chunks, not the body's length. */
class IdleTimeoutTest {

  @Test
  void aBodyLongerThanTheTimeoutButNeverSilentThatLongCompletes() {
    // 1 s against chunks 20 ms apart: a stall of the loaded host that delays one chunk by a few
    // hundred ms (a 300 ms timeout was that close) is not silence at this timeout
    IdleTimeout idle = new IdleTimeout(Duration.ofSeconds(1), Schedulers.parallel());
    List<Long> got =
        idle.watch(Flux.interval(Duration.ofMillis(20)).take(75)) // ~1.5 s in all
            .doOnNext(x -> idle.touch())
            .collectList()
            .block(Duration.ofSeconds(20));
    assertThat(got).hasSize(75);
  }

  @Test
  void silenceAfterAChunkFailsTheBodyAndCancelsIt() {
    IdleTimeout idle = new IdleTimeout(Duration.ofMillis(150), Schedulers.parallel());
    AtomicBoolean cancelled = new AtomicBoolean();
    Flux<String> stalls =
        Flux.concat(Mono.just("first"), Mono.<String>never()).doOnCancel(() -> cancelled.set(true));
    long t0 = System.nanoTime();
    assertThatThrownBy(
            () ->
                idle.watch(stalls)
                    .doOnNext(x -> idle.touch())
                    .collectList()
                    .block(Duration.ofSeconds(10)))
        .hasCauseInstanceOf(TimeoutException.class);
    assertThat(System.nanoTime() - t0).isGreaterThanOrEqualTo(Duration.ofMillis(150).toNanos());
    assertThat(cancelled).isTrue();
  }

  /**
   * A reader that asks for nothing more holds the body back (its backpressure): the silence that
   * follows is the reader's, and the body ends with a {@link IdleTimeout.ClientStalledException}.
   */
  @Test
  void silenceWhileTheReaderAsksForNothingIsTheReaders() throws InterruptedException {
    IdleTimeout idle = new IdleTimeout(Duration.ofMillis(150), Schedulers.parallel());
    AtomicBoolean cancelled = new AtomicBoolean();
    java.util.concurrent.atomic.AtomicReference<Throwable> error =
        new java.util.concurrent.atomic.AtomicReference<>();
    java.util.concurrent.CountDownLatch ended = new java.util.concurrent.CountDownLatch(1);
    Flux<Integer> plenty = Flux.range(1, 1000).doOnCancel(() -> cancelled.set(true));
    idle.watch(plenty)
        .doOnNext(x -> idle.touch())
        .transform(idle::demandOf)
        .subscribe(
            new reactor.core.publisher.BaseSubscriber<Integer>() {
              @Override
              protected void hookOnSubscribe(org.reactivestreams.Subscription s) {
                s.request(3); // and never more: a client that stopped reading
              }

              @Override
              protected void hookOnError(Throwable e) {
                error.set(e);
                ended.countDown();
              }

              @Override
              protected void hookOnComplete() {
                ended.countDown();
              }
            });
    assertThat(ended.await(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
    assertThat(error.get()).isInstanceOf(IdleTimeout.ClientStalledException.class);
    assertThat(cancelled).isTrue();
  }

  /** A reader still asking when the body falls silent: the silence is the body's. */
  @Test
  void silenceWhileTheReaderAsksIsTheBodys() {
    IdleTimeout idle = new IdleTimeout(Duration.ofMillis(150), Schedulers.parallel());
    Flux<String> stalls = Flux.concat(Mono.just("first"), Mono.<String>never());
    assertThatThrownBy(
            () ->
                idle.watch(stalls)
                    .doOnNext(x -> idle.touch())
                    .transform(idle::demandOf)
                    .limitRate(2)
                    .collectList()
                    .block(Duration.ofSeconds(10)))
        .hasCauseInstanceOf(TimeoutException.class);
  }

  @Test
  void aBodyThatEndsInTimeNeverFailsLater() throws InterruptedException {
    IdleTimeout idle = new IdleTimeout(Duration.ofMillis(100), Schedulers.parallel());
    AtomicBoolean failed = new AtomicBoolean();
    assertThat(
            idle.watch(Flux.just(1, 2, 3))
                .doOnError(e -> failed.set(true))
                .collectList()
                .block(Duration.ofSeconds(5)))
        .containsExactly(1, 2, 3);
    Thread.sleep(250); // the check was cancelled with the body: nothing fires afterwards
    assertThat(failed).isFalse();
  }

  @Test
  void theTimeoutMustBePositive() {
    assertThatThrownBy(() -> new IdleTimeout(Duration.ZERO, Schedulers.parallel()))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
