package dev.prefixrouter.redis;

import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/** The worker threads of this module's components: daemons, started and stopped alike. */
final class Workers {
  private Workers() {}

  /** A started daemon thread named {@code name}. */
  static Thread start(String name, Runnable body) {
    Thread t = new Thread(body, name);
    t.setDaemon(true);
    t.start();
    return t;
  }

  /** Interrupts each thread and waits at most a second for each to end. */
  static void stop(@Nullable Thread... threads) {
    for (Thread t : threads) {
      if (t != null) {
        t.interrupt();
        try {
          t.join(TimeUnit.SECONDS.toMillis(1));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }
}
