package dev.prefixrouter.api.archfixture;

import dev.prefixrouter.api.archfixture.internal.Hidden;
import java.util.List;

/** Violates: an internal type as the type argument of a protected parameter. */
public class LeakyTypeArgument {
  protected int count(List<Hidden> hidden) {
    return hidden.size();
  }
}
