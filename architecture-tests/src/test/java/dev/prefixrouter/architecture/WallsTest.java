package dev.prefixrouter.architecture;

import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.CompositeArchRule;

/** The walls, checked on the main classes of every library module on this module's classpath. */
@AnalyzeClasses(packages = "dev.prefixrouter", importOptions = ImportOption.DoNotIncludeTests.class)
class WallsTest {

  @ArchTest static final ArchRule apiImportsNothingOfOurs = Walls.API_IMPORTS_NOTHING_OF_OURS;

  @ArchTest
  static final ArchRule indexAndScorersImportOnlyApi =
      CompositeArchRule.of(Walls.importsOnlyApi("radix")).and(Walls.importsOnlyApi("scoring"));

  @ArchTest
  static final ArchRule connectorsImportOnlyApi =
      CompositeArchRule.of(Walls.connectorImportsOnlyApi("vllm"))
          .and(Walls.connectorImportsOnlyApi("redis"));

  @ArchTest static final ArchRule nothingImportsBenchmarks = Walls.NOTHING_IMPORTS_BENCHMARKS;

  @ArchTest static final ArchRule noUnsafe = Walls.NO_UNSAFE;

  @ArchTest static final ArchRule scorerTokensComeBack = Walls.SCORER_TOKENS_COME_BACK;

  @ArchTest
  static final ArchRule noImplOrInternalTypeInAPublicSignature =
      Walls.NO_HIDDEN_TYPE_IN_PUBLIC_SIGNATURE;
}
