package dev.prefixrouter.api.archfixture;

import dev.prefixrouter.api.Backend;
import java.util.List;

/** Clean: router-api types only, and a hidden type used privately. */
public final class ApiOnly {
  private final dev.prefixrouter.api.archfixture.internal.Hidden hidden =
      new dev.prefixrouter.api.archfixture.internal.Hidden();

  public List<Backend> backends() {
    return List.of(Backend.of("b0", "m"));
  }

  int hiddenCount() {
    return hidden.hashCode();
  }
}
