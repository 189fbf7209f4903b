package dev.prefixrouter.radix;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.RoutingEngine;
import org.junit.jupiter.api.Test;

/** The engine hands its maxBackends down to an index that was not sized explicitly. */
class EngineSlotsTest {

  @Test
  void anEngineWith300SlotsGetsA300SlotIndex() {
    RoutingEngine engine =
        RoutingEngine.builder().maxBackends(300).prefixIndex(RadixPrefixIndex.create()).build();
    for (int i = 0; i < 300; i++) {
      engine.backends().add(Backend.of("b" + i, "m"));
    }
    assertThat(engine.backends().all()).hasSize(300);
  }

  @Test
  void anIndexSizedExplicitlyForFewerSlotsFailsTheBuildNamingBothSizes() {
    RadixPrefixIndex small = RadixPrefixIndex.builder().maxBackends(256).build();
    assertThatThrownBy(() -> RoutingEngine.builder().maxBackends(300).prefixIndex(small).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxBackends 256")
        .hasMessageContaining("maxBackends 300");
    RadixPrefixIndex large = RadixPrefixIndex.builder().maxBackends(512).build();
    RoutingEngine engine = RoutingEngine.builder().maxBackends(300).prefixIndex(large).build();
    engine.backends().add(Backend.of("b", "m"));
    assertThat(engine.backends().all()).hasSize(1);
  }

  @Test
  void aCapacityAboveTheIndexBoundIsRejectedAndChangesNothing() {
    RoutingEngine engine = RoutingEngine.builder().prefixIndex(RadixPrefixIndex.create()).build();
    long tooLarge = 1L << 40;
    assertThatThrownBy(
            () -> engine.backends().add(Backend.of("big", "m").withCapacityBlocks(tooLarge)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("capacityBlocks");
    assertThat(engine.backends().all()).isEmpty();

    engine.backends().add(Backend.of("b", "m").withCapacityBlocks(100));
    assertThatThrownBy(
            () -> engine.backends().add(Backend.of("b", "m").withCapacityBlocks(tooLarge)))
        .isInstanceOf(IllegalArgumentException.class);
    // the descriptor was not swapped while the index kept the old capacity
    assertThat(engine.backends().all())
        .singleElement()
        .extracting(Backend::capacityBlocks)
        .isEqualTo(100L);
    assertThat(engine.inspect().backends()).hasSize(1);
  }
}
