package dev.prefixrouter.bench.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@link SimBackend#shadowTtftMs}: the oracle TTFT the issue #18 probe compares estimates with is
 * the TTFT the backend then gives the request when nothing else arrives.
 */
class SimBackendShadowTest {

  private static final class FirstTokens implements SimBackend.Listener {
    final Map<Integer, Long> at = new HashMap<>();

    @Override
    public void onFirstToken(SimBackend.Seq seq, long now) {
      at.put(seq.request.id(), now);
    }

    @Override
    public void onFinished(SimBackend.Seq seq, long now) {}

    @Override
    public void onStored(SimBackend backend, long[] keys, int from, int to, int[] tokens) {}

    @Override
    public void onRemoved(SimBackend backend, long key) {}
  }

  private static SimBackend.Seq seq(int id, int[] tokens, int output) {
    SimRequest r = new SimRequest(id, 0, "t", null, tokens, output);
    long[] keys = BlockHasher.keysOf(FleetSimulator.HASHER, Prompt.ofTokens(tokens), 0);
    return new SimBackend.Seq(r, null, keys, 0);
  }

  /** The fleet simulator's stepping: a step runs to its end, then the next is planned. */
  private static final class Driver {
    final SimBackend b;
    long now;

    Driver(SimBackend b) {
      this.b = b;
    }

    void kick() {
      if (b.stepping) {
        return;
      }
      long d = b.planStep();
      if (d > 0) {
        b.stepping = true;
        b.stepEndsAt = now + d;
      }
    }

    /** Runs steps until {@code t}, ending every step that ends at or before it. */
    void runUntil(long t) {
      while (b.stepping && b.stepEndsAt <= t) {
        now = b.stepEndsAt;
        b.stepping = false;
        b.finishStep(now, 0);
        kick();
      }
      now = t;
    }

    void enqueue(SimBackend.Seq s) {
      b.enqueue(s);
      kick();
    }
  }

  private static double replay(int arrivalMs, boolean sharePrefix) {
    FirstTokens heard = new FirstTokens();
    SimBackend b = new SimBackend("b0", BackendProfile.h100(29_205), heard);
    Driver d = new Driver(b);
    int[] system = Workloads.segment(7, 6_000);
    // 9,000 tokens: one step of 8,192, then 808 beside the second request and the arrival
    d.enqueue(seq(1, Workloads.concat(system, Workloads.segment(8, 3_000)), 40));
    d.enqueue(seq(2, Workloads.segment(9, 1_500), 30));
    d.runUntil(arrivalMs * 1_000_000L);
    int[] prompt =
        sharePrefix
            ? Workloads.concat(system, Workloads.segment(10, 700))
            : Workloads.segment(11, 6_700);
    SimBackend.Seq n = seq(3, prompt, 5);
    double predicted = b.shadowTtftMs(n.keys, prompt.length, d.now);
    long from = d.now;
    d.enqueue(n);
    d.runUntil(Long.MAX_VALUE / 2);
    assertThat(heard.at).containsKey(3);
    double actual = (heard.at.get(3) - from) / 1e6;
    assertThat(predicted).as("oracle vs replay").isCloseTo(actual, within(1e-6));
    return actual;
  }

  @Test
  void predictsTheReplayedTtftMidStepBehindAPrefillAndDecodes() {
    for (int at : new int[] {0, 3, 90, 150, 170, 200, 260, 400}) {
      replay(at, false);
      replay(at, true);
    }
  }

  @Test
  void aPrefixStillBeingPrefilledIsAHitOnceTheChunkCoveringItWasScheduled() {
    // arriving during the first request's first step, which scheduled its first 8,192 tokens (the
    // shared 6,000 among them): admitted in the next step, the shared tokens are a hit (vLLM v1
    // caches blocks as they are scheduled); arriving after its prefill completed: a hit too
    double during = replay(3, true);
    double unshared = replay(3, false);
    double after = replay(400, true);
    double afterUnshared = replay(400, false);
    assertThat(during).isLessThan(unshared - 50);
    assertThat(after).isLessThan(afterUnshared - 50);
  }

  @Test
  void anIdleBackendAnswersInOneStepOfThePromptsUncachedTokens() {
    SimBackend b = new SimBackend("b0", BackendProfile.h100(29_205), new FirstTokens());
    int[] prompt = Workloads.segment(12, 3_000);
    SimBackend.Seq n = seq(1, prompt, 5);
    double expected = BackendProfile.h100(29_205).stepNanos(3_000, 0, 1.0) / 1e6;
    assertThat(b.shadowTtftMs(n.keys, prompt.length, 0)).isCloseTo(expected, within(1e-9));
  }
}
