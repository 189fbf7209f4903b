package dev.prefixrouter.redis;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.RedisCodec;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * One Lettuce client of this module's classes: created on first use (never on class load), two I/O
 * and two computation threads, reconnect backoff from 10 ms up to the retry interval, commands
 * rejected (not queued) while disconnected so that no caller waits on a dead link, and a timeout on
 * every command. Thread-safe.
 */
final class RedisLink implements AutoCloseable {
  private final RedisURI uri;
  private final Duration retryInterval;
  private @Nullable ClientResources resources;
  private @Nullable RedisClient client;
  private boolean closed;

  RedisLink(RedisURI uri, Duration retryInterval) {
    this.uri = uri;
    this.retryInterval = retryInterval;
  }

  /**
   * A new connection whose commands time out after {@code timeout}.
   *
   * @throws io.lettuce.core.RedisException if Redis cannot be reached, or the link is closed
   */
  synchronized <K, V> StatefulRedisConnection<K, V> connect(
      RedisCodec<K, V> codec, Duration timeout) {
    if (closed) {
      throw new io.lettuce.core.RedisException("link to " + uri.toURI() + " closed");
    }
    RedisClient rc = client;
    if (rc == null) {
      ClientResources res =
          DefaultClientResources.builder()
              .ioThreadPoolSize(2)
              .computationThreadPoolSize(2)
              .reconnectDelay(
                  Delay.exponential(Duration.ofMillis(10), retryInterval, 2, TimeUnit.MILLISECONDS))
              .build();
      resources = res;
      rc = RedisClient.create(res, uri);
      rc.setOptions(
          ClientOptions.builder()
              .autoReconnect(true)
              .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
              .timeoutOptions(TimeoutOptions.enabled(timeout))
              .build());
      client = rc;
    }
    StatefulRedisConnection<K, V> c = rc.connect(codec);
    c.setTimeout(timeout);
    return c;
  }

  /** The address, for log lines (no password). */
  String address() {
    return uri.toURI().toString();
  }

  /** Shuts the client and its threads down (at most about a second). */
  @Override
  public synchronized void close() {
    closed = true;
    RedisClient rc = client;
    if (rc != null) {
      rc.shutdown(Duration.ZERO, Duration.ofSeconds(1));
    }
    ClientResources res = resources;
    if (res != null) {
      res.shutdown(0, 1, TimeUnit.SECONDS);
    }
  }

  /** Orders Redis stream ids ({@code ms-seq}) as Redis does. */
  static int compareStreamIds(String a, String b) {
    int da = a.indexOf('-');
    int db = b.indexOf('-');
    int ms = Long.compare(Long.parseLong(a.substring(0, da)), Long.parseLong(b.substring(0, db)));
    return ms != 0
        ? ms
        : Long.compare(Long.parseLong(a.substring(da + 1)), Long.parseLong(b.substring(db + 1)));
  }
}
