package dev.prefixrouter.gateway;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
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
 * <p>One instance per body, subscribed once. {@link #touch()} may be called from any thread.
 */
final class IdleTimeout {
  private final long timeoutNanos;
  private final Scheduler scheduler;
  private volatile long lastNanos;
  private volatile boolean fired;
  private volatile boolean cancelled;
  private volatile @Nullable Disposable task;

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
   * from subscription, then from each {@link #touch()}); the body itself is cancelled then.
   */
  <T> Flux<T> watch(Flux<T> body) {
    return body.takeUntilOther(expiry())
        .concatWith(
            Mono.defer(
                () ->
                    fired
                        ? Mono.error(
                            new TimeoutException(
                                "no data for "
                                    + TimeUnit.NANOSECONDS.toMillis(timeoutNanos)
                                    + " ms"))
                        : Mono.empty()));
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
