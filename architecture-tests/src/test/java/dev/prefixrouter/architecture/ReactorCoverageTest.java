package dev.prefixrouter.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The walls are only checked on classes this module sees: every module of the parent pom that has
 * main sources (all but the benchmarks, which may import anything and which nothing imports) must
 * be a test dependency here.
 */
class ReactorCoverageTest {
  private static final Pattern MODULE = Pattern.compile("<module>([^<]+)</module>");
  private static final List<String> NOT_CHECKED = List.of("benchmarks", "architecture-tests");

  @Test
  void everyLibraryModuleIsOnThisClasspath() throws IOException {
    Path root = Path.of(System.getProperty("basedir", ".")).toAbsolutePath().getParent();
    Matcher m = MODULE.matcher(Files.readString(root.resolve("pom.xml")));
    List<String> checked = new ArrayList<>();
    List<String> missing = new ArrayList<>();
    while (m.find()) {
      String module = m.group(1).trim();
      if (NOT_CHECKED.contains(module)) {
        continue;
      }
      Optional<String> probe = someMainClass(root.resolve(module).resolve("src/main/java"));
      if (probe.isEmpty()) {
        continue; // no Java sources (a BOM): nothing to wall in
      }
      checked.add(module);
      if (!loadable(probe.get())) {
        missing.add(module + " (" + probe.get() + " not found)");
      }
    }
    assertThat(missing)
        .as(
            "modules of the parent pom whose classes the wall rules would not see; add each as a"
                + " test dependency in architecture-tests/pom.xml")
        .isEmpty();
    assertThat(checked).contains("router-api", "router-radix", "router-scoring");
  }

  private static Optional<String> someMainClass(Path sources) throws IOException {
    if (!Files.isDirectory(sources)) {
      return Optional.empty();
    }
    try (Stream<Path> files = Files.walk(sources)) {
      return files
          .filter(p -> p.toString().endsWith(".java"))
          .filter(p -> !p.getFileName().toString().contains("-"))
          .sorted()
          .findFirst()
          .map(p -> sources.relativize(p).toString().replace(".java", "").replace('/', '.'));
    }
  }

  private static boolean loadable(String className) {
    try {
      Class.forName(className, false, ReactorCoverageTest.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException e) {
      return false;
    }
  }
}
