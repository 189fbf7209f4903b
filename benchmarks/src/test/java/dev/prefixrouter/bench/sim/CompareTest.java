package dev.prefixrouter.bench.sim;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CompareTest {
  @TempDir Path tmp;

  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();

  private int run(String... args) {
    return Compare.run(
        args,
        new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
  }

  private String err() {
    return err.toString(StandardCharsets.UTF_8);
  }

  @Test
  void helpListsOptionsAndPolicies() {
    assertThat(run("--help")).isZero();
    assertThat(out.toString(StandardCharsets.UTF_8)).contains("--rate-scale").contains("est-ttft");
  }

  @Test
  void badArgumentsExitTwoWithASpecificMessage() {
    assertThat(run("--backends", "0")).isEqualTo(2);
    assertThat(err()).contains("--backends must be in [1, 256], was 0");
    assertThat(run("--policies", "rr")).isEqualTo(2);
    assertThat(err()).contains("unknown policy 'rr'");
    assertThat(run("--rate-scale", "fast")).isEqualTo(2);
    assertThat(err()).contains("--rate-scale must be a number");
    assertThat(run("--scrape-ms", "0")).isEqualTo(2);
    assertThat(err()).contains("--scrape-ms must be in");
    assertThat(run("--workload", "nope")).isEqualTo(2);
    assertThat(run("--frobnicate")).isEqualTo(2);
    assertThat(run("--seed")).isEqualTo(2);
    assertThat(err()).contains("--seed needs a value");
  }

  @Test
  void theScrapeIntervalReachesTheSimulatedFleet() {
    assertThat(Compare.config(Compare.parse(new String[0])).scrapeIntervalNanos())
        .isEqualTo(100_000_000L);
    assertThat(
            Compare.config(Compare.parse(new String[] {"--scrape-ms", "50"})).scrapeIntervalNanos())
        .isEqualTo(50_000_000L);
  }

  @Test
  void malformedTraceNamesTheLine() throws Exception {
    Path trace = tmp.resolve("t.jsonl");
    Files.writeString(
        trace,
        "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 4, \"hash_ids\": [1, 2]}\n"
            + "{\"timestamp\": 5, \"input_length\": 600, \"output_length\": 4, \"hash_ids\": [1]}\n");
    assertThat(run("--trace", trace.toString(), "--out", tmp.toString())).isEqualTo(3);
    assertThat(err()).contains("t.jsonl:2").contains("hash_ids has 1 ids");
    Files.writeString(trace, "{\"timestamp\": 0, \"input_length\": \n");
    assertThat(run("--trace", trace.toString())).isEqualTo(3);
    assertThat(err()).contains("t.jsonl:1");
    assertThat(run("--trace", tmp.resolve("missing.jsonl").toString())).isEqualTo(3);
  }

  @Test
  void aTraceRunWritesTableJsonCsvAndHtml() throws Exception {
    Path trace = tmp.resolve("ok.jsonl");
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < 40; i++) {
      sb.append(
          String.format(
              "{\"timestamp\": %d, \"input_length\": 1100, \"output_length\": 8, \"hash_ids\": [%d, %d, %d]}%n",
              i * 50, i % 3, 10 + i % 3, 100 + i));
    }
    Files.writeString(trace, sb.toString());
    int code =
        run(
            "--trace",
            trace.toString(),
            "--backends",
            "3",
            "--policies",
            "est-ttft,round-robin",
            "--out",
            tmp.resolve("out").toString());
    assertThat(code).as(err()).isZero();
    assertThat(out.toString(StandardCharsets.UTF_8)).contains("est-ttft").contains("round-robin");
    assertThat(Files.readString(tmp.resolve("out/results.json")))
        .contains("\"policy\":\"est-ttft\"");
    assertThat(Files.readAllLines(tmp.resolve("out/results.csv"))).hasSize(3);
    assertThat(Files.readString(tmp.resolve("out/report.html")))
        .contains("<svg")
        .doesNotContain("http://cdn");
  }
}
