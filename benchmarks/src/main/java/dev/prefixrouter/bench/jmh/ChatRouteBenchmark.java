package dev.prefixrouter.bench.jmh;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.ChatMessage;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.Routed;
import dev.prefixrouter.api.RoutingEngine;
import dev.prefixrouter.api.Usage;
import dev.prefixrouter.radix.BlockHashers;
import dev.prefixrouter.radix.RadixPrefixIndex;
import dev.prefixrouter.scoring.EstimatedTtftScorer;
import dev.prefixrouter.vllm.OpenAiRequestReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * {@code route()} + {@code complete()} of the hostile chat of issue #17: an 8 MiB body of {@value
 * #MESSAGES} messages {@code {"role":"u"}}, under the default parts (16-token blocks hashing text
 * as 64-char blocks, radix index, est-TTFT, 4 backends). {@code chatPrompt} routes the {@link
 * Prompt.Chat} the reader produced before it rendered conversations itself (the hasher renders it
 * on every route and failover); {@code readerPrompt} routes what {@link OpenAiRequestReader} gives
 * now (one {@link Prompt.Text}, rendered once at read time). {@code read} is the reader's own cost
 * for the body, paid once per request.
 *
 * <pre>java -jar benchmarks/target/benchmarks.jar jmh ChatRouteBenchmark -prof gc</pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
    value = 1,
    jvmArgs = {"-Xms2g", "-Xmx2g"})
public class ChatRouteBenchmark {
  /** As many 13-byte messages as fit an 8 MiB body. */
  static final int MESSAGES = ((8 << 20) - 64) / 13;

  private RoutingEngine engine;
  private RouteRequest chat;
  private RouteRequest text;
  private byte[] body;
  private final OpenAiRequestReader reader = OpenAiRequestReader.defaults();

  /** The hostile body: {@value #MESSAGES} messages without content. */
  public static byte[] body() {
    StringBuilder sb = new StringBuilder(8 << 20).append("{\"model\":\"m\",\"messages\":[");
    for (int i = 0; i < MESSAGES; i++) {
      sb.append(i == 0 ? "" : ",").append("{\"role\":\"u\"}");
    }
    return sb.append("]}").toString().getBytes(StandardCharsets.UTF_8);
  }

  /** The prompt the reader produced before: the message list. */
  public static Prompt messageList() {
    List<ChatMessage> messages = new ArrayList<>(MESSAGES);
    for (int i = 0; i < MESSAGES; i++) {
      messages.add(new ChatMessage(new String("u"), new String(""))); // distinct, as parsed
    }
    return Prompt.ofChat(messages);
  }

  @Setup
  public void setup() {
    var b =
        RoutingEngine.builder()
            .hasher(BlockHashers.tokens(16))
            .prefixIndex(RadixPrefixIndex.builder().predictionTtl(Duration.ZERO).build())
            .scorer(EstimatedTtftScorer.defaults());
    for (int i = 0; i < 4; i++) {
      b.backend(Backend.of("b" + i, "m"));
    }
    engine = b.build();
    body = body();
    text = reader.read(body, "t").routeRequest();
    chat = text.toBuilder().prompt(messageList()).build();
  }

  private Routed complete(RouteRequest r) {
    Routed routed = (Routed) engine.route(r);
    routed.lease().firstToken();
    routed.lease().complete(Usage.of(1, 1));
    return routed;
  }

  @Benchmark
  public Routed chatPrompt() {
    return complete(chat);
  }

  @Benchmark
  public Routed readerPrompt() {
    return complete(text);
  }

  @Benchmark
  public Object read() {
    return reader.read(body, "t");
  }
}
