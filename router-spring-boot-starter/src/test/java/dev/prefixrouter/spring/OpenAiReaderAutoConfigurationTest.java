package dev.prefixrouter.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.vllm.OpenAiRequestException;
import dev.prefixrouter.vllm.OpenAiRequestReader;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** The OpenAI request reader as a starter bean. */
class OpenAiReaderAutoConfigurationTest {
  private final ApplicationContextRunner runner =
      new ApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(OpenAiReaderAutoConfiguration.class));

  private static byte[] body(String model, int chars) {
    return ("{\"model\":\""
            + model
            + "\",\"messages\":[{\"role\":\"user\",\"content\":\""
            + "x".repeat(chars)
            + "\"}]}")
        .getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void aReaderFromTheProperties() {
    runner
        .withPropertyValues(
            "prefix-router.reader.max-body-size=2KB",
            "prefix-router.reader.default-max-output-tokens=7",
            "prefix-router.reader.default-tenant=guests")
        .run(
            ctx -> {
              OpenAiRequestReader reader = ctx.getBean(OpenAiRequestReader.class);
              var read = reader.read(body("m", 10), null);
              assertThat(read.routeRequest().tenant()).isEqualTo("guests");
              assertThat(read.routeRequest().maxOutputTokens()).isEqualTo(7);
              assertThatThrownBy(() -> reader.read(body("m", 4096), null))
                  .isInstanceOf(OpenAiRequestException.class);
            });
  }

  @Test
  void badPropertiesNameTheProperty() {
    runner
        .withPropertyValues("prefix-router.reader.max-body-size=10B")
        .run(
            ctx ->
                assertThat(ctx.getStartupFailure())
                    .hasStackTraceContaining("prefix-router.reader.max-body-size")
                    .hasStackTraceContaining("must be in [1024"));
  }

  @Test
  void noReaderWithoutRouterVllm() {
    runner
        .withClassLoader(new FilteredClassLoader(OpenAiRequestReader.class))
        .run(ctx -> assertThat(ctx).hasNotFailed().doesNotHaveBean("prefixRouterRequestReader"));
  }
}
