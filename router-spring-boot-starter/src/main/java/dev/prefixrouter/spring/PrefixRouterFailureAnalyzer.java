package dev.prefixrouter.spring;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Reports an invalid {@code prefix-router.*} property as a Spring Boot failure analysis (a few
 * lines naming the property and the problem) instead of the exception chain. Registered in {@code
 * META-INF/spring.factories}.
 */
public class PrefixRouterFailureAnalyzer
    extends AbstractFailureAnalyzer<PrefixRouterPropertyException> {

  @Override
  protected FailureAnalysis analyze(Throwable rootFailure, PrefixRouterPropertyException cause) {
    return new FailureAnalysis(
        "Invalid prefix-router configuration:\n\n    Property: "
            + cause.property()
            + "\n    Reason: "
            + cause.reason(),
        "Correct '"
            + cause.property()
            + "' in your application configuration (the README lists every prefix-router"
            + " property).",
        cause);
  }
}
