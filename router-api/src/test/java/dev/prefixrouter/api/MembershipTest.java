package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.spi.HealthPolicy;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

class MembershipTest {

  /** Records the lifecycle calls a part receives. */
  static final class LifecycleScorer implements Scorer {
    final List<String> calls = Collections.synchronizedList(new ArrayList<>());

    @Override
    public String name() {
      return "lifecycle";
    }

    @Override
    public void score(ScoringContext ctx) {}

    @Override
    public void start(int maxBackends) {
      calls.add("start " + maxBackends);
    }

    @Override
    public void addBackend(int slot, Backend backend) {
      calls.add("add " + slot + " " + backend.id());
    }

    @Override
    public void updateBackend(int slot, Backend before, Backend after) {
      calls.add("update " + slot + " " + before.weight() + " -> " + after.weight());
    }

    @Override
    public void removeBackend(int slot) {
      calls.add("remove " + slot);
    }
  }

  @Test
  void everyPartGetsTheEnginesMaxBackendsAndTheSameLifecycle() {
    Fakes.RecordingIndex index =
        new Fakes.RecordingIndex() {
          @Override
          public void start(int maxBackends) {
            calls.add("start " + maxBackends);
          }
        };
    List<String> health = Collections.synchronizedList(new ArrayList<>());
    HealthPolicy breakers =
        new Fakes.SimpleBreaker(3) {
          @Override
          public void start(int maxBackends) {
            health.add("start " + maxBackends);
          }
        };
    LifecycleScorer scorer = new LifecycleScorer();
    RoutingEngine engine =
        RoutingEngine.builder()
            .maxBackends(300)
            .prefixIndex(index)
            .health(breakers)
            .scorer(scorer)
            .backend(Backend.of("a", "m"))
            .build();
    engine.backends().add(Backend.of("a", "m").withWeight(2));
    engine.backends().remove("a");
    assertThat(index.calls).startsWith("start 300", "add 0 0");
    assertThat(health).containsExactly("start 300");
    assertThat(scorer.calls)
        .containsExactly("start 300", "add 0 a", "update 0 1.0 -> 2.0", "remove 0");
  }

  @Test
  void aPartThatThrowsOnRemovalLeaksNoSlotAndTheOthersStillForget() {
    LifecycleScorer scorer = new LifecycleScorer();
    Fakes.RecordingIndex index =
        new Fakes.RecordingIndex() {
          @Override
          public void removeBackend(int slot) {
            throw new IllegalStateException("index bug");
          }
        };
    RoutingEngine engine =
        RoutingEngine.builder().maxBackends(1).prefixIndex(index).scorer(scorer).build();
    for (int i = 0; i < 3; i++) {
      engine.backends().add(Backend.of("b" + i, "m"));
      assertThatThrownBy(() -> engine.backends().remove(engine.backends().all().get(0).id()))
          .hasMessageContaining("index bug");
    }
    // the one slot was freed each time (the second add found none before), and the scorer,
    // a part after the index, forgot the slot each time
    assertThat(scorer.calls)
        .containsExactly(
            "start 1", "add 0 b0", "remove 0", "add 0 b1", "remove 0", "add 0 b2", "remove 0");
    assertThat(engine.backends().all()).isEmpty();
  }

  @Test
  void aPartThatCannotHoldTheEnginesSlotsFailsTheBuild() {
    Fakes.NoOpIndex small =
        new Fakes.NoOpIndex() {
          @Override
          public void start(int maxBackends) {
            if (maxBackends > 8) {
              throw new IllegalArgumentException(
                  "index holds 8 slots, engine wants " + maxBackends);
            }
          }
        };
    assertThatThrownBy(() -> RoutingEngine.builder().maxBackends(9).prefixIndex(small).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("engine wants 9");
  }
}
