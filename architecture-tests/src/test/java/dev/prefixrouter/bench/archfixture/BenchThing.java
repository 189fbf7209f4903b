package dev.prefixrouter.bench.archfixture;

/** Stands for a benchmarks class. */
public final class BenchThing {
  public static final int SEED = 42;
}
