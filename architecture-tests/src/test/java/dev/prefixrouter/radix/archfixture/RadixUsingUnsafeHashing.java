package dev.prefixrouter.radix.archfixture;

import net.openhft.hashing.LongHashFunction;

/** Violation: a hasher built on zero-allocation-hashing, which reads through sun.misc.Unsafe. */
public final class RadixUsingUnsafeHashing {
  private RadixUsingUnsafeHashing() {}

  public static long hash(int[] ids) {
    return LongHashFunction.city_1_1().hashInts(ids);
  }
}
