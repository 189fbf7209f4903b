package dev.prefixrouter.scoring;

import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.HealthState;
import java.time.Duration;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.jetbrains.lincheck.datastructures.StressOptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Lincheck linearizability checks of the lock-free token bucket (acquire, true-up, read, with a
 * clock that only moves forward per operation) and of the circuit breaker.
 */
@Tag("stress")
class ConcurrencyLincheckTest {
  private static final dev.prefixrouter.api.Backend B = dev.prefixrouter.api.Backend.of("b", "m");

  /**
   * The lock-free bucket itself: 10 tokens refilling 1 token per ms; operations at fixed times
   * (refill is covered by the property tests; here the CAS protocol is what is checked).
   */
  @Param(name = "tokens", gen = IntGen.class, conf = "0:6")
  public static class BucketTest {
    private final TokenBucket bucket = new TokenBucket(10, 1, 1_000_000, 0);

    @Operation
    public long tryTake(@Param(name = "tokens") int tokens) {
      return bucket.tryTake(tokens, 0);
    }

    @Operation
    public void refund(@Param(name = "tokens") int tokens) {
      bucket.adjust(-tokens, 0);
    }

    @Operation
    public void charge(@Param(name = "tokens") int tokens) {
      bucket.adjust(tokens, 0);
    }

    @Operation
    public long available() {
      return bucket.available(0);
    }
  }

  /** The same through the per-tenant facade (Caffeine inside: stress mode only). */
  @Param(name = "tokens", gen = IntGen.class, conf = "0:6")
  public static class TenantBucketsTest {
    private final TenantTokenBuckets buckets =
        TenantTokenBuckets.builder()
            .defaultQuota(new Quota(10, 1, Duration.ofMillis(1), 0))
            .build();

    @Operation
    public boolean tryAcquire(@Param(name = "tokens") int tokens) {
      return buckets.tryAcquire("t", tokens, 0).granted();
    }

    @Operation
    public void adjust(@Param(name = "tokens") int tokens) {
      buckets.adjust("t", tokens - 3, 0);
    }

    @Operation
    public long available() {
      return buckets.available("t", 0);
    }
  }

  /** A breaker on slot 0: 2 consecutive failures open it; cooldown 10 ticks; 1 probe. */
  @Param(name = "time", gen = IntGen.class, conf = "0:30")
  public static class BreakerTest {
    private final CircuitBreakers breakers =
        CircuitBreakers.builder()
            .consecutiveFailures(2)
            .windowSize(4)
            .minimumCalls(4)
            .cooldown(Duration.ofNanos(10))
            .halfOpenProbes(1)
            .build();

    public BreakerTest() {
      breakers.addBackend(0, B);
    }

    @Operation
    public void failure(@Param(name = "time") int time) {
      breakers.onFailure(0, Failure.of(Failure.Kind.CONNECT), time);
    }

    @Operation
    public void success(@Param(name = "time") int time) {
      breakers.onSuccess(0, time);
    }

    @Operation
    public boolean tryAcquire(@Param(name = "time") int time) {
      return breakers.tryAcquire(0, time);
    }

    @Operation
    public HealthState state(@Param(name = "time") int time) {
      return breakers.state(0, time);
    }
  }

  @Test
  void bucketIsLinearizable() {
    new StressOptions()
        .iterations(15)
        .invocationsPerIteration(1_000)
        .threads(2)
        .actorsPerThread(3)
        .check(BucketTest.class);
    new ModelCheckingOptions()
        .iterations(10)
        .invocationsPerIteration(300)
        .threads(2)
        .actorsPerThread(2)
        .check(BucketTest.class);
    new StressOptions()
        .iterations(10)
        .invocationsPerIteration(1_000)
        .threads(2)
        .actorsPerThread(3)
        .check(TenantBucketsTest.class);
  }

  @Test
  void breakerIsLinearizable() {
    new StressOptions()
        .iterations(15)
        .invocationsPerIteration(1_000)
        .threads(2)
        .actorsPerThread(3)
        .check(BreakerTest.class);
    new ModelCheckingOptions()
        .iterations(10)
        .invocationsPerIteration(300)
        .threads(2)
        .actorsPerThread(2)
        .check(BreakerTest.class);
  }
}
