package dev.prefixrouter.spring.archfixture;

import dev.prefixrouter.bench.archfixture.BenchThing;

/** Violates: a library class reaching into the benchmarks. */
public final class SpringUsingBench {
  private SpringUsingBench() {}

  public static Object thing() {
    return new BenchThing();
  }
}
