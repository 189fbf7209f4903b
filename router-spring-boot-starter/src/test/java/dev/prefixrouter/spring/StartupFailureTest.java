package dev.prefixrouter.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Configuration;

/** Invalid properties stop startup with a short failure analysis naming the property. */
@ExtendWith(OutputCaptureExtension.class)
class StartupFailureTest {

  @Configuration(proxyBeanMethods = false)
  @ImportAutoConfiguration(PrefixRouterAutoConfiguration.class)
  static class App {}

  private static void start(String... props) {
    List<String> all = new ArrayList<>(List.of(props));
    all.add("spring.main.banner-mode=off");
    new SpringApplicationBuilder(App.class)
        .web(WebApplicationType.NONE)
        .properties(all.toArray(new String[0]))
        .run()
        .close();
  }

  /** The failure report printed by Spring Boot, from its banner line to the end. */
  private static String report(CapturedOutput output) {
    String out = output.getAll();
    int at = out.lastIndexOf("APPLICATION FAILED TO START");
    assertThat(at).as("a failure analysis was printed:\n%s", out).isNotNegative();
    return out.substring(at);
  }

  @Test
  void theAnalyzerIsRegistered() throws Exception {
    List<String> analyzers = new ArrayList<>();
    var urls = getClass().getClassLoader().getResources("META-INF/spring.factories");
    while (urls.hasMoreElements()) {
      Properties p = new Properties();
      try (var in = urls.nextElement().openStream()) {
        p.load(in);
      }
      String value = p.getProperty(FailureAnalyzer.class.getName());
      if (value != null) {
        analyzers.addAll(List.of(value.split("\\s*,\\s*")));
      }
    }
    assertThat(analyzers).contains(PrefixRouterFailureAnalyzer.class.getName());
  }

  @Test
  void anInvalidValueIsReportedByItsPropertyPath(CapturedOutput output) {
    assertThatThrownBy(() -> start("prefix-router.retry-budget=99"))
        .hasRootCauseInstanceOf(IllegalArgumentException.class);
    String report = report(output);
    assertThat(report)
        .contains("Property: prefix-router.retry-budget")
        .contains("retry-budget must be")
        .contains("99")
        .doesNotContain("retryBudget")
        .doesNotContain("\tat ");
    assertThat(report.lines().count()).isLessThan(15);
  }

  @Test
  void aDuplicateIdIsReported(CapturedOutput output) {
    assertThatThrownBy(
        () ->
            start(
                "prefix-router.backends[0].id=b0",
                "prefix-router.backends[0].models=m",
                "prefix-router.backends[1].id=b0",
                "prefix-router.backends[1].models=m"));
    assertThat(report(output)).contains("Property: prefix-router.backends[1].id");
  }

  @Test
  void aSplitToAModelNoBackendServesFailsStartup(CapturedOutput output) {
    assertThatThrownBy(
            () ->
                start(
                    "prefix-router.backends[0].id=b0",
                    "prefix-router.backends[0].models=llama",
                    "prefix-router.model-splits.chat.llama=90",
                    "prefix-router.model-splits.chat.llama-v3=10"))
        .hasMessageContaining("prefix-router.model-splits.chat.llama-v3")
        .hasMessageContaining("served by no backend");
    assertThat(report(output)).contains("Property: prefix-router.model-splits.chat.llama-v3");
  }

  @Test
  void anAliasToAnUnknownModelFailsStartup() {
    assertThatThrownBy(
            () ->
                start(
                    "prefix-router.backends[0].id=b0",
                    "prefix-router.backends[0].models=llama",
                    "prefix-router.model-aliases.gpt-4=lama"))
        .hasMessageContaining("prefix-router.model-aliases.gpt-4")
        .hasMessageContaining("target model 'lama' is served by no backend");
  }

  @Test
  void anAliasToASplitModelAndASplitOfServedModelsStart() {
    start(
        "prefix-router.backends[0].id=b0",
        "prefix-router.backends[0].models=llama,llama-v2",
        "prefix-router.model-splits.chat.llama=90",
        "prefix-router.model-splits.chat.llama-v2=10",
        "prefix-router.model-aliases.gpt-4=chat");
  }
}
