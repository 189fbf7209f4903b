package dev.prefixrouter.redis;

import io.lettuce.core.RedisURI;
import java.time.Duration;
import java.util.Objects;
import java.util.UUID;

/**
 * The settings every Redis part of this module shares: where Redis is, the key prefix that makes a
 * fleet, this replica's id, the command timeout and the probe interval while Redis is down. Each
 * setter validates at once (the message names the setting, its range and the value) and returns the
 * part's own builder, so the calls chain in any order. Not thread-safe; not extensible outside this
 * package.
 *
 * @param <B> the part's builder
 */
public abstract class RedisPartBuilder<B extends RedisPartBuilder<B>> {
  final RedisURI uri;
  String keyPrefix = "prefixrouter:";
  String replicaId = UUID.randomUUID().toString();
  Duration commandTimeout = Duration.ofMillis(250);
  Duration retryInterval = Duration.ofSeconds(1);

  /**
   * @param uri the Redis, e.g. {@code redis://127.0.0.1:6379}
   * @throws IllegalArgumentException if {@code uri} is not a Redis URI
   */
  RedisPartBuilder(String uri) {
    this.uri = RedisURI.create(Objects.requireNonNull(uri, "uri"));
  }

  /** This builder as its own type. */
  abstract B self();

  /**
   * Prefix of every Redis key the part reads and writes, 1 to 128 characters; replicas that share a
   * prefix form one fleet. Default {@code prefixrouter:}.
   */
  public B keyPrefix(String prefix) {
    this.keyPrefix = Settings.keyPrefix(prefix);
    return self();
  }

  /**
   * This replica's id, 1 to 256 characters, unique in the fleet: its own announcements are skipped
   * and log lines name it. Default a random UUID.
   */
  public B replicaId(String id) {
    this.replicaId = Settings.replicaId(id);
    return self();
  }

  /** Timeout of one Redis command, in [1 ms, 10 s]; a timeout marks Redis down. Default 250 ms. */
  public B commandTimeout(Duration timeout) {
    this.commandTimeout = Settings.commandTimeout(timeout);
    return self();
  }

  /** How often Redis is probed while it is down, in [10 ms, 1 min]. Default 1 s. */
  public B retryInterval(Duration interval) {
    this.retryInterval = Settings.retryInterval(interval);
    return self();
  }
}
