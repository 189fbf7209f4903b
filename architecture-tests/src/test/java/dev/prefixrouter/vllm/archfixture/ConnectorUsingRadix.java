package dev.prefixrouter.vllm.archfixture;

import dev.prefixrouter.api.spi.PrefixIndex;
import dev.prefixrouter.radix.RadixPrefixIndex;

/** Violates: a connector reaching into router-radix. */
public final class ConnectorUsingRadix {
  private ConnectorUsingRadix() {}

  public static PrefixIndex index() {
    return RadixPrefixIndex.create();
  }
}
