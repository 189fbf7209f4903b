package dev.prefixrouter.radix.archfixture;

import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.scoring.Policies;

/** Violates: router-radix reaching into router-scoring. */
public final class RadixUsingScoring {
  private RadixUsingScoring() {}

  public static Scorer scorer() {
    return Policies.byName("round-robin");
  }
}
