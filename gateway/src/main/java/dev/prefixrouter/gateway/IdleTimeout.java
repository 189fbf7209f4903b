package dev.prefixrouter.gateway;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.scheduler.Scheduler;

/**
 * The idle timeout of one response body: the body fails with a {@link TimeoutException} once no
 * chunk has come for the timeout (silence between chunks, not the body's length). Unlike {@code
 * Flux.timeout(Duration)}, which cancels a timer and schedules a new one for every chunk, a chunk
 * here costs one {@link System#nanoTime()} and a volatile write ({@link #touch()}); one task per
 * timeout period checks the silence and, when a chunk came meanwhile, reschedules itself for the
 * rest. Resolution: the scheduler's; the timeout fires between {@code timeout} and {@code timeout}
 * plus the scheduler's delay after the last chunk.
 *
 * <p>Silence while the body's reader asks for nothing is the reader's, not the body's: a client
 * that stops reading stops the writes to it, and their backpressure stops the body's chunks. {@link
 * #demandOf} counts what the reader asked for and got; a timeout that finds nothing asked for (and
 * nothing asked for during the whole silence, since a request restarts it) ends the body with a
 * {@link ClientStalledException} instead.
 *
 * <p>One instance per body, subscribed once. {@link #touch()} may be called from any thread.
 */
final class IdleTimeout {
  private final long timeoutNanos;
  private final Scheduler scheduler;
  private volatile long lastNanos;
  private volatile boolean fired;
  private volatile boolean cancelled;
  private volatile @Nullable Disposable task;
  private volatile boolean stalled;

  // asked for by the reader and not yet given it (Long.MAX_VALUE: unbounded; -1: not counted, as
  // without demandOf, when a timeout is always the body's)
  private final AtomicLong demand = new AtomicLong(-1);

  /** The body's reader asked for nothing for the whole timeout: the silence was its own. */
  static final class ClientStalledException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    ClientStalledException(String message) {
      super(message, null, false, false);
    }
  }

  /**
   * @param timeout the longest silence, positive
   * @param scheduler where the checks run
   */
  IdleTimeout(Duration timeout, Scheduler scheduler) {
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("timeout must be positive, was " + timeout);
    }
    this.timeoutNanos = timeout.toNanos();
    this.scheduler = scheduler;
  }

  /**
   * {@code body} ending with a {@link TimeoutException} after {@code timeout} of silence (counted
   * from subscription, then from each {@link #touch()} and each request counted by {@link
   * #demandOf}), or with a {@link ClientStalledException} when the reader counted by {@link
   * #demandOf} had asked for nothing then; the body itself is cancelled either way.
   */
  <T> Flux<T> watch(Flux<T> body) {
    return body.takeUntilOther(expiry())
        .concatWith(
            Mono.defer(
                () -> {
                  if (!fired) {
                    return Mono.empty();
                  }
                  long ms = TimeUnit.NANOSECONDS.toMillis(timeoutNanos);
                  return Mono.error(
                      stalled
                          ? new ClientStalledException("the client read nothing for " + ms + " ms")
                          : new TimeoutException("no data for " + ms + " ms"));
                }));
  }

  /**
   * {@code out} (what the reader gets of the watched body, after any dropping of chunks) with its
   * reader's requests and the items it got counted: a request restarts the silence, and a timeout
   * while no item is asked for is the reader's ({@link ClientStalledException}).
   */
  <T> Flux<T> demandOf(Flux<T> out) {
    return out.doOnNext(x -> delivered()).doOnRequest(this::requested);
  }

  private void requested(long n) {
    demand.accumulateAndGet(
        n,
        (a, b) -> {
          long sum = Math.max(a, 0) + b;
          return sum < 0 ? Long.MAX_VALUE : sum;
        });
    touch();
  }

  private void delivered() {
    demand.updateAndGet(d -> d == Long.MAX_VALUE || d <= 0 ? d : d - 1);
  }

  /** A chunk came: the silence starts again. */
  void touch() {
    lastNanos = System.nanoTime();
  }

  /** Emits once the silence reaches the timeout; cancelled when the body ends first. */
  private Mono<Boolean> expiry() {
    return Mono.create(
        sink -> {
          lastNanos = System.nanoTime();
          sink.onCancel(this::stop);
          arm(sink, timeoutNanos);
        });
  }

  private void arm(MonoSink<Boolean> sink, long delayNanos) {
    Disposable d = scheduler.schedule(() -> check(sink), delayNanos, TimeUnit.NANOSECONDS);
    task = d;
    if (cancelled) {
      d.dispose();
    }
  }

  private void check(MonoSink<Boolean> sink) {
    if (cancelled) {
      return;
    }
    long idle = System.nanoTime() - lastNanos;
    if (idle >= timeoutNanos) {
      stalled = demand.get() == 0;
      fired = true;
      sink.success(Boolean.TRUE);
    } else {
      arm(sink, timeoutNanos - idle);
    }
  }

  private void stop() {
    cancelled = true;
    Disposable d = task;
    if (d != null) {
      d.dispose();
    }
  }
}
