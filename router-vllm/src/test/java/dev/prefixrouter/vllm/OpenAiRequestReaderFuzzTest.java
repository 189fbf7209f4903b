package dev.prefixrouter.vllm;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;

/**
 * Jazzer fuzz test of {@link OpenAiRequestReader}: whatever the bytes, the reader answers with an
 * {@link OpenAiRequest} or an {@link OpenAiRequestException} (any other throwable is a finding),
 * and what it keeps is bounded by the body: the prompt text at most two chars per body byte, the
 * tenant at most {@value OpenAiRequestReader#MAX_NAME_LENGTH} chars, messages short.
 *
 * <p>In {@code verify} this replays the committed corpus ({@code
 * src/test/resources/dev/prefixrouter/vllm/OpenAiRequestReaderFuzzTestInputs/}). To fuzz for a
 * bounded time (here one minute; without {@code JAZZER_MAX_DURATION} the annotation's five), under
 * the build lock:
 *
 * <pre>{@code
 * JAZZER_FUZZ=1 JAZZER_MAX_DURATION=1m ./mvnw -B -ntp -pl router-vllm -am test \
 *     -Dtest=OpenAiRequestReaderFuzzTest -Dsurefire.failIfNoSpecifiedTests=false
 * }</pre>
 *
 * <p>No JUnit {@code @Timeout}: in fuzzing mode JUnit applies it to the whole run, which then ends
 * in a false timeout (jazzer issue 930). Each input is bounded instead: bodies are capped at 64 KiB
 * and the reader is linear in the body. Findings land in the inputs folder: commit them with the
 * fix.
 */
class OpenAiRequestReaderFuzzTest {
  private static final OpenAiRequestReader READER =
      OpenAiRequestReader.builder().maxBodyBytes(64 << 10).build();

  @FuzzTest(maxDuration = "5m")
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
