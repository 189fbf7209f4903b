package dev.prefixrouter.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.EvaluationResult;
import dev.prefixrouter.api.archfixture.ApiOnly;
import dev.prefixrouter.api.archfixture.ApiUsingScoring;
import dev.prefixrouter.api.archfixture.LeakyReturn;
import dev.prefixrouter.api.archfixture.LeakyTypeArgument;
import dev.prefixrouter.bench.archfixture.BenchThing;
import dev.prefixrouter.radix.archfixture.RadixUsingApi;
import dev.prefixrouter.radix.archfixture.RadixUsingScoring;
import dev.prefixrouter.radix.archfixture.RadixUsingUnsafeHashing;
import dev.prefixrouter.redis.archfixture.RedisUsingScoring;
import dev.prefixrouter.scoring.archfixture.FullForwardingScorer;
import dev.prefixrouter.scoring.archfixture.HalfForwardingScorer;
import dev.prefixrouter.scoring.archfixture.ScoringUsingRadix;
import dev.prefixrouter.spring.archfixture.SpringUsingBench;
import dev.prefixrouter.vllm.archfixture.ConnectorUsingRadix;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Each wall catches a deliberate violation (test-only classes in {@code *.archfixture} packages)
 * and passes a clean control, so no rule in {@link WallsTest} holds only because it checks nothing.
 */
class WallsCanFailTest {

  private static JavaClasses classes(Class<?>... types) {
    return new ClassFileImporter().importClasses(types);
  }

  private static List<String> violations(ArchRule rule, Class<?>... types) {
    EvaluationResult result = rule.evaluate(classes(types));
    return result.getFailureReport().getDetails();
  }

  @Test
  void aScorerHandingOutLeaseTokensItNeverTakesBackFails() {
    assertThat(violations(Walls.SCORER_TOKENS_COME_BACK, HalfForwardingScorer.class))
        .anySatisfy(d -> assertThat(d).contains("HalfForwardingScorer").contains("onEnded"));
    assertThat(violations(Walls.SCORER_TOKENS_COME_BACK, FullForwardingScorer.class)).isEmpty();
  }

  @Test
  void apiReachingIntoAnotherModuleFails() {
    assertThat(violations(Walls.API_IMPORTS_NOTHING_OF_OURS, ApiUsingScoring.class))
        .anySatisfy(d -> assertThat(d).contains("ApiUsingScoring").contains("Policies"));
    assertThat(violations(Walls.API_IMPORTS_NOTHING_OF_OURS, ApiOnly.class)).isEmpty();
  }

  @Test
  void radixAndScoringReachingIntoEachOtherFail() {
    assertThat(violations(Walls.importsOnlyApi("radix"), RadixUsingScoring.class))
        .anySatisfy(d -> assertThat(d).contains("RadixUsingScoring").contains("Policies"));
    assertThat(violations(Walls.importsOnlyApi("scoring"), ScoringUsingRadix.class))
        .anySatisfy(d -> assertThat(d).contains("ScoringUsingRadix").contains("RadixPrefixIndex"));
    assertThat(violations(Walls.importsOnlyApi("radix"), RadixUsingApi.class)).isEmpty();
  }

  @Test
  void aConnectorReachingPastTheApiFails() {
    assertThat(violations(Walls.connectorImportsOnlyApi("vllm"), ConnectorUsingRadix.class))
        .anySatisfy(
            d -> assertThat(d).contains("ConnectorUsingRadix").contains("RadixPrefixIndex"));
    assertThat(violations(Walls.connectorImportsOnlyApi("redis"), RedisUsingScoring.class))
        .anySatisfy(
            d -> assertThat(d).contains("RedisUsingScoring").contains("TenantTokenBuckets"));
    // absent connector: nothing to check, no failure
    assertThat(violations(Walls.connectorImportsOnlyApi("redis"), RadixUsingApi.class)).isEmpty();
  }

  @Test
  void importingTheBenchmarksFails() {
    assertThat(
            violations(Walls.NOTHING_IMPORTS_BENCHMARKS, SpringUsingBench.class, BenchThing.class))
        .anySatisfy(d -> assertThat(d).contains("SpringUsingBench").contains("BenchThing"));
    assertThat(violations(Walls.NOTHING_IMPORTS_BENCHMARKS, ApiOnly.class, BenchThing.class))
        .isEmpty();
  }

  @Test
  void hashingThroughUnsafeFails() {
    assertThat(violations(Walls.NO_UNSAFE, RadixUsingUnsafeHashing.class))
        .anySatisfy(d -> assertThat(d).contains("RadixUsingUnsafeHashing").contains("openhft"));
    assertThat(violations(Walls.NO_UNSAFE, RadixUsingApi.class)).isEmpty();
  }

  @Test
  void anInternalTypeInAPublicOrProtectedSignatureFails() {
    assertThat(violations(Walls.NO_HIDDEN_TYPE_IN_PUBLIC_SIGNATURE, LeakyReturn.class))
        .anySatisfy(d -> assertThat(d).contains("hidden returns").contains("internal.Hidden"));
    assertThat(violations(Walls.NO_HIDDEN_TYPE_IN_PUBLIC_SIGNATURE, LeakyTypeArgument.class))
        .anySatisfy(d -> assertThat(d).contains("count takes").contains("internal.Hidden"));
    assertThat(violations(Walls.NO_HIDDEN_TYPE_IN_PUBLIC_SIGNATURE, ApiOnly.class)).isEmpty();
  }
}
