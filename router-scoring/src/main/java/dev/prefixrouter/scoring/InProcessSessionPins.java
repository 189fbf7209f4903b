package dev.prefixrouter.scoring;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Ticker;
import dev.prefixrouter.api.spi.SessionPins;
import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The default {@link SessionPins}: a Caffeine cache in this process, each pin expiring {@code ttl}
 * after its last use, at most {@code maxSessions} pins (beyond that Caffeine's size eviction,
 * W-TinyLFU, drops the rarely and least recently used first). Maintenance runs on the calling
 * (routing) threads, amortized. Thread-safe; {@link #backendOf} is one cache read, {@link #pin} one
 * read and, when the pin changes, one write; {@link #forgetBackend} walks the pins.
 */
public final class InProcessSessionPins implements SessionPins {
  private final Cache<String, String> pins;

  private InProcessSessionPins(Duration ttl, long maxSessions, Ticker ticker) {
    this.pins = cache(ttl, maxSessions, ticker);
  }

  /**
   * A per-session cache as the pins use (and the scorer's session terms): entries expire {@code
   * ttl} after their last use, at most {@code maxSessions} (at least 1) held, maintenance on the
   * calling threads.
   */
  static <V> Cache<String, V> cache(Duration ttl, long maxSessions) {
    return cache(ttl, maxSessions, Ticker.systemTicker());
  }

  private static <V> Cache<String, V> cache(Duration ttl, long maxSessions, Ticker ticker) {
    return Caffeine.newBuilder()
        .maximumSize(Math.max(1, maxSessions))
        .expireAfterAccess(ttl)
        .ticker(ticker)
        .executor(Runnable::run) // maintenance on the routing threads, amortized
        .build();
  }

  /**
   * Pins idle for {@code ttl} (in (0, 365 days]) expire; at most {@code maxSessions} (in [1, 1e8])
   * are held.
   */
  public static InProcessSessionPins create(Duration ttl, long maxSessions) {
    return create(ttl, maxSessions, Ticker.systemTicker());
  }

  /** As {@link #create(Duration, long)}, timed by {@code ticker} (tests). */
  static InProcessSessionPins create(Duration ttl, long maxSessions, Ticker ticker) {
    Durations.positiveAtMost("sessionTtl", ttl, Duration.ofDays(365));
    if (maxSessions < 1 || maxSessions > 100_000_000) {
      throw new IllegalArgumentException("maxSessions must be in [1, 1e8], was " + maxSessions);
    }
    return new InProcessSessionPins(ttl, maxSessions, Objects.requireNonNull(ticker, "ticker"));
  }

  @Override
  public @Nullable String backendOf(String sessionKey) {
    return pins.getIfPresent(sessionKey);
  }

  /**
   * A pin to the backend it already names is a cache read (which renews its expiry as a write
   * would, the expiry being after access): a session's every request pins it, and most go where it
   * was.
   */
  @Override
  public void pin(String sessionKey, String backendId) {
    Objects.requireNonNull(sessionKey, "sessionKey");
    Objects.requireNonNull(backendId, "backendId");
    if (!backendId.equals(pins.getIfPresent(sessionKey))) {
      pins.put(sessionKey, backendId);
    }
  }

  @Override
  public void forgetBackend(String backendId) {
    pins.asMap().values().removeIf(backendId::equals);
  }

  @Override
  public long size() {
    return pins.estimatedSize();
  }
}
