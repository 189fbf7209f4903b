package dev.prefixrouter.api.archfixture;

import dev.prefixrouter.api.archfixture.internal.Hidden;

/** Violates: an internal type as a public return type. */
public final class LeakyReturn {
  public Hidden hidden() {
    return new Hidden();
  }
}
