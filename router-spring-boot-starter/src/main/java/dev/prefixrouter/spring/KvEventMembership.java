package dev.prefixrouter.spring;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.spi.RoutingListener;
import dev.prefixrouter.vllm.KvEventSubscriber;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps precise mode's subscriptions in step with the engine's backends: a backend added at runtime
 * whose base URL is in {@link BackendUrls} (the actuator's {@code add} with a {@code url}) is
 * subscribed at {@code tcp://<host>:<kv-events port + r>} for each data-parallel rank {@code r}
 * (replay at {@code replay-port + r}, as vLLM offsets its ranks' ports), a removed one is
 * unsubscribed. A {@link RoutingListener} the starter registers on the engine it builds (an
 * application's own {@code RoutingEngine} bean does not get it: only its backends present at
 * startup are subscribed). Inert until {@link #attach}; a descriptor update of a subscribed backend
 * changes nothing. Thread-safe; each call only queues a command for the subscriber's I/O thread.
 *
 * <p><b>One endpoint, one backend.</b> The KV-event port is one for every backend and the engine's
 * HTTP port says nothing about its KV-event port (vLLM's {@code --kv-events-config} is independent
 * of {@code --port}), so two engines on one host (e.g. {@code :8000} and {@code :8001}) map to the
 * same endpoint. The subscriber refuses an endpoint subscribed for another backend, and so does
 * this membership: the backend that comes second is not subscribed (a WARN names both) and routes
 * on predictions; it is not subscribed later when the first leaves (add it again then).
 */
public final class KvEventMembership implements RoutingListener {
  private static final Logger log = LoggerFactory.getLogger(KvEventMembership.class);

  private final BackendUrls urls;
  private final int port;
  private final @Nullable Integer replayPort;
  private final int ranks;
  private final Map<String, List<String>> subscribed = new ConcurrentHashMap<>(); // id -> ranks'
  private volatile @Nullable KvEventSubscriber subscriber;

  KvEventMembership(BackendUrls urls, int port, @Nullable Integer replayPort, int ranks) {
    this.urls = urls;
    this.port = port;
    this.replayPort = replayPort;
    this.ranks = ranks;
  }

  /** Starts following: subscribes every current backend that has a URL. */
  void attach(KvEventSubscriber s, RoutingEngine engine) {
    subscriber = s;
    for (Backend b : engine.backends().all()) {
      follow(s, b.id());
    }
  }

  /** The endpoints subscribed (one per data-parallel rank, rank 0 first), by backend id. */
  Map<String, List<String>> subscribed() {
    return Map.copyOf(subscribed);
  }

  @Override
  public void onBackendAdded(Backend backend) {
    KvEventSubscriber s = subscriber;
    if (s != null) {
      follow(s, backend.id());
    }
  }

  @Override
  public synchronized void onBackendRemoved(Backend backend) {
    KvEventSubscriber s = subscriber;
    if (s != null && subscribed.remove(backend.id()) != null) {
      s.unsubscribe(backend.id());
    }
  }

  private synchronized void follow(KvEventSubscriber s, String id) {
    String url = urls.get(id);
    if (url == null) {
      log.warn("backend {} has no url: its KV events are not subscribed (routing predicts)", id);
      return;
    }
    String host = BackendUrls.host(url);
    List<String> endpoints = new ArrayList<>(ranks);
    for (int r = 0; r < ranks; r++) {
      endpoints.add("tcp://" + host + ":" + (port + r));
    }
    List<String> before = subscribed.get(id);
    if (endpoints.equals(before)) {
      return; // an update of the descriptor, or attach racing an add
    }
    String clash = holder(id, endpoints);
    if (clash != null) {
      // the port is one for every backend, so two engines on one host map to one endpoint: the
      // events of one engine must not be applied to the other's cache
      log.warn(
          "backend {}: its KV-event endpoint {} is already followed for backend {} (two engines on"
              + " host {} with one prefix-router.kv-events.port): backend {} is not subscribed"
              + " and routes on predictions; give each engine its own host (or run one engine per"
              + " host) to follow both",
          id,
          endpoints.get(0),
          clash,
          host,
          id);
      if (subscribed.remove(id) != null) {
        s.unsubscribe(id);
      }
      return;
    }
    subscribed.put(id, List.copyOf(endpoints));
    if (before != null) {
      s.unsubscribe(id);
    }
    try {
      for (int r = 0; r < ranks; r++) {
        s.subscribe(
            id,
            endpoints.get(r),
            replayPort == null ? null : "tcp://" + host + ":" + (replayPort + r));
      }
    } catch (IllegalArgumentException refused) {
      // an endpoint subscribed for another backend by someone else than this membership
      log.warn("backend {}: its KV events are not subscribed: {}", id, refused.getMessage());
      subscribed.remove(id);
      s.unsubscribe(id);
    }
  }

  /** Another backend already subscribed at one of {@code endpoints}, or null. */
  private @Nullable String holder(String id, List<String> endpoints) {
    for (Map.Entry<String, List<String>> e : subscribed.entrySet()) {
      if (!e.getKey().equals(id)) {
        for (String endpoint : e.getValue()) {
          if (endpoints.contains(endpoint)) {
            return e.getKey();
          }
        }
      }
    }
    return null;
  }
}
