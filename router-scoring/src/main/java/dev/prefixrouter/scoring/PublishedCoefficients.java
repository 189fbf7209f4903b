package dev.prefixrouter.scoring;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The coefficients a {@link CostModel} publishes to the routing threads, as five plain doubles
 * behind a sequence lock: a new fit overwrites them in place instead of allocating a {@link
 * TtftCoefficients} per observed first token, and a reader never sees a mix of two fits.
 *
 * <p>One writer at a time (the model's lock serialises {@link #set}); any number of readers, which
 * never block a writer and retry only while a write is in progress (a few stores). Readers copy the
 * values out ({@link #readInto}); {@link #snapshot} builds an immutable record for inspection.
 */
final class PublishedCoefficients {
  private static final VarHandle VERSION;

  static {
    try {
      VERSION =
          MethodHandles.lookup().findVarHandle(PublishedCoefficients.class, "version", int.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  /** Even when stable, odd while {@link #set} writes. */
  @SuppressWarnings("unused") // accessed through VERSION
  private volatile int version;

  private double alphaMs;
  private double betaMsPerToken;
  private double gammaMsPerToken2;
  private double decodeMsPerRunning;
  private double waitingMs;

  PublishedCoefficients(TtftCoefficients initial) {
    alphaMs = initial.alphaMs();
    betaMsPerToken = initial.betaMsPerToken();
    gammaMsPerToken2 = initial.gammaMsPerToken2();
    decodeMsPerRunning = initial.decodeMsPerRunning();
    waitingMs = initial.waitingMs();
  }

  /**
   * Publishes new values, each within the range {@link TtftCoefficients} checks. Not thread-safe
   * against another {@code set}: the caller serialises writers.
   */
  void set(
      double alphaMs,
      double betaMsPerToken,
      double gammaMsPerToken2,
      double decodeMsPerRunning,
      double waitingMs) {
    int v = (int) VERSION.getOpaque(this);
    VERSION.setOpaque(this, v + 1);
    VarHandle.storeStoreFence(); // the odd version is visible before any new value
    this.alphaMs = alphaMs;
    this.betaMsPerToken = betaMsPerToken;
    this.gammaMsPerToken2 = gammaMsPerToken2;
    this.decodeMsPerRunning = decodeMsPerRunning;
    this.waitingMs = waitingMs;
    VERSION.setRelease(this, v + 2);
  }

  /** Copies the current values into {@code out[at..at+5)} (alpha, beta, gamma, decode, waiting). */
  void readInto(double[] out, int at) {
    while (true) {
      int v = (int) VERSION.getAcquire(this);
      if ((v & 1) == 0) {
        double a = alphaMs;
        double b = betaMsPerToken;
        double g = gammaMsPerToken2;
        double d = decodeMsPerRunning;
        double w = waitingMs;
        VarHandle.acquireFence(); // the reads above happen before the version is checked again
        if ((int) VERSION.getOpaque(this) == v) {
          out[at] = a;
          out[at + 1] = b;
          out[at + 2] = g;
          out[at + 3] = d;
          out[at + 4] = w;
          return;
        }
      }
      Thread.onSpinWait();
    }
  }

  /** The current values as an immutable record (allocates; for inspection, not the hot path). */
  TtftCoefficients snapshot() {
    double[] v = new double[5];
    readInto(v, 0);
    return new TtftCoefficients(v[0], v[1], v[2], v[3], v[4]);
  }
}
