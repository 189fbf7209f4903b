package dev.prefixrouter.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.Backend;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The encoder refuses what the decoder would refuse, with a message naming the limit. */
class BackendStateTest {

  @Test
  void roundTrips() {
    Backend b = Backend.of("b0", "m", "m2").withLabel("zone", "z1").withCapacityBlocks(5);
    BackendState s = new BackendState("b0", b, true, 42L);
    assertThat(BackendState.decode(s.encode())).isEqualTo(s);
    BackendState gone = new BackendState("b0", null, false, 43L);
    assertThat(BackendState.decode(gone.encode())).isEqualTo(gone);
  }

  @Test
  void aStringOverTheLimitIsRefusedWithAClearMessage() {
    Backend b = Backend.of("b0", "m").withLabel("notes", "x".repeat(70_000));
    assertThatThrownBy(() -> new BackendState("b0", b, false, 1L).encode())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("backend b0 has a string longer than 65535 bytes");
    Backend fits = Backend.of("b0", "m").withLabel("notes", "x".repeat(65_535));
    BackendState s = new BackendState("b0", fits, false, 1L);
    assertThat(BackendState.decode(s.encode())).isEqualTo(s);
  }

  @Test
  void moreEntriesThanTheDecoderAcceptsAreRefusedWhenEncoding() {
    Set<String> models = new HashSet<>();
    for (int i = 0; i < 4_097; i++) {
      models.add("lora-" + i);
    }
    Backend many = new Backend("b1", models, Set.of(), Map.of(), 0, 1.0);
    assertThatThrownBy(() -> new BackendState("b1", many, false, 1L).encode())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("backend b1 lists 4097 models, more than 4096");
    models.remove("lora-0");
    Backend fits = new Backend("b1", models, Set.of(), Map.of(), 0, 1.0);
    BackendState s = new BackendState("b1", fits, false, 1L);
    assertThat(BackendState.decode(s.encode())).isEqualTo(s);
  }
}
