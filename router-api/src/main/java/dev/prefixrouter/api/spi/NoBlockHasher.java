package dev.prefixrouter.api.spi;

import dev.prefixrouter.api.Prompt;

enum NoBlockHasher implements BlockHasher {
  INSTANCE;

  @Override
  public int keys(Prompt prompt, long seed, long[] out) {
    return 0;
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
