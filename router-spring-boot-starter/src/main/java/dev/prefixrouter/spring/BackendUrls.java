package dev.prefixrouter.spring;

import java.net.URI;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * Base URLs of the backends ({@code http://host:port}), for the parts that talk to the engines
 * themselves: the metrics poller ({@code {url}/metrics}) and the KV-event subscriber ({@code
 * tcp://<host>:<kv-events port>}). Seeded from {@code prefix-router.backends[*].url}; the
 * actuator's {@code add} may give one for a backend added at runtime, and its {@code remove}
 * forgets it. At most one URL per backend id, so the map is bounded by the ids the engine has seen.
 * Thread-safe.
 */
public final class BackendUrls {
  /** Longest accepted URL, in chars. */
  public static final int MAX_URL_LENGTH = 2048;

  private final Map<String, String> urls = new ConcurrentHashMap<>();

  /** The backend's base URL, or null if none is known. */
  public @Nullable String get(String backendId) {
    return urls.get(backendId);
  }

  /**
   * Sets a backend's base URL.
   *
   * @throws IllegalArgumentException if the URL is not an absolute http(s) URL with a host, or
   *     longer than {@value #MAX_URL_LENGTH} chars
   */
  public void put(String backendId, String url) {
    Objects.requireNonNull(backendId, "backendId");
    urls.put(backendId, check(url));
  }

  /** Forgets a backend's URL. */
  public void remove(String backendId) {
    urls.remove(backendId);
  }

  /** The host part of a base URL accepted by {@link #put}. */
  static String host(String url) {
    return Objects.requireNonNull(URI.create(check(url)).getHost());
  }

  private static String check(String url) {
    Objects.requireNonNull(url, "url");
    if (url.length() > MAX_URL_LENGTH) {
      throw new IllegalArgumentException(
          "url must be at most " + MAX_URL_LENGTH + " chars, was " + url.length());
    }
    URI uri;
    try {
      uri = URI.create(url);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("url is not a URL: " + e.getMessage(), e);
    }
    String scheme = uri.getScheme();
    if (scheme == null
        || !(scheme.equalsIgnoreCase("http") || scheme.equalsIgnoreCase("https"))
        || uri.getHost() == null) {
      throw new IllegalArgumentException(
          "url must be an absolute http(s) URL with a host, e.g. http://10.0.0.5:8000");
    }
    return url;
  }
}
