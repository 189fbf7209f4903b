package dev.prefixrouter.bench;

import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.vllm.OpenAiRequestReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;

/**
 * Retained heap of the prompt a lease keeps for its failovers, for the hostile chat of {@code
 * ChatRouteBenchmark} (8 MiB body, 645k messages): the message list the reader produced before
 * ({@link Prompt.Chat}) against the text it renders now ({@link Prompt.Text}). Measured as used
 * heap after full GCs, with and without the prompt held.
 *
 * <pre>java -Xmx2g -jar benchmarks/target/benchmarks.jar chat-memory</pre>
 */
final class ChatMemory {
  private ChatMemory() {}

  static void run(PrintStream out) {
    byte[] body = dev.prefixrouter.bench.jmh.ChatRouteBenchmark.body();
    out.printf("body: %,d bytes%n", body.length);
    long base = usedAfterGc();
    Prompt chat = dev.prefixrouter.bench.jmh.ChatRouteBenchmark.messageList();
    long withChat = usedAfterGc();
    out.printf("Prompt.Chat (before): %,d bytes retained%n", withChat - base);
    chat = null;
    base = usedAfterGc();
    Prompt text = OpenAiRequestReader.defaults().read(body, "t").routeRequest().prompt();
    long withText = usedAfterGc();
    out.printf("Prompt.Text (reader): %,d bytes retained%n", withText - base);
    if (chat != null || text.estimatedTokens() < 0) {
      throw new AssertionError(); // keeps both reachable until measured
    }
  }

  private static long usedAfterGc() {
    for (int i = 0; i < 4; i++) {
      System.gc();
    }
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }
}
