package dev.prefixrouter.api.spi;

import dev.prefixrouter.api.Prompt;

enum NoBlockHasher implements BlockHasher {
  INSTANCE;

  private static final long[] NONE = new long[0];

  @Override
  public long[] keys(Prompt prompt, long seed) {
    return NONE;
  }

  @Override
  public int tokensPerBlock() {
    return 16;
  }

  @Override
  public String toString() {
    return "BlockHasher.none()";
  }
}
