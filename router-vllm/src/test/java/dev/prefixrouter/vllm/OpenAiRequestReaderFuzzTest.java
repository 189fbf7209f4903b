package dev.prefixrouter.vllm;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;

/**
 * Jazzer fuzz test of {@link OpenAiRequestReader}: whatever the bytes, the reader answers with an
 * {@link OpenAiRequest} or an {@link OpenAiRequestException} (any other throwable is a finding),
 * and what it keeps is bounded by the body: the prompt text at most two chars per body byte, the
 * tenant at most {@value OpenAiRequestReader#MAX_NAME_LENGTH} chars, messages short.
 *
 * <p>In {@code verify} this replays the committed corpus ({@code
 * src/test/resources/dev/prefixrouter/vllm/OpenAiRequestReaderFuzzTestInputs/}), each input within
 * the {@link Timeout}. To fuzz, under the build lock: {@code JAZZER_FUZZ=1 ./mvnw -pl router-vllm
 * test -Dtest=OpenAiRequestReaderFuzzTest} (for {@code maxDuration}; Jazzer turns the {@link
 * Timeout} into its per-input time limit; bodies are capped at 64 KiB so the memory per input is
 * bounded too). Findings land in the inputs folder: commit them with the fix.
 */
class OpenAiRequestReaderFuzzTest {
  private static final OpenAiRequestReader READER =
      OpenAiRequestReader.builder().maxBodyBytes(64 << 10).build();

  @FuzzTest(maxDuration = "5m")
  @Timeout(value = 5, unit = TimeUnit.SECONDS)
  void readsOnlyToOpenAiRequestException(byte[] body) {
    OpenAiRequest r;
    try {
      r = READER.read(body, null);
    } catch (OpenAiRequestException e) {
      assertThat(e.getMessage()).hasSizeLessThan(200);
      assertThat(e.problem()).isNotNull();
      return;
    }
    RouteRequest rr = r.routeRequest();
    assertThat(rr.tenant().length()).isLessThanOrEqualTo(OpenAiRequestReader.MAX_NAME_LENGTH);
    assertThat(rr.model().length()).isLessThanOrEqualTo(OpenAiRequestReader.MAX_NAME_LENGTH);
    assertThat(rr.maxOutputTokens()).isBetween(0, RouteRequest.MAX_OUTPUT_TOKENS_LIMIT);
    assertThat(r.choices()).isBetween(1, OpenAiRequestReader.MAX_CHOICES);
    if (rr.prompt() instanceof Prompt.Text t) {
      // a conversation renders to at most two chars per body byte
      assertThat((long) t.text().length()).isLessThanOrEqualTo(2L * body.length);
    } else if (rr.prompt() instanceof Prompt.Tokens t) {
      assertThat(t.length()).isLessThanOrEqualTo(body.length / 2);
    }
  }
}
