package dev.prefixrouter.architecture;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/** The modules the parent pom lists, read from the poms on disk (this module's parent folder). */
final class Reactor {
  private static final Pattern MODULE = Pattern.compile("<module>([^<]+)</module>");
  private static final Pattern OWN_ARTIFACT =
      Pattern.compile("</parent>\\s*<artifactId>([^<]+)</artifactId>");

  /**
   * One module: its folder, its own artifactId, whether it is deployed, and one class of its main
   * sources (empty for a module without Java sources, such as the BOM).
   */
  record Module(String folder, String artifactId, boolean published, Optional<String> probe) {}

  private Reactor() {}

  static Path root() {
    return Path.of(System.getProperty("basedir", ".")).toAbsolutePath().getParent();
  }

  static List<Module> modules() throws IOException {
    Path root = root();
    Matcher m = MODULE.matcher(Files.readString(root.resolve("pom.xml")));
    List<Module> out = new ArrayList<>();
    while (m.find()) {
      String folder = m.group(1).trim();
      String pom = Files.readString(root.resolve(folder).resolve("pom.xml"));
      Matcher a = OWN_ARTIFACT.matcher(pom);
      String artifactId = a.find() ? a.group(1) : ownArtifactWithoutParent(pom);
      boolean published = !pom.contains("<maven.deploy.skip>true</maven.deploy.skip>");
      out.add(
          new Module(
              folder, artifactId, published, someMainClass(root.resolve(folder), "src/main/java")));
    }
    return out;
  }

  /** A pom without a parent (the BOM): the artifactId after its groupId. */
  private static String ownArtifactWithoutParent(String pom) {
    Matcher a =
        Pattern.compile("<groupId>[^<]+</groupId>\\s*<artifactId>([^<]+)</artifactId>")
            .matcher(pom);
    if (!a.find()) {
      throw new IllegalStateException("no artifactId in pom:\n" + pom);
    }
    return a.group(1);
  }

  private static Optional<String> someMainClass(Path module, String dir) throws IOException {
    Path sources = module.resolve(dir);
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
}
