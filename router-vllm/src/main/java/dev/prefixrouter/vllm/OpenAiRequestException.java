package dev.prefixrouter.vllm;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A request body the {@link OpenAiRequestReader} refuses. {@link #problem()} classifies it so the
 * host can answer with the right status (413 for {@link Problem#TOO_LARGE}, 400 otherwise), and the
 * message names the field.
 */
public final class OpenAiRequestException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  /** Classes of refusal. */
  public enum Problem {
    /** The body exceeds the reader's size cap (or a nesting/length limit). */
    TOO_LARGE,
    /** Not well-formed JSON (syntax error, truncated, trailing content, duplicate key). */
    MALFORMED_JSON,
    /** The top level is not a JSON object. */
    NOT_AN_OBJECT,
    /** No {@code model}. */
    MISSING_MODEL,
    /** Neither {@code messages} (chat) nor {@code prompt} (completions), or both. */
    MISSING_PROMPT,
    /** A known field has the wrong JSON type. */
    WRONG_TYPE,
    /** A known field has a value out of range. */
    INVALID_VALUE
  }

  private final Problem problem;
  private final @Nullable String field;

  OpenAiRequestException(Problem problem, @Nullable String field, String message) {
    this(problem, field, message, null);
  }

  OpenAiRequestException(
      Problem problem, @Nullable String field, String message, @Nullable Throwable cause) {
    super(message, cause);
    this.problem = Objects.requireNonNull(problem, "problem");
    this.field = field;
  }

  public Problem problem() {
    return problem;
  }

  /** The offending field (dotted path such as {@code messages[2].content}), if any. */
  public @Nullable String field() {
    return field;
  }
}
