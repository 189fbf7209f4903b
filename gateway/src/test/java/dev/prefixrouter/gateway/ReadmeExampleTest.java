package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.Rejected;
import java.io.StringWriter;
import java.lang.reflect.Method;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's example compiles as pasted: its first Java block after "## Example" is compiled, as
 * one file, against this module's test classpath (every library module is on it), and its {@code
 * status(Rejected)} maps every {@code RejectReason} as the gateway does ({@link OpenAiErrors}).
 */
class ReadmeExampleTest {

  @Test
  void theReadmeExampleCompilesAsPasted(@TempDir Path out) throws Exception {
    String readme = Files.readString(Path.of("../README.md"), StandardCharsets.UTF_8);
    int section = readme.indexOf("\n## Example");
    assertThat(section).as("README has an Example section").isPositive();
    Matcher m = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL).matcher(readme);
    assertThat(m.find(section)).as("a java block in the Example section").isTrue();
    String source = m.group(1);
    assertThat(source).contains("import dev.prefixrouter.api.RoutingEngine;");
    Matcher cls =
        Pattern.compile("(?m)^(?:abstract |final )?(?:public )?class (\\w+)").matcher(source);
    assertThat(cls.find()).as("the example declares a class").isTrue();

    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    StringWriter diagnostics = new StringWriter();
    JavaFileObject file =
        new SimpleJavaFileObject(
            URI.create("string:///" + cls.group(1) + ".java"), JavaFileObject.Kind.SOURCE) {
          @Override
          public CharSequence getCharContent(boolean ignoreEncodingErrors) {
            return source;
          }
        };
    boolean ok =
        javac
            .getTask(
                diagnostics,
                null,
                null,
                List.of(
                    "-d",
                    out.toString(),
                    "-classpath",
                    System.getProperty("java.class.path"),
                    "-proc:none",
                    "-Xlint:none"),
                null,
                List.of(file))
            .call();
    assertThat(ok).as("javac:%n%s", diagnostics).isTrue();

    // its RejectReason -> HTTP mapping is the gateway's, for every reason
    try (URLClassLoader loader =
        new URLClassLoader(new URL[] {out.toUri().toURL()}, getClass().getClassLoader())) {
      Method status = loader.loadClass(cls.group(1)).getDeclaredMethod("status", Rejected.class);
      status.setAccessible(true);
      for (Rejected r : OpenAiErrorsTest.everyRejection(Duration.ZERO)) {
        assertThat((int) status.invoke(null, r))
            .as("README status(%s, %s)", r.reason(), r.emptiedBy())
            .isEqualTo(OpenAiErrors.status(r));
      }
    }
  }
}
