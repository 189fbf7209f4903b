package dev.prefixrouter.spring;

/**
 * An invalid {@code prefix-router.*} property found at startup. {@link PrefixRouterFailureAnalyzer}
 * turns it into Spring Boot's short failure report naming the property.
 */
public class PrefixRouterPropertyException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  private final String property;
  private final String reason;

  /**
   * @param property the property path as written in configuration, e.g. {@code
   *     prefix-router.retry-budget}
   * @param reason what is wrong with its value
   */
  public PrefixRouterPropertyException(String property, String reason, Throwable cause) {
    super(property + ": " + reason, cause);
    this.property = property;
    this.reason = reason;
  }

  public PrefixRouterPropertyException(String property, String reason) {
    super(property + ": " + reason);
    this.property = property;
    this.reason = reason;
  }

  /**
   * Runs a builder step that validates one property's value, turning its {@link
   * IllegalArgumentException} into this exception naming the property.
   */
  static void naming(String property, Runnable step) {
    try {
      step.run();
    } catch (IllegalArgumentException e) {
      throw new PrefixRouterPropertyException(property, String.valueOf(e.getMessage()), e);
    }
  }

  /** The property path, e.g. {@code prefix-router.backends[1].id}. */
  public String property() {
    return property;
  }

  /** What is wrong with the value. */
  public String reason() {
    return reason;
  }
}
