package dev.prefixrouter.api.archfixture;

import dev.prefixrouter.scoring.Policies;
import java.util.List;

/** Violates: router-api reaching into router-scoring. */
public final class ApiUsingScoring {
  private ApiUsingScoring() {}

  public static List<String> names() {
    return Policies.NAMES;
  }
}
