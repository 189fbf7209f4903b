package dev.prefixrouter.api.spi;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.Failure;
import dev.prefixrouter.api.HealthState;

enum AlwaysHealthy implements HealthPolicy {
  INSTANCE;

  @Override
  public void addBackend(int slot, Backend backend) {}

  @Override
  public void removeBackend(int slot) {}

  @Override
  public HealthState state(int slot, long nowNanos) {
    return HealthState.CLOSED;
  }

  @Override
  public boolean tryAcquire(int slot, long nowNanos) {
    return true;
  }

  @Override
  public void onSuccess(int slot, long nowNanos) {}

  @Override
  public void onFailure(int slot, Failure failure, long nowNanos) {}

  @Override
  public String toString() {
    return "HealthPolicy.alwaysHealthy()";
  }
}
