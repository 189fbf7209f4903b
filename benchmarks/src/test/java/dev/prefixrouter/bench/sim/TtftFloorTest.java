package dev.prefixrouter.bench.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link TtftFloor} is a lower bound for every policy: no request of any run gets its first token
 * sooner than its floor. Checked request by request against the simulator itself, on workloads
 * where causality binds (bursts of identical prompts, agentic trees, long prompts in chunks, a
 * small KV cache that evicts, a half-slow fleet) and with policies that place very differently.
 */
class TtftFloorTest {

  private static final BackendProfile H100 = BackendProfile.h100(29_205);

  /** Runs the policy and returns each request's TTFT in ms (NaN: no first token). */
  private static double[] actual(
      String name, SimConfig config, List<SimRequest> requests, String policy) {
    double[] ttft = new double[requests.size()];
    Arrays.fill(ttft, Double.NaN);
    new FleetSimulator(name, config, requests, null)
        .tap(
            new FleetSimulator.DecisionTap() {
              @Override
              public void beforeRoute(
                  int request, SimRequest r, long[] keys, SimBackend[] backends, long now) {}

              @Override
              public void routed(int request, int backend) {}

              @Override
              public void firstToken(int request, double ttftMs) {
                ttft[request] = ttftMs;
              }
            })
        .run(policy);
    return ttft;
  }

  private static void assertFloorHolds(String name, SimConfig config, List<SimRequest> requests) {
    double[] floors = TtftFloor.floorsMs(requests, config.profile());
    for (String policy : List.of("least-request", "est-ttft", "dynamo-kv", "sglang-cache-aware")) {
      double[] ttft = actual(name, config, requests, policy);
      int checked = 0;
      for (int i = 0; i < ttft.length; i++) {
        if (Double.isNaN(ttft[i])) {
          continue;
        }
        checked++;
        assertThat(ttft[i])
            .as(
                "%s, %s, request %d (prompt %d tokens)",
                name, policy, i, requests.get(i).tokens().length)
            .isGreaterThanOrEqualTo(floors[i] - 1e-6);
      }
      assertThat(checked).as("%s, %s: requests with a first token", name, policy).isPositive();
    }
  }

  @Test
  void noRequestOfAnyPolicyBeatsItsFloorOnRolloutBursts() {
    assertFloorHolds("rl-rollout", SimConfig.defaults(8, 29_205), Workloads.rlRollout(6, 2, 1));
  }

  @Test
  void noRequestOfAnyPolicyBeatsItsFloorOnAgenticTrees() {
    assertFloorHolds("agentic", SimConfig.defaults(8, 29_205), Workloads.agentic(2, 1, 25));
  }

  @Test
  void noRequestOfAnyPolicyBeatsItsFloorWithLongPromptsInChunksAndASmallCache() {
    List<SimRequest> mixed = Workloads.mixedLengths(4, 2).subList(0, 500);
    assertFloorHolds("mixed-lengths", SimConfig.defaults(4, 3_000), mixed);
  }

  @Test
  void noRequestOfAnyPolicyBeatsItsFloorOnAHalfSlowFleet() {
    SimConfig config = SimConfig.defaults(4, 29_205);
    List<SimConfig.Fault> slow = new ArrayList<>();
    for (int b = 0; b < 2; b++) {
      slow.add(new SimConfig.Fault(SimConfig.Fault.Kind.SLOW_2X, b, 0.0));
    }
    assertFloorHolds(
        "hot-prefix", config.withFaults(slow), Workloads.hotPrefix(2, 3).subList(0, 600));
  }

  /** Alone on an idle backend a request's floor is its TTFT exactly: the bound is tight there. */
  @Test
  void aLoneRequestsFloorIsItsTtft() {
    int[] prompt = new int[3_000];
    for (int i = 0; i < prompt.length; i++) {
      prompt[i] = i;
    }
    List<SimRequest> one = List.of(new SimRequest(0, 0, "t", null, prompt, 4));
    double floor = TtftFloor.floorsMs(one, H100)[0];
    assertThat(floor).isCloseTo(H100.stepBaseMs() + 3_000 * H100.prefillMsPerToken(), within(1e-9));
    assertThat(actual("one", SimConfig.defaults(1, 29_205), one, "least-request")[0])
        .isCloseTo(floor, within(1e-3));
  }

  /**
   * A copy of a prompt that arrives while the first is still being prefilled cannot finish before
   * that prefill: its floor is the first one's completion, not the cached-prefix time session 18's
   * floor gives it.
   */
  @Test
  void aCopyArrivingDuringThePrefillWaitsForIt() {
    int[] prompt = new int[2_000];
    for (int i = 0; i < prompt.length; i++) {
      prompt[i] = 7 * i + 1;
    }
    List<SimRequest> two =
        List.of(
            new SimRequest(0, 0, "t", null, prompt, 4),
            new SimRequest(1, 10_000_000L, "t", null, prompt, 4)); // 10 ms later
    double[] floors = TtftFloor.floorsMs(two, H100);
    double first = H100.stepBaseMs() + 2_000 * H100.prefillMsPerToken();
    assertThat(floors[0]).isCloseTo(first, within(1e-9));
    assertThat(floors[1]).isCloseTo(first - 10, within(1e-9)); // the first's end, from 10 ms on
    double[] ttft = actual("two", SimConfig.defaults(1, 29_205), two, "least-request");
    assertThat(ttft[1]).isGreaterThanOrEqualTo(floors[1] - 1e-6);
  }

  @Test
  void requestsOutOfArrivalOrderAreRejected() {
    int[] p = new int[64];
    List<SimRequest> backwards =
        List.of(new SimRequest(0, 5, "t", null, p, 1), new SimRequest(1, 4, "t", null, p, 1));
    assertThatThrownBy(() -> TtftFloor.floorsMs(backwards, H100))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("arrival order");
  }
}
