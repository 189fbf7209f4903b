package dev.prefixrouter.bench.sim;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class AgenticWorkloadTest {

  @Test
  void branchesShareTheirTaskAndGrowStepByStep() {
    List<SimRequest> rs = Workloads.agentic(1.0, 3, 40);
    assertThat(rs.size()).isBetween(40 * 6, 40 * 24);
    double span = rs.get(rs.size() - 1).arrivalNanos() / 1e9;
    assertThat(rs.size() / span).as("about 20 req/s").isBetween(10.0, 40.0);
    Map<String, int[]> last = new HashMap<>();
    int longest = 0;
    for (SimRequest r : rs) {
      longest = Math.max(longest, r.tokens().length);
      int[] before = last.put(r.session(), r.tokens());
      if (before != null) {
        // the next step extends the branch's previous prompt
        assertThat(r.tokens().length).isGreaterThan(before.length);
        assertThat(Arrays.copyOf(r.tokens(), before.length)).isEqualTo(before);
      }
    }
    assertThat(longest).isBetween(9_000, 16_000);
    // two branches of one task share the system + tools prompt and the task (5,120 tokens)
    int[] a = last.get("agent-0-0");
    int[] b = last.get("agent-0-1");
    assertThat(Arrays.copyOf(a, 5120)).isEqualTo(Arrays.copyOf(b, 5120));
    assertThat(Arrays.copyOf(a, 5184)).isNotEqualTo(Arrays.copyOf(b, 5184));
    assertThat(Workloads.agentic(1.0, 3, 40)).hasSameSizeAs(rs);
  }
}
