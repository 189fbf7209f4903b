package dev.prefixrouter.api.spi;

import java.util.Objects;

/**
 * Answer of {@link TenantLimiter#tryAcquire}.
 *
 * @param outcome granted, denied for now, or never grantable
 * @param retryAfterNanos for {@link Outcome#DENIED}: nanoseconds until the request would fit
 * @param message for denials: names the limit
 */
public record Admission(Outcome outcome, long retryAfterNanos, String message) {

  /** Outcomes of an admission check. */
  public enum Outcome {
    GRANTED,
    /** Not enough tokens now; they will be after {@code retryAfterNanos}. */
    DENIED,
    /** More tokens than the bucket can ever hold. */
    TOO_LARGE
  }

  /** The shared granted answer (no allocation on the hot path). */
  public static final Admission GRANTED = new Admission(Outcome.GRANTED, 0, "granted");

  public Admission {
    Objects.requireNonNull(outcome, "outcome");
    Objects.requireNonNull(message, "message");
    if (retryAfterNanos < 0) {
      throw new IllegalArgumentException("retryAfterNanos must be >= 0, was " + retryAfterNanos);
    }
  }

  public static Admission denied(long retryAfterNanos, String message) {
    return new Admission(Outcome.DENIED, retryAfterNanos, message);
  }

  public static Admission tooLarge(String message) {
    return new Admission(Outcome.TOO_LARGE, 0, message);
  }

  public boolean granted() {
    return outcome == Outcome.GRANTED;
  }
}
