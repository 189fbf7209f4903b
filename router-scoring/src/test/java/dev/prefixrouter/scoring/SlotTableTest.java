package dev.prefixrouter.scoring;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class SlotTableTest {

  @Test
  void createsOncePerSlotUntilRemoved() {
    SlotTable<StringBuilder> t = new SlotTable<>(new Object());
    AtomicInteger created = new AtomicInteger();
    assertThat(t.get(3)).isNull();
    assertThat(t.get(-1)).isNull();
    StringBuilder a = t.getOrCreate(3, () -> new StringBuilder("v" + created.incrementAndGet()));
    assertThat(t.getOrCreate(3, () -> new StringBuilder("again"))).isSameAs(a);
    assertThat(t.get(3)).isSameAs(a);
    assertThat(created).hasValue(1);
    StringBuilder far = t.getOrCreate(200, StringBuilder::new); // grows past the first 64
    assertThat(t.get(200)).isSameAs(far);
    assertThat(t.get(3)).isSameAs(a);

    t.remove(3);
    t.remove(9999); // never used: nothing to forget
    assertThat(t.get(3)).isNull();
    assertThat(t.get(200)).isSameAs(far);
    assertThat(t.getOrCreate(3, () -> new StringBuilder("fresh")).toString()).isEqualTo("fresh");
  }
}
