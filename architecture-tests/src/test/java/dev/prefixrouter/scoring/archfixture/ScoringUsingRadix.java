package dev.prefixrouter.scoring.archfixture;

import dev.prefixrouter.api.spi.PrefixIndex;
import dev.prefixrouter.radix.RadixPrefixIndex;

/** Violates: router-scoring reaching into router-radix. */
public final class ScoringUsingRadix {
  private ScoringUsingRadix() {}

  public static PrefixIndex index() {
    return RadixPrefixIndex.create();
  }
}
