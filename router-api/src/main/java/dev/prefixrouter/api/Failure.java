package dev.prefixrouter.api;

import java.util.Objects;

/**
 * Why a routed request failed, as the host observed it. Feeds the backend's circuit breaker unless
 * the kind is {@link Kind#CANCELLED} or {@link Kind#CLIENT_ERROR}.
 *
 * @param kind the class of failure
 * @param detail free text for logs (e.g. the exception message or HTTP status line)
 */
public record Failure(Kind kind, String detail) {

  /** Classes of failure. */
  public enum Kind {
    /** Could not connect (refused, DNS, TLS). */
    CONNECT,
    /** No answer in time. */
    TIMEOUT,
    /** HTTP 5xx from the backend. */
    SERVER_ERROR,
    /** The engine reported an error in the stream or body. */
    ENGINE_ERROR,
    /** HTTP 4xx caused by the request itself; says nothing about the backend's health. */
    CLIENT_ERROR,
    /** The caller gave up (client disconnect); says nothing about the backend's health. */
    CANCELLED
  }

  public Failure {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(detail, "detail");
  }

  public static Failure of(Kind kind) {
    return new Failure(kind, kind.name());
  }

  /** Classifies an HTTP status: 5xx → SERVER_ERROR, 4xx → CLIENT_ERROR. */
  public static Failure httpStatus(int status) {
    if (status >= 500 && status <= 599) {
      return new Failure(Kind.SERVER_ERROR, "HTTP " + status);
    }
    if (status >= 400 && status <= 499) {
      return new Failure(Kind.CLIENT_ERROR, "HTTP " + status);
    }
    throw new IllegalArgumentException("status " + status + " is not a failure status (4xx/5xx)");
  }

  /** Whether this failure says something about the backend's health. */
  public boolean countsAgainstBackend() {
    return kind != Kind.CANCELLED && kind != Kind.CLIENT_ERROR;
  }
}
