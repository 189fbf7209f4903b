package dev.prefixrouter.redis;

import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.sync.RedisCommands;
import java.util.List;

/**
 * The fleet bucket of one tenant in Redis, changed only by one atomic Lua script: a hash {@code
 * {tokens, ts}} (tokens a double that may be negative while in debt, ts in microseconds) that
 * refills continuously up to the capacity. One call first applies an unconditional transfer
 * (positive: the replica's local debt is charged to the fleet, which may go into debt; negative:
 * unspent allowance is returned, never above capacity), then grants up to {@code want} tokens from
 * what is left. The key expires when the bucket would be full again (plus one second), so idle
 * tenants cost Redis nothing.
 *
 * <p>Time is Redis's own {@code TIME} unless the caller passes a clock (which must then be one
 * timeline for every replica). A clock that goes back never refills and never moves {@code ts}
 * back.
 */
final class FleetBucketScript {

  static final String LUA =
      """
      local cap = tonumber(ARGV[1])
      local refill = tonumber(ARGV[2])
      local period = tonumber(ARGV[3])
      local transfer = tonumber(ARGV[4])
      local want = tonumber(ARGV[5])
      local now = tonumber(ARGV[6])
      if now < 0 then
        local t = redis.call('TIME')
        now = tonumber(t[1]) * 1000000 + tonumber(t[2])
      end
      local s = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
      local tokens = tonumber(s[1])
      local ts = tonumber(s[2])
      if tokens == nil or ts == nil then
        tokens = cap
        ts = now
      end
      if now > ts then
        tokens = math.min(cap, tokens + (now - ts) * refill / period)
        ts = now
      end
      tokens = math.min(cap, tokens - transfer)
      local grant = 0
      if want > 0 and tokens >= 1 then
        grant = math.min(want, math.floor(tokens))
      end
      tokens = tokens - grant
      redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'ts', string.format('%.17g', ts))
      redis.call('PEXPIRE', KEYS[1], math.ceil((cap - tokens) * period / refill / 1000) + 1000)
      return {grant, math.floor(tokens)}
      """;

  /** A script call's answer. */
  record Reply(long granted, long fleetTokens) {}

  private final String sha;

  FleetBucketScript(RedisCommands<String, String> commands) {
    this.sha = commands.digest(LUA);
  }

  /**
   * Runs the script on {@code key}; on {@code NOSCRIPT} (Redis restarted and lost its script cache)
   * sends the script text once more. Throws whatever Lettuce throws (the caller marks Redis down).
   */
  Reply call(
      RedisCommands<String, String> commands,
      String key,
      FleetQuota q,
      long transfer,
      long want,
      long nowMicros) {
    String[] keys = {key};
    String[] args = {
      Long.toString(q.capacityTokens()),
      Long.toString(q.refillTokens()),
      Long.toString(q.period().toNanos() / 1000),
      Long.toString(transfer),
      Long.toString(want),
      Long.toString(nowMicros)
    };
    List<Long> out;
    try {
      out = commands.evalsha(sha, ScriptOutputType.MULTI, keys, args);
    } catch (RedisNoScriptException e) {
      out = commands.eval(LUA, ScriptOutputType.MULTI, keys, args);
    }
    return new Reply(out.get(0), out.get(1));
  }
}
