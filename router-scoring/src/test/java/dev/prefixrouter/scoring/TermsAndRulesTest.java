package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.spi.SessionPins;
import java.util.HashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

class TermsAndRulesTest {

  @Test
  void theDefaultScorerDeclaresItsTermsAndRulesInOrder() {
    EstimatedTtftScorer s = EstimatedTtftScorer.defaults();
    assertThat(s.termNames())
        .containsExactly(
            "kv-pressure",
            "congestion",
            "queue-prefill",
            "lower-tier",
            "cache-pressure",
            "future-wait",
            "parallel-start",
            "replica-value",
            "balance",
            "extra-work");
    assertThat(s.ruleNames())
        .containsExactly("replica-pacing", "tie-band", "prefix-affinity", "session-affinity");
    EstimatedTtftScorer lean =
        EstimatedTtftScorer.builder()
            .without("balance")
            .without("future-wait")
            .without("session-affinity")
            .build();
    assertThat(lean.termNames()).doesNotContain("balance", "future-wait");
    assertThat(lean.ruleNames()).containsExactly("tie-band", "prefix-affinity");
  }

  @Test
  void anAddedTermIsSummedAndCanDecideWithItsReason() {
    // a term that charges b0 10 s: b0 holds the prompt and would win on the estimate alone
    CostTerm avoidB0 =
        new CostTerm() {
          @Override
          public String name() {
            return "avoid-b0";
          }

          @Override
          public void costs(Candidates c, double[] out) {
            for (int i = 0; i < c.size(); i++) {
              out[i] = c.ctx().backend(i).id().equals("b0") ? 10_000 : 0;
            }
          }

          @Override
          public @Nullable String reason(Candidates c) {
            return c.termCost(this, c.order()[0]) == 0 ? "avoided b0" : null;
          }
        };
    EstimatedTtftScorer s = EstimatedTtftScorer.builder().calibrate(false).addTerm(avoidB0).build();
    FakeContext ctx = new FakeContext(2);
    ctx.promptTokens = 4096;
    ctx.matchedBlocks[0] = 256;
    s.score(ctx);
    assertThat(ctx.best()).isEqualTo(1);
    assertThat(ctx.reason).isEqualTo("avoided b0");
    TtftCoefficients k = TtftCoefficients.DEFAULTS;
    assertThat(ctx.cost(0)).isCloseTo(k.prefillMs(0, 4096) + 10_000, within(1e-6));

    EstimatedTtftScorer plain = EstimatedTtftScorer.builder().calibrate(false).build();
    plain.score(ctx);
    assertThat(ctx.best()).as("without the term the holder wins").isEqualTo(0);
  }

  @Test
  void costWithoutSkipsTheAskedTermWhicheverWasAskedBefore() {
    // two added terms; a rule asks costWithout for one, then the other, then the first again:
    // each answer is the plain sum minus that term alone, summed in the declared order
    CostTerm a = constantTerm("a", 7);
    CostTerm b = constantTerm("b", 1000);
    double[][] seen = new double[4][];
    RankRule ask =
        new RankRule() {
          @Override
          public String name() {
            return "ask";
          }

          @Override
          public @Nullable String apply(Candidates c) {
            int n = c.size();
            for (int q = 0; q < 4; q++) {
              seen[q] = new double[n];
            }
            for (int i = 0; i < n; i++) {
              seen[0][i] = c.costWithout(i, a);
            }
            for (int i = 0; i < n; i++) {
              seen[1][i] = c.costWithout(i, b);
              seen[2][i] = c.costWithout(i, a);
              seen[3][i] = c.plainCost(i);
            }
            return null;
          }
        };
    EstimatedTtftScorer s =
        EstimatedTtftScorer.builder()
            .calibrate(false)
            .without("balance")
            .addTerm(a)
            .addTerm(b)
            .addRule(ask)
            .build();
    FakeContext ctx = new FakeContext(3);
    ctx.promptTokens = 4096;
    ctx.matchedBlocks[1] = 128;
    s.score(ctx);
    for (int i = 0; i < 3; i++) {
      double plain = seen[3][i];
      assertThat(seen[0][i]).isCloseTo(plain - 7 * (i + 1), within(1e-9));
      assertThat(seen[1][i]).isCloseTo(plain - 1000 * (i + 1), within(1e-9));
      assertThat(seen[2][i]).isEqualTo(seen[0][i]);
    }
  }

  /** A term that charges candidate i {@code ms × (i + 1)}. */
  private static CostTerm constantTerm(String name, double ms) {
    return new CostTerm() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public void costs(Candidates c, double[] out) {
        for (int i = 0; i < c.size(); i++) {
          out[i] = ms * (i + 1);
        }
      }
    };
  }

  @Test
  void anAddedRuleRunsAfterTheBuiltInOnesAndItsReasonWins() {
    RankRule lastBackend =
        new RankRule() {
          @Override
          public String name() {
            return "last";
          }

          @Override
          public @Nullable String apply(Candidates c) {
            int[] order = c.order();
            for (int r = 0; r < c.size(); r++) {
              if (order[r] == c.size() - 1) {
                c.promote(r);
                return "last backend";
              }
            }
            return null;
          }
        };
    EstimatedTtftScorer s =
        EstimatedTtftScorer.builder().calibrate(false).addRule(lastBackend).build();
    FakeContext ctx = new FakeContext(3);
    ctx.inFlight[0] = 0;
    ctx.inFlight[1] = 1;
    ctx.inFlight[2] = 2;
    s.score(ctx);
    assertThat(ctx.order).containsExactly(2, 0, 1);
    assertThat(ctx.reason).isEqualTo("last backend");
  }

  @Test
  void namesAreCheckedAtBuild() {
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().without("nope"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'nope'")
        .hasMessageContaining("queue-prefill");
    CostTerm dup =
        new CostTerm() {
          @Override
          public String name() {
            return "balance";
          }

          @Override
          public void costs(Candidates c, double[] out) {
            java.util.Arrays.fill(out, 0, c.size(), 0.0);
          }
        };
    assertThatThrownBy(() -> EstimatedTtftScorer.builder().addTerm(dup).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'balance'");
    // without the built-in balance, the name is free
    assertThat(EstimatedTtftScorer.builder().without("balance").addTerm(dup).build().termNames())
        .endsWith("balance");
  }

  @Test
  void policyVariantsLeaveTermsOut() {
    EstimatedTtftScorer v =
        (EstimatedTtftScorer) Policies.byName("est-ttft/-balance/-cache-pressure/-lower-tier");
    assertThat(v.name()).isEqualTo("est-ttft/-balance/-cache-pressure/-lower-tier");
    assertThat(v.termNames())
        .containsExactly(
            "kv-pressure",
            "congestion",
            "queue-prefill",
            "future-wait",
            "parallel-start",
            "replica-value",
            "extra-work");
    assertThat(Policies.isKnown("est-ttft/-tie-band")).isTrue();
    assertThat(Policies.isKnown("est-ttft/-nope")).isFalse();
    assertThat(Policies.isKnown("est-ttft/balance")).isFalse();
    assertThatThrownBy(() -> Policies.byName("est-ttft/x"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("-<term or rule>");
  }

  /**
   * A pin store keyed by backend id, as a shared (e.g. Redis) one would be; counts its reads (the
   * {@link SessionPins} contract: at most one per route).
   */
  static final class MapPins implements SessionPins {
    final Map<String, String> pins = new HashMap<>();
    int reads;

    @Override
    public @Nullable String backendOf(String sessionKey) {
      reads++;
      return pins.get(sessionKey);
    }

    @Override
    public void pin(String sessionKey, String backendId) {
      pins.put(sessionKey, backendId);
    }

    @Override
    public void forgetBackend(String backendId) {
      pins.values().removeIf(backendId::equals);
    }

    @Override
    public long size() {
      return pins.size();
    }
  }

  @Test
  void sessionPinsAreKeptByBackendIdInTheConfiguredStore() {
    MapPins pins = new MapPins();
    EstimatedTtftScorer s =
        EstimatedTtftScorer.builder().calibrate(false).sessionPins(pins).build();
    FakeContext ctx = new FakeContext(3);
    for (int i = 0; i < 3; i++) {
      s.addBackend(i, ctx.backends[i]);
    }
    ctx.request = RouteRequest.builder("acme", "m").session("chat-1").build();
    ctx.inFlight[0] = 1;
    ctx.inFlight[1] = 1; // b2 wins the first time
    s.score(ctx);
    s.onRouted(ctx, ctx.best());
    assertThat(pins.pins).containsEntry("4:acmechat-1", "b2");
    assertThat(s.pinnedSessions()).isEqualTo(1);

    // another replica's pin, seen through the shared store: b0, though b1 is as cheap (the
    // session's next request, 10 s later: not a parallel sibling)
    pins.pin("4:acmechat-1", "b0");
    ctx.now += 10_000_000_000L;
    ctx.inFlight[0] = 0;
    ctx.inFlight[1] = 0;
    ctx.inFlight[2] = 2;
    s.score(ctx);
    assertThat(ctx.best()).isEqualTo(0);
    assertThat(ctx.reason).isEqualTo("session affinity");

    // a pin to a backend that is not a candidate is ignored
    pins.pin("4:acmechat-1", "gone");
    s.score(ctx);
    assertThat(ctx.reason).isNotEqualTo("session affinity");

    pins.pin("4:acmechat-1", "b1");
    s.removeBackend(1);
    assertThat(pins.pins).as("a removed backend's pins are dropped").isEmpty();
  }

  @Test
  void inProcessPinsValidateTheirBounds() {
    assertThatThrownBy(() -> InProcessSessionPins.create(java.time.Duration.ofMinutes(1), 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxSessions");
    InProcessSessionPins p = InProcessSessionPins.create(java.time.Duration.ofMinutes(1), 10);
    p.pin("k", "b1");
    assertThat(p.backendOf("k")).isEqualTo("b1");
    p.forgetBackend("b1");
    assertThat(p.backendOf("k")).isNull();
  }

  @Test
  void backendIdsArePerSlot() {
    MapPins pins = new MapPins();
    EstimatedTtftScorer s = EstimatedTtftScorer.builder().sessionPins(pins).build();
    s.addBackend(70, Backend.of("far", "m")); // beyond the initial table
    pins.pin("x", "far");
    s.removeBackend(70);
    assertThat(pins.pins).isEmpty();
  }
}
