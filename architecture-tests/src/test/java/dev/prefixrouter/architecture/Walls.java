package dev.prefixrouter.architecture;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAnyPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaCodeUnit;
import com.tngtech.archunit.core.domain.JavaField;
import com.tngtech.archunit.core.domain.JavaMember;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.domain.JavaType;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The module walls (README, Modules) as ArchUnit rules, by package: router-api imports nothing of
 * ours; the index, the scorers and the connectors import only router-api and never each other;
 * nothing imports the benchmarks; no type of an {@code impl} or {@code internal} package appears in
 * a public signature; no library class reads memory through {@code sun.misc.Unsafe}, directly or
 * through zero-allocation-hashing. {@link WallsTest} checks them on every library module's classes;
 * {@link WallsCanFailTest} checks that each one catches a violation.
 */
final class Walls {
  private Walls() {}

  static final String OURS = "dev.prefixrouter..";
  static final String API = "dev.prefixrouter.api..";
  static final String BENCH = "dev.prefixrouter.bench..";

  static final Set<String> HIDDEN = Set.of("..impl..", "..internal..");

  /** router-api depends on no class of ours outside {@code dev.prefixrouter.api}. */
  static final ArchRule API_IMPORTS_NOTHING_OF_OURS =
      noClasses()
          .that()
          .resideInAPackage(API)
          .should()
          .dependOnClassesThat(resideInAPackage(OURS).and(not(resideInAPackage(API))))
          .because("router-api is the contract every other module builds on");

  /**
   * Module {@code dev.prefixrouter.<name>} depends on nothing of ours but router-api and itself.
   */
  static ArchRule importsOnlyApi(String name) {
    String own = "dev.prefixrouter." + name + "..";
    return noClasses()
        .that()
        .resideInAPackage(own)
        .should()
        .dependOnClassesThat(resideInAPackage(OURS).and(not(resideInAnyPackage(API, own))))
        .because(
            "the index, the scorers and the connectors plug into router-api only, never into"
                + " each other");
  }

  /** A connector's rule: the same wall, allowed to match no class while the module is absent. */
  static ArchRule connectorImportsOnlyApi(String name) {
    return importsOnlyApi(name).allowEmptyShould(true);
  }

  static final ArchRule NOTHING_IMPORTS_BENCHMARKS =
      noClasses()
          .that()
          .resideOutsideOfPackage(BENCH)
          .should()
          .dependOnClassesThat()
          .resideInAPackage(BENCH)
          .because("benchmarks are never published; a library class that needs one is misplaced");

  /**
   * No library class uses {@code sun.misc.Unsafe} or zero-allocation-hashing (which reads memory
   * through it): Java 24+ warns on its memory-access methods in every application that embeds the
   * router, and later releases remove them. The benchmarks compare against that library and may.
   */
  static final ArchRule NO_UNSAFE =
      noClasses()
          .that()
          .resideOutsideOfPackage(BENCH)
          .should()
          .dependOnClassesThat()
          .resideInAnyPackage("sun.misc..", "net.openhft.hashing..")
          .because(
              "sun.misc.Unsafe's memory access warns on Java 24+ and is being removed; the hashers"
                  + " are pinned to zero-allocation-hashing's values in tests only");

  /**
   * A scorer that keeps a per-lease token ({@code onRoutedLease}) also takes it back ({@code
   * onEnded(int, Object)}): a wrapper forwarding one and not the other would leak its delegate's
   * per-lease state (the default {@code onEnded(int, Object)} drops the token).
   */
  static final ArchRule SCORER_TOKENS_COME_BACK =
      classes()
          .that()
          .implement("dev.prefixrouter.api.spi.Scorer")
          .should(declareBothOrNeither())
          .because("a lease token handed out must be handed back when the lease ends");

  private static ArchCondition<JavaClass> declareBothOrNeither() {
    return new ArchCondition<>("declare onEnded(int, Object) if they declare onRoutedLease") {
      @Override
      public void check(JavaClass c, ConditionEvents events) {
        boolean routed =
            c.tryGetMethod("onRoutedLease", "dev.prefixrouter.api.spi.ScoringContext", "int")
                .isPresent();
        boolean ended = c.tryGetMethod("onEnded", "int", "java.lang.Object").isPresent();
        if (routed && !ended) {
          events.add(
              SimpleConditionEvent.violated(
                  c,
                  c.getName()
                      + " declares onRoutedLease but not onEnded(int, Object): its tokens are"
                      + " never handed back"));
        }
      }
    };
  }

  static final ArchRule NO_HIDDEN_TYPE_IN_PUBLIC_SIGNATURE =
      classes()
          .that()
          .arePublic()
          .and()
          .resideOutsideOfPackages(HIDDEN.toArray(String[]::new))
          .should(exposeNoHiddenType())
          .because("an impl or internal type in a public signature makes it API in all but name");

  /**
   * The supertypes and every public or protected field, constructor and method of a class name no
   * type (type arguments included) from an {@code impl} or {@code internal} package.
   */
  private static ArchCondition<JavaClass> exposeNoHiddenType() {
    return new ArchCondition<>("expose no type of an impl or internal package") {
      @Override
      public void check(JavaClass c, ConditionEvents events) {
        List<String> leaks = new ArrayList<>();
        c.getSuperclass().ifPresent(t -> leaks(t, "extends", leaks));
        for (JavaType t : c.getInterfaces()) {
          leaks(t, "implements", leaks);
        }
        for (JavaMember m : c.getMembers()) {
          if (!m.getModifiers().contains(JavaModifier.PUBLIC)
              && !m.getModifiers().contains(JavaModifier.PROTECTED)) {
            continue;
          }
          if (m instanceof JavaField f) {
            leaks(f.getType(), f.getName(), leaks);
          } else if (m instanceof JavaCodeUnit u) {
            leaks(u.getReturnType(), u.getName() + " returns", leaks);
            for (JavaType p : u.getParameterTypes()) {
              leaks(p, u.getName() + " takes", leaks);
            }
            u.getThrowsClause().getTypes().forEach(t -> leaks(t, u.getName() + " throws", leaks));
          }
        }
        for (String leak : leaks) {
          events.add(SimpleConditionEvent.violated(c, c.getName() + ": " + leak));
        }
      }
    };
  }

  private static void leaks(JavaType type, String where, List<String> out) {
    for (JavaClass raw : type.getAllInvolvedRawTypes()) {
      String pkg = "." + raw.getPackageName() + ".";
      if (pkg.contains(".impl.") || pkg.contains(".internal.")) {
        out.add(where + " " + raw.getName());
      }
    }
  }
}
