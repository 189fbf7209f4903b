package dev.prefixrouter.spring;

import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * {@code prefix-router.redis.*}: several gateway replicas route as one through Redis (needs
 * router-redis on the classpath). With {@code enabled=true} and a {@code uri}, the replicas that
 * share a {@code key-prefix} share their predictions, their membership and drain changes and their
 * session pins, and (with {@code share-quotas}) their tenant quotas.
 */
@ConfigurationProperties("prefix-router.redis")
public class RedisProperties {
  private boolean enabled;
  private @Nullable String uri;
  private String keyPrefix = "prefixrouter:";
  private @Nullable String replicaId;
  private boolean sharePredictions = true;
  private boolean shareOnlyNewBlocks;
  private boolean shareMembership = true;
  private boolean shareSessionPins = true;
  private boolean shareQuotas;
  private int expectedReplicas = 1;
  private Duration leaseWait = Duration.ofMillis(100);
  private Duration commandTimeout = Duration.ofMillis(250);
  private Duration retryInterval = Duration.ofSeconds(1);

  /** Share state through Redis; default false. */
  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  /** The Redis, e.g. {@code redis://127.0.0.1:6379}; required when enabled. */
  public @Nullable String getUri() {
    return uri;
  }

  public void setUri(@Nullable String uri) {
    this.uri = uri;
  }

  /** Prefix of every key; replicas with the same prefix form one fleet. */
  public String getKeyPrefix() {
    return keyPrefix;
  }

  public void setKeyPrefix(String keyPrefix) {
    this.keyPrefix = keyPrefix;
  }

  /** This replica's id (default a random UUID). */
  public @Nullable String getReplicaId() {
    return replicaId;
  }

  public void setReplicaId(@Nullable String replicaId) {
    this.replicaId = replicaId;
  }

  /** Publish this replica's predictions and apply the others'; default true. */
  public boolean isSharePredictions() {
    return sharePredictions;
  }

  public void setSharePredictions(boolean sharePredictions) {
    this.sharePredictions = sharePredictions;
  }

  /** Share only routes that predict blocks beyond what was held (with KV events); default false. */
  public boolean isShareOnlyNewBlocks() {
    return shareOnlyNewBlocks;
  }

  public void setShareOnlyNewBlocks(boolean shareOnlyNewBlocks) {
    this.shareOnlyNewBlocks = shareOnlyNewBlocks;
  }

  /** Propagate add/update/remove/drain/undrain to every replica; default true. */
  public boolean isShareMembership() {
    return shareMembership;
  }

  public void setShareMembership(boolean shareMembership) {
    this.shareMembership = shareMembership;
  }

  /**
   * Keep session pins in Redis ({@code RedisSessionPins} as the est-ttft scorer's pin store), so a
   * session pinned through one replica is honoured on every replica; default true. Pins are only a
   * preference (a lost one costs a cache miss), each new or moved pin costs one Redis write off the
   * routing thread, and a pin kept by one replica alone does nothing behind a load balancer.
   */
  public boolean isShareSessionPins() {
    return shareSessionPins;
  }

  public void setShareSessionPins(boolean shareSessionPins) {
    this.shareSessionPins = shareSessionPins;
  }

  /**
   * Make {@code prefix-router.limiter.*} quotas hold for the fleet of replicas ({@code
   * RedisTenantLimiter}) instead of for each replica; default false, because turning it on changes
   * what a configured quota means (per fleet, not per replica): opt in knowingly.
   */
  public boolean isShareQuotas() {
    return shareQuotas;
  }

  public void setShareQuotas(boolean shareQuotas) {
    this.shareQuotas = shareQuotas;
  }

  /**
   * Replicas sharing the quotas, 1..1024; default 1. Set it to the fleet's size: each replica's
   * part of a quota is {@code 1/expected-replicas}, which is what it admits while Redis is
   * unreachable or its lease is late (the latter charged to the fleet afterwards) and how much of
   * the fleet bucket's level it may admit on credit before its next lease. With more replicas than
   * expected, the fleet may admit up to one of those parts per extra replica beyond its quota until
   * the next leases settle.
   */
  public int getExpectedReplicas() {
    return expectedReplicas;
  }

  public void setExpectedReplicas(int expectedReplicas) {
    this.expectedReplicas = expectedReplicas;
  }

  /**
   * With {@code share-quotas}: how long a tenant waits for a lease it asked Redis for before a
   * request that finds too little is admitted from the replica's local share instead, 1 ms .. 10 s
   * (default 100 ms); keep it below {@code command-timeout}.
   */
  public Duration getLeaseWait() {
    return leaseWait;
  }

  public void setLeaseWait(Duration leaseWait) {
    this.leaseWait = leaseWait;
  }

  public Duration getCommandTimeout() {
    return commandTimeout;
  }

  public void setCommandTimeout(Duration commandTimeout) {
    this.commandTimeout = commandTimeout;
  }

  public Duration getRetryInterval() {
    return retryInterval;
  }

  public void setRetryInterval(Duration retryInterval) {
    this.retryInterval = retryInterval;
  }
}
