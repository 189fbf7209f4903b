package dev.prefixrouter.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The README's properties table lists every property of the generated metadata. */
class ReadmePropertiesTest {
  @Test
  void everyConfigurationPropertyIsDocumentedInTheReadme() throws Exception {
    String metadata =
        Files.readString(Path.of("target/classes/META-INF/spring-configuration-metadata.json"));
    String readme = Files.readString(Path.of("../README.md"));
    String properties = metadata.substring(metadata.indexOf("\"properties\""));
    Matcher m =
        Pattern.compile("\"name\"\\s*:\\s*\"(prefix-router\\.[^\"]+)\"").matcher(properties);
    List<String> names = new ArrayList<>();
    while (m.find()) {
      names.add(m.group(1));
    }
    assertThat(names).hasSizeGreaterThan(20);
    for (String n : names) {
      assertThat(readme).as("README lists %s", n).contains("`" + n + "`");
    }
  }
}
