package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import org.junit.jupiter.api.Test;

/**
 * A scorer's {@link Scorer#name()} is a decision's reason when the scorer gives none: a scorer
 * without one is refused when the engine is built, not found out at the first route.
 */
class ScorerNameTest {

  /** Ranks as given, named {@code name}. */
  static final class NamedScorer implements Scorer {
    private final String name;

    NamedScorer(String name) {
      this.name = name;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public void score(ScoringContext ctx) {
      ctx.sortByCost(0);
    }
  }

  @Test
  void aScorerWithoutANameIsRefusedByTheBuilderNamingItsClass() {
    assertThatThrownBy(() -> RoutingEngine.builder().scorer(new NamedScorer(null)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("scorer")
        .hasMessageContaining(NamedScorer.class.getName())
        .hasMessageContaining("null");
  }

  @Test
  void aScorerWithABlankNameIsRefusedByTheBuilderNamingItsClassAndTheName() {
    assertThatThrownBy(() -> RoutingEngine.builder().scorer(new NamedScorer(" \t")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("scorer")
        .hasMessageContaining(NamedScorer.class.getName())
        .hasMessageContaining("' \t'");
    assertThatThrownBy(() -> RoutingEngine.builder().scorer(new NamedScorer("")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(NamedScorer.class.getName());
  }

  @Test
  void aNamedScorerIsTheReasonOfItsDecisions() {
    RoutingEngine engine =
        RoutingEngine.builder()
            .scorer(new NamedScorer("named"))
            .backend(Backend.of("a", "m"))
            .build();
    Routed r =
        (Routed)
            engine.route(RouteRequest.builder("t", "m").prompt(Prompt.ofTokens(1, 2, 3)).build());
    assertThat(r.reason()).isEqualTo("named");
  }
}
