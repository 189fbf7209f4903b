package dev.prefixrouter.redis;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.util.List;
import java.util.UUID;

/**
 * The shared Redis at 127.0.0.1:6379 for tests: a unique key prefix per test, and only this test's
 * keys are deleted afterwards (never a flush).
 */
final class SharedRedis implements AutoCloseable {
  static final String URI = "redis://127.0.0.1:6379";

  final String prefix = "prefixrouter-test:" + UUID.randomUUID() + ":";
  private final RedisClient client = RedisClient.create(URI);
  private final StatefulRedisConnection<String, String> connection = client.connect();

  RedisCommands<String, String> commands() {
    return connection.sync();
  }

  /** Keys under this test's prefix. */
  List<String> keys() {
    return commands().keys(prefix + "*");
  }

  @Override
  public void close() {
    List<String> keys = keys();
    if (!keys.isEmpty()) {
      commands().del(keys.toArray(String[]::new));
    }
    connection.close();
    client.shutdown();
  }
}
