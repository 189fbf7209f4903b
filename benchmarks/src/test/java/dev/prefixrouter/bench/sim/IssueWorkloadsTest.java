package dev.prefixrouter.bench.sim;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The generators of the issue #18 workloads: the shapes their javadoc promises. */
class IssueWorkloadsTest {

  @Test
  void longChatsGrowTurnByTurnToAbout14kTokens() {
    List<SimRequest> rs = Workloads.longChat(50, 1.0, 2);
    assertThat(rs).hasSize(300);
    Map<String, int[]> last = new HashMap<>();
    for (SimRequest r : rs) {
      int[] before = last.put(r.session(), r.tokens());
      if (before == null) {
        assertThat(r.tokens().length).isBetween(10_240 + 100, 10_240 + 400);
      } else {
        assertThat(Arrays.copyOf(r.tokens(), before.length)).isEqualTo(before);
      }
      assertThat(r.tokens().length).isLessThanOrEqualTo(10_240 + 6 * 1000);
    }
    assertThat(rs.get(rs.size() - 1).arrivalNanos() / 1e9).isBetween(120.0, 420.0);
  }

  @Test
  void rolloutBatchesSend16IdenticalSamplesOf8ProblemsAtOnce() {
    List<SimRequest> rs = Workloads.rlRollout(3, 2.0, 1);
    assertThat(rs).hasSize(3 * 128);
    Map<Integer, Integer> samples = new HashMap<>();
    for (SimRequest r : rs) {
      samples.merge(Arrays.hashCode(r.tokens()), 1, Integer::sum);
      long batch = r.arrivalNanos() / 2_000_000_000L; // 4 s / 2x
      assertThat(r.arrivalNanos() - batch * 2_000_000_000L).isLessThan(50_000_000L);
    }
    assertThat(samples).hasSize(24).allSatisfy((k, v) -> assertThat(v).isEqualTo(16));
  }

  @Test
  void varyingLoadSwingsBetweenQuietAndSurge() {
    List<SimRequest> rs = Workloads.varyingLoad(1.0, 1, 16);
    assertThat(rs).hasSize(4096);
    int[] perSecond = new int[64];
    for (SimRequest r : rs) {
      perSecond[(int) (r.arrivalNanos() / 1_000_000_000L)]++;
    }
    int last = (int) (rs.get(rs.size() - 1).arrivalNanos() / 1_000_000_000L);
    int lo = Integer.MAX_VALUE;
    int hi = 0;
    for (int s = 0; s < last; s++) {
      lo = Math.min(lo, perSecond[s]);
      hi = Math.max(hi, perSecond[s]);
    }
    assertThat(lo).as("quiet: ~0.25x of 160/s").isLessThan(90);
    assertThat(hi).as("surge: ~2x of 160/s").isGreaterThan(250);
  }
}
