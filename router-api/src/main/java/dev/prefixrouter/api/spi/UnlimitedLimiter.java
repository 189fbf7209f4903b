package dev.prefixrouter.api.spi;

enum UnlimitedLimiter implements TenantLimiter {
  INSTANCE;

  @Override
  public Admission tryAcquire(String tenant, long tokens, long nowNanos) {
    return Admission.GRANTED;
  }

  @Override
  public void adjust(String tenant, long deltaTokens, long nowNanos) {}

  @Override
  public String toString() {
    return "TenantLimiter.unlimited()";
  }
}
