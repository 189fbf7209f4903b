package dev.prefixrouter.architecture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;

/**
 * The rules only see what this module sees, and the published artifacts follow one convention:
 * every module of the parent pom with main sources (but the benchmarks, which may import anything
 * and which nothing imports) is a test dependency here; every module is named {@code
 * prefix-router-<folder>} (without the folder's {@code router-}) and listed in the BOM; every
 * library jar names its module.
 */
class ReactorCoverageTest {
  private static final List<String> NOT_CHECKED = List.of("benchmarks", "architecture-tests");

  @Test
  void everyLibraryModuleIsOnThisClasspath() throws IOException {
    List<String> checked = new ArrayList<>();
    List<String> missing = new ArrayList<>();
    for (Reactor.Module m : Reactor.modules()) {
      if (NOT_CHECKED.contains(m.folder()) || m.probe().isEmpty()) {
        continue;
      }
      checked.add(m.folder());
      if (location(m.probe().get()) == null) {
        missing.add(m.folder() + " (" + m.probe().get() + " not found)");
      }
    }
    assertThat(missing)
        .as(
            "modules of the parent pom whose classes the wall rules would not see; add each as a"
                + " test dependency in architecture-tests/pom.xml")
        .isEmpty();
    assertThat(checked).contains("router-api", "router-radix", "router-scoring");
  }

  @Test
  void everyPublishedModuleIsNamedAfterItsFolderAndListedInTheBom() throws IOException {
    String bom = Files.readString(Reactor.root().resolve("bom/pom.xml"));
    List<String> problems = new ArrayList<>();
    int published = 0;
    for (Reactor.Module m : Reactor.modules()) {
      String expected = "prefix-router-" + m.folder().replaceFirst("^router-", "");
      if (!m.artifactId().equals(expected)) {
        problems.add(m.folder() + ": artifactId " + m.artifactId() + ", not " + expected);
      }
      if (m.published() && m.probe().isPresent()) {
        published++;
        if (!bom.contains("<artifactId>" + m.artifactId() + "</artifactId>")) {
          problems.add(m.folder() + ": " + m.artifactId() + " is published but not in bom/pom.xml");
        }
      }
    }
    assertThat(problems).isEmpty();
    assertThat(published).isGreaterThanOrEqualTo(4);
    // the BOM does not inherit the parent: its version and its spotless pin must follow it
    String parent = Files.readString(Reactor.root().resolve("pom.xml"));
    assertThat(first("<version>([^<]+)</version>", bom))
        .isEqualTo(first("<version>([^<]+)</version>", parent));
    assertThat(bom)
        .contains(
            "<version>" + first("<spotless-maven-plugin.version>([^<]+)<", parent) + "</version>");
  }

  private static String first(String regex, String text) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile(regex).matcher(text);
    assertThat(m.find()).as(regex).isTrue();
    return m.group(1);
  }

  /** Only when the reactor resolved the modules to their jars (a run through {@code package}). */
  @Test
  void everyLibraryJarNamesItsModule() throws IOException {
    Map<String, String> names = new HashMap<>();
    List<String> problems = new ArrayList<>();
    for (Reactor.Module m : Reactor.modules()) {
      if (NOT_CHECKED.contains(m.folder()) || m.probe().isEmpty()) {
        continue;
      }
      Path jar = location(m.probe().get());
      if (jar == null || !jar.toString().endsWith(".jar")) {
        continue;
      }
      String name;
      try (JarFile file = new JarFile(jar.toFile())) {
        name = file.getManifest().getMainAttributes().getValue("Automatic-Module-Name");
      }
      String pkg = m.probe().get().substring(0, m.probe().get().lastIndexOf('.'));
      if (name == null || !name.matches("dev\\.prefixrouter\\.[a-z][a-z0-9]*")) {
        problems.add(m.folder() + ": Automatic-Module-Name " + name);
      } else if (!(pkg + ".").startsWith(name + ".")) {
        problems.add(m.folder() + ": Automatic-Module-Name " + name + " does not own " + pkg);
      } else if (names.put(name, m.folder()) != null) {
        problems.add(m.folder() + ": Automatic-Module-Name " + name + " used twice");
      }
    }
    assumeTrue(!names.isEmpty() || !problems.isEmpty(), "modules resolved to classes, not jars");
    assertThat(problems).isEmpty();
  }

  private static Path location(String className) {
    try {
      Class<?> c = Class.forName(className, false, ReactorCoverageTest.class.getClassLoader());
      return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
    } catch (ClassNotFoundException e) {
      return null;
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }
}
