package dev.prefixrouter.scoring;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.HealthState;
import dev.prefixrouter.api.spi.HealthPolicy;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.jspecify.annotations.Nullable;

/**
 * One circuit breaker per backend ({@link HealthPolicy}).
 *
 * <ul>
 *   <li>CLOSED → OPEN after {@link Builder#consecutiveFailures} consecutive failures, or when the
 *       failure rate over the last {@link Builder#windowSize} outcomes reaches {@link
 *       Builder#failureRate} (once at least {@link Builder#minimumCalls} are in the window).
 *   <li>OPEN → HALF_OPEN once {@link Builder#cooldown} has passed (read lazily).
 *   <li>HALF_OPEN admits at most {@link Builder#halfOpenProbes} requests; that many successes close
 *       the breaker, any failure re-opens it. Probes whose outcome never arrives are re-issued
 *       after another cooldown, so a lost lease cannot wedge a breaker half-open.
 * </ul>
 *
 * <p>Fed by the engine: a first token or a completion is a success; connect errors, timeouts, 5xx
 * and engine errors are failures (client errors and cancellations are not). Lock-free: each breaker
 * is an immutable state swapped by CAS; O(1) per call. Thread-safe.
 *
 * <pre>{@code
 * RoutingEngine.builder().health(CircuitBreakers.builder().consecutiveFailures(3).build())
 * }</pre>
 */
public final class CircuitBreakers implements HealthPolicy {

  /**
   * Immutable breaker state. {@code window} holds the last {@code count} outcomes as bits (1 =
   * failure), newest in bit 0.
   */
  record State(
      HealthState kind,
      int consecutive,
      long window,
      int count,
      long openedAt,
      int probesIssued,
      int probeSuccesses,
      long lastProbeAt) {
    static final State CLOSED = new State(HealthState.CLOSED, 0, 0, 0, 0, 0, 0, 0);
  }

  private final int consecutiveFailures;
  private final double failureRate;
  private final int windowSize;
  private final int minimumCalls;
  private final long cooldownNanos;
  private final int probes;
  private final AtomicReferenceArray<State> states;

  private CircuitBreakers(Builder b) {
    this.consecutiveFailures = b.consecutiveFailures;
    this.failureRate = b.failureRate;
    this.windowSize = b.windowSize;
    this.minimumCalls = b.minimumCalls;
    this.cooldownNanos = b.cooldown.toNanos();
    this.probes = b.halfOpenProbes;
    this.states = new AtomicReferenceArray<>(b.maxBackends);
  }

  /** Defaults: 5 consecutive failures or 50 % of the last 20 (min 10), 10 s cooldown, 3 probes. */
  public static CircuitBreakers defaults() {
    return builder().build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * Checks that the breakers cover the engine's slots.
   *
   * @throws IllegalArgumentException if {@code maxBackends} exceeds {@link Builder#maxBackends}
   */
  @Override
  public void start(int maxBackends) {
    if (maxBackends > states.length()) {
      throw new IllegalArgumentException(
          "health: CircuitBreakers built for maxBackends "
              + states.length()
              + " cannot serve an engine with maxBackends "
              + maxBackends
              + "; leave CircuitBreakers.Builder.maxBackends unset or raise it");
    }
  }

  @Override
  public void addBackend(int slot, Backend backend) {
    states.set(slot, State.CLOSED);
  }

  @Override
  public void removeBackend(int slot) {
    states.set(slot, null);
  }

  @Override
  public HealthState state(int slot, long nowNanos) {
    State s = states.get(slot);
    if (s == null) {
      return HealthState.CLOSED;
    }
    if (s.kind == HealthState.OPEN && nowNanos - s.openedAt >= cooldownNanos) {
      return HealthState.HALF_OPEN;
    }
    return s.kind;
  }

  @Override
  public boolean tryAcquire(int slot, long nowNanos) {
    while (true) {
      State s = states.get(slot);
      if (s == null || s.kind == HealthState.CLOSED) {
        return true;
      }
      State next;
      if (s.kind == HealthState.OPEN) {
        if (nowNanos - s.openedAt < cooldownNanos) {
          return false;
        }
        next = new State(HealthState.HALF_OPEN, 0, 0, 0, s.openedAt, 1, 0, nowNanos);
      } else {
        boolean stale = nowNanos - s.lastProbeAt >= cooldownNanos;
        if (s.probesIssued >= probes && !stale) {
          return false;
        }
        int issued = stale ? s.probeSuccesses + 1 : s.probesIssued + 1;
        next =
            new State(
                HealthState.HALF_OPEN, 0, 0, 0, s.openedAt, issued, s.probeSuccesses, nowNanos);
      }
      if (states.compareAndSet(slot, s, next)) {
        return true;
      }
    }
  }

  @Override
  public void onSuccess(int slot, long nowNanos) {
    success(slot, false, 0);
  }

  /**
   * {@inheritDoc} A half-open breaker counts only successes of requests placed since it opened: one
   * placed while it was closed (a long request that started before the failures) is not a probe,
   * and its late success does not close the breaker before any probe has answered.
   */
  @Override
  public void onSuccess(int slot, long nowNanos, long placedNanos) {
    success(slot, true, placedNanos);
  }

  private void success(int slot, boolean placedKnown, long placedNanos) {
    while (true) {
      State s = states.get(slot);
      if (s == null || s.kind == HealthState.OPEN) {
        return; // a late success from before the breaker opened
      }
      if (placedKnown && s.kind == HealthState.HALF_OPEN && placedNanos - s.openedAt <= 0) {
        return; // placed by the time it opened (a probe comes a cooldown later): not a probe
      }
      State next;
      if (s.kind == HealthState.HALF_OPEN) {
        int ok = s.probeSuccesses + 1;
        next =
            ok >= probes
                ? State.CLOSED
                : new State(
                    HealthState.HALF_OPEN,
                    0,
                    0,
                    0,
                    s.openedAt,
                    Math.max(s.probesIssued, ok),
                    ok,
                    s.lastProbeAt);
      } else {
        if (s.consecutive == 0 && s.window == 0 && s.count == windowSize) {
          // a full window of successes: another one changes nothing. No new state and no CAS,
          // so a healthy fleet's breakers are read-only (every route reads all of them; a write
          // per route would bounce their shared cache line between the routing threads' cores)
          return;
        }
        next = push(s, false, 0);
      }
      if (states.compareAndSet(slot, s, next)) {
        return;
      }
    }
  }

  /**
   * {@inheritDoc} Every request a half-open breaker let through since it opened was a probe: one
   * that ended without an outcome gives its probe back (while more are out than have succeeded).
   */
  @Override
  public void onNoOutcome(int slot, long nowNanos, long placedNanos) {
    while (true) {
      State s = states.get(slot);
      if (s == null
          || s.kind != HealthState.HALF_OPEN
          || placedNanos - s.openedAt <= 0
          || s.probesIssued <= s.probeSuccesses) {
        return;
      }
      State next =
          new State(
              HealthState.HALF_OPEN,
              0,
              0,
              0,
              s.openedAt,
              s.probesIssued - 1,
              s.probeSuccesses,
              s.lastProbeAt);
      if (states.compareAndSet(slot, s, next)) {
        return;
      }
    }
  }

  /** The current state of a slot (for tests). */
  @Nullable State stateOf(int slot) {
    return states.get(slot);
  }

  @Override
  public void onFailure(int slot, Failure failure, long nowNanos) {
    Objects.requireNonNull(failure, "failure");
    if (!failure.countsAgainstBackend()) {
      return;
    }
    while (true) {
      State s = states.get(slot);
      if (s == null || s.kind == HealthState.OPEN) {
        return;
      }
      State next = s.kind == HealthState.HALF_OPEN ? open(nowNanos) : push(s, true, nowNanos);
      if (states.compareAndSet(slot, s, next)) {
        return;
      }
    }
  }

  private State push(State s, boolean failed, long now) {
    long mask = windowSize == 64 ? -1L : (1L << windowSize) - 1;
    long window = ((s.window << 1) | (failed ? 1 : 0)) & mask;
    int count = Math.min(windowSize, s.count + 1);
    int consecutive = failed ? s.consecutive + 1 : 0;
    if (failed) {
      int failures = Long.bitCount(window);
      if (consecutive >= consecutiveFailures
          || (count >= minimumCalls && failures >= failureRate * count)) {
        return open(now);
      }
    }
    return new State(HealthState.CLOSED, consecutive, window, count, 0, 0, 0, 0);
  }

  private static State open(long now) {
    return new State(HealthState.OPEN, 0, 0, 0, now, 0, 0, 0);
  }

  @Override
  public String toString() {
    return "CircuitBreakers[consecutive="
        + consecutiveFailures
        + ", rate="
        + failureRate
        + "/"
        + windowSize
        + ", cooldown="
        + Duration.ofNanos(cooldownNanos)
        + ", probes="
        + probes
        + "]";
  }

  /** Builder; setters validate at once. */
  public static final class Builder {
    private int consecutiveFailures = 5;
    private double failureRate = 0.5;
    private int windowSize = 20;
    private int minimumCalls = 10;
    private Duration cooldown = Duration.ofSeconds(10);
    private int halfOpenProbes = 3;
    private int maxBackends = 65_536;

    private Builder() {}

    public Builder consecutiveFailures(int n) {
      if (n < 1 || n > 1000) {
        throw new IllegalArgumentException("consecutiveFailures must be in [1, 1000], was " + n);
      }
      this.consecutiveFailures = n;
      return this;
    }

    /** Failure share of the window that opens the breaker, in (0, 1]. */
    public Builder failureRate(double rate) {
      if (!(rate > 0 && rate <= 1)) {
        throw new IllegalArgumentException("failureRate must be in (0, 1], was " + rate);
      }
      this.failureRate = rate;
      return this;
    }

    /** Outcomes in the rate window, [1, 64]. */
    public Builder windowSize(int n) {
      if (n < 1 || n > 64) {
        throw new IllegalArgumentException("windowSize must be in [1, 64], was " + n);
      }
      this.windowSize = n;
      return this;
    }

    public Builder minimumCalls(int n) {
      if (n < 1 || n > 64) {
        throw new IllegalArgumentException("minimumCalls must be in [1, 64], was " + n);
      }
      this.minimumCalls = n;
      return this;
    }

    /** Time an open breaker waits before half-open probes, in (0, 1 day]. */
    public Builder cooldown(Duration cooldown) {
      this.cooldown = Durations.positiveAtMost("cooldown", cooldown, Duration.ofDays(1));
      return this;
    }

    public Builder halfOpenProbes(int n) {
      if (n < 1 || n > 100) {
        throw new IllegalArgumentException("halfOpenProbes must be in [1, 100], was " + n);
      }
      this.halfOpenProbes = n;
      return this;
    }

    /**
     * Slots tracked (default 65536, every slot an engine can have); an engine with a larger
     * maxBackends refuses to build.
     */
    public Builder maxBackends(int n) {
      if (n < 1 || n > 65_536) {
        throw new IllegalArgumentException("maxBackends must be in [1, 65536], was " + n);
      }
      this.maxBackends = n;
      return this;
    }

    public CircuitBreakers build() {
      if (minimumCalls > windowSize) {
        throw new IllegalArgumentException(
            "minimumCalls (" + minimumCalls + ") must not exceed windowSize (" + windowSize + ")");
      }
      return new CircuitBreakers(this);
    }
  }
}
