package dev.prefixrouter.redis;

import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;

/**
 * Whether Redis answers one of this module's components: one INFO line when it does again, one WARN
 * line when it stops (with what the component does meanwhile), and the transitions counted.
 * Thread-safe; {@link #up()} is one volatile read.
 */
final class LinkState {
  private final Logger log;
  private final String address;
  private final String whenUp;
  private final String whenDown;
  private final LongAdder transitions = new LongAdder();
  private volatile boolean up;

  /**
   * @param whenUp what the component does while Redis answers, for the INFO line
   * @param whenDown what it does while Redis does not, for the WARN line
   */
  LinkState(Logger log, String address, String whenUp, String whenDown) {
    this.log = log;
    this.address = address;
    this.whenUp = whenUp;
    this.whenDown = whenDown;
  }

  boolean up() {
    return up;
  }

  long transitions() {
    return transitions.sum();
  }

  /** Redis answered; true if it was down before (a transition). */
  synchronized boolean markUp() {
    if (up) {
      return false;
    }
    up = true;
    transitions.increment();
    log.info("Redis at {} reachable: {}", address, whenUp);
    return true;
  }

  /** A command failed or timed out; true if Redis was up before (a transition). */
  synchronized boolean markDown(RuntimeException cause) {
    if (!up) {
      return false;
    }
    up = false;
    transitions.increment();
    log.warn("Redis at {} unreachable ({}): {}", address, cause.toString(), whenDown);
    return true;
  }

  /** Down for good (closing): no log line, no transition. */
  void close() {
    up = false;
  }
}
