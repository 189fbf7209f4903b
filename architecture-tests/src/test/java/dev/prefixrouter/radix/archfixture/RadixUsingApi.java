package dev.prefixrouter.radix.archfixture;

import dev.prefixrouter.api.spi.PrefixIndex;
import dev.prefixrouter.radix.RadixPrefixIndex;

/** Clean: router-radix using router-api and itself. */
public final class RadixUsingApi {
  private RadixUsingApi() {}

  public static PrefixIndex index() {
    return RadixPrefixIndex.create();
  }
}
