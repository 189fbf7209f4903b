package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;

import dev.prefixrouter.api.spi.HealthPolicy;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The pipeline's eligibility fast path ({@link EligibilityFilter#firstFleetFilter}, taken for a
 * request that requires no capability or label and excludes nothing) answers as the full filter
 * list would: fails if a filter is added to or reordered in {@code BEFORE_SCORING} without the fast
 * path following.
 */
class EligibilityFastPathTest {

  /** A health policy whose slots are open (unhealthy) where {@code open} says. */
  private static HealthPolicy health(boolean[] open) {
    return new HealthPolicy() {
      @Override
      public void addBackend(int slot, Backend backend) {}

      @Override
      public void removeBackend(int slot) {}

      @Override
      public HealthState state(int slot, long nowNanos) {
        return open[slot] ? HealthState.OPEN : HealthState.CLOSED;
      }

      @Override
      public boolean tryAcquire(int slot, long nowNanos) {
        return !open[slot];
      }

      @Override
      public void onSuccess(int slot, long nowNanos) {}

      @Override
      public void onFailure(int slot, Failure failure, long nowNanos) {}
    };
  }

  @Test
  void fastPathAgreesWithTheFullFilterListForPlainRequests() {
    qt().withExamples(500)
        .forAll(integers().between(0, 63), integers().between(0, 3))
        .checkAssert(
            (bits, modelChoice) -> {
              String model = modelChoice == 0 ? "other" : "m";
              Backend b = Backend.of("b", "m");
              if ((bits & 1) != 0) {
                b = b.withCapability("vision");
              }
              if ((bits & 2) != 0) {
                b = b.withLabel("zone", "a");
              }
              if ((bits & 4) != 0) {
                b = b.withModel("other");
              }
              BackendEntry e = new BackendEntry(0, b);
              e.draining = (bits & 8) != 0;
              e.removed = (bits & 16) != 0;
              HealthPolicy health = health(new boolean[] {(bits & 32) != 0});
              RouteRequest plain =
                  RouteRequest.builder("t", model).prompt(Prompt.ofTokens(new int[16])).build();
              EligibilityFilter full = null;
              for (EligibilityFilter f : RoutePipeline.BEFORE_SCORING) {
                if (f.rejects(e, model, plain, List.of(), health, 0)) {
                  full = f;
                  break;
                }
              }
              assertThat(EligibilityFilter.firstFleetFilter(e, model, health, 0))
                  .as("backend bits %s, model %s", Integer.toBinaryString(bits), model)
                  .isEqualTo(full);
            });
  }

  @Test
  void theFastPathCoversTheFirstFiltersInOrder() {
    assertThat(Arrays.asList(RoutePipeline.BEFORE_SCORING).subList(0, 3))
        .containsExactly(
            EligibilityFilter.MODEL, EligibilityFilter.DRAINING, EligibilityFilter.HEALTH);
  }
}
