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
}
