package dev.prefixrouter.api.spi;

import dev.prefixrouter.api.Backend;

enum NoPredictionSink implements PredictionSink {
  INSTANCE;

  @Override
  public void onPredicted(Backend backend, long[] keys, int keyCount, int heldBlocks) {}

  @Override
  public String toString() {
    return "PredictionSink.none()";
  }
}
