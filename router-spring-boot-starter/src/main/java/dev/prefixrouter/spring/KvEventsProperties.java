package dev.prefixrouter.spring;

import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * {@code prefix-router.kv-events.*}: precise mode. With {@code enabled=true} every configured
 * backend's engine KV-event stream ({@code tcp://<host of its url>:<port>}) is applied to the
 * prefix index through a {@link dev.prefixrouter.vllm.KvEventSubscriber}.
 */
@ConfigurationProperties("prefix-router.kv-events")
public class KvEventsProperties {
  private boolean enabled;
  private int port = 5557;
  private @Nullable Integer replayPort;
  private String topic = "";
  private Duration replayTimeout = Duration.ofSeconds(2);
  private Duration idleReconnect = Duration.ofSeconds(30);
  private Duration handshakeTimeout = Duration.ofSeconds(5);
  private int queueCapacity = 4096;
  private boolean applyOnIoThread = true;
  private int dataParallelSize = 1;

  /** Subscribe to the engines' KV events (vLLM {@code --kv-events-config}); default false. */
  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  /**
   * The engines' PUB port (vLLM's default 5557): data-parallel rank {@code r} publishes on {@code
   * port + r} (see {@link #getDataParallelSize()}).
   */
  public int getPort() {
    return port;
  }

  public void setPort(int port) {
    this.port = port;
  }

  /**
   * The engines' replay ROUTER port, if they have one (vLLM's default has none); rank {@code r}
   * replays on {@code replay-port + r}.
   */
  public @Nullable Integer getReplayPort() {
    return replayPort;
  }

  public void setReplayPort(@Nullable Integer replayPort) {
    this.replayPort = replayPort;
  }

  /** Topic prefix; "" (the engines' default) takes every message. */
  public String getTopic() {
    return topic;
  }

  public void setTopic(String topic) {
    this.topic = topic;
  }

  public Duration getReplayTimeout() {
    return replayTimeout;
  }

  public void setReplayTimeout(Duration replayTimeout) {
    this.replayTimeout = replayTimeout;
  }

  public Duration getIdleReconnect() {
    return idleReconnect;
  }

  public void setIdleReconnect(Duration idleReconnect) {
    this.idleReconnect = idleReconnect;
  }

  /**
   * A SUB socket not through its ZMTP greeting this long after it was opened or lost its connection
   * is replaced, 100 ms .. 10 min (default 5 s): ends a connection JeroMQ left stalled; doubles per
   * replacement while an engine stays unreachable, up to 4 × the reconnect maximum.
   */
  public Duration getHandshakeTimeout() {
    return handshakeTimeout;
  }

  public void setHandshakeTimeout(Duration handshakeTimeout) {
    this.handshakeTimeout = handshakeTimeout;
  }

  /**
   * Data-parallel ranks per engine, 1 .. 1024 (default 1). vLLM gives every DP rank its own
   * publisher, rank {@code r} on {@code port + r} and {@code replay-port + r}: each backend gets
   * one subscription per rank, all applied to that backend (its events then describe the union of
   * the ranks' caches; a gap no replay can fill on one rank drops the whole backend's confirmed
   * blocks). Every rank's ports must stay within 65535.
   */
  public int getDataParallelSize() {
    return dataParallelSize;
  }

  public void setDataParallelSize(int dataParallelSize) {
    this.dataParallelSize = dataParallelSize;
  }

  public int getQueueCapacity() {
    return queueCapacity;
  }

  public void setQueueCapacity(int queueCapacity) {
    this.queueCapacity = queueCapacity;
  }

  /**
   * Apply each batch on the subscriber's I/O thread (default true; false: on a second thread fed by
   * a hand-off queue), see {@link dev.prefixrouter.vllm.KvEventSubscriber.Builder#applyOnIoThread}.
   */
  public boolean isApplyOnIoThread() {
    return applyOnIoThread;
  }

  public void setApplyOnIoThread(boolean applyOnIoThread) {
    this.applyOnIoThread = applyOnIoThread;
  }
}
