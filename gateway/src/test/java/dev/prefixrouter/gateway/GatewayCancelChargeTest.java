package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.spi.Admission;
import dev.prefixrouter.api.spi.TenantLimiter;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * A client that goes away mid-stream pays for the output it received: the tenant is charged the
 * prompt and the streamed events, not the prompt alone (the whole output reservation used to be
 * refunded). The limiter records what the gateway's engine takes and trues up.
 */
@SpringBootTest(
    classes = {GatewayApplication.class, GatewayCancelChargeTest.Limits.class},
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "prefix-router.scorer.policy=round-robin")
class GatewayCancelChargeTest {
  static final FakeEngine HOLD = engine();

  /** Grants everything; sums what is taken and what the true-ups add. */
  static final class Recording implements TenantLimiter {
    final AtomicLong taken = new AtomicLong();
    final AtomicLong adjusted = new AtomicLong();
    final AtomicLong adjustments = new AtomicLong();

    @Override
    public Admission tryAcquire(String tenant, long tokens, long nowNanos) {
      taken.addAndGet(tokens);
      return Admission.GRANTED;
    }

    @Override
    public void adjust(String tenant, long deltaTokens, long nowNanos) {
      adjusted.addAndGet(deltaTokens);
      adjustments.incrementAndGet();
    }
  }

  @TestConfiguration
  static class Limits {
    @Bean
    Recording recordingLimiter() {
      return new Recording();
    }
  }

  @DynamicPropertySource
  static void backends(DynamicPropertyRegistry r) {
    r.add("prefix-router.backends[0].id", () -> "hold");
    r.add("prefix-router.backends[0].url", HOLD::url);
    r.add("prefix-router.backends[0].models[0]", () -> "hold");
  }

  @LocalServerPort int port;
  @Autowired Recording limiter;

  @AfterAll
  static void stop() {
    HOLD.close();
  }

  @Test
  void aClientThatGoesAwayMidStreamPaysForWhatItReceived() throws Exception {
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpResponse<InputStream> res =
        client.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
                .timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json")
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"model\":\"hold\",\"stream\":true,\"max_tokens\":1000,"
                            + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"))
                .build(),
            HttpResponse.BodyHandlers.ofInputStream());
    BufferedReader in =
        new BufferedReader(new InputStreamReader(res.body(), StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null && !line.contains("hello")) {
      // up to the first content chunk
    }
    assertThat(line).contains("hello");
    res.body().close();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (limiter.adjustments.get() == 0 && System.nanoTime() - deadline < 0) {
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
    }
    assertThat(limiter.adjustments.get()).as("the lease ended").isEqualTo(1);
    // taken = prompt + 1,000 reserved; charged = taken + adjusted = prompt + output
    long outputCharged = limiter.adjusted.get() + 1_000;
    assertThat(outputCharged).as("output tokens charged").isBetween(1L, 10L);
  }

  private static FakeEngine engine() {
    try {
      return new FakeEngine("hold", FakeEngine.Mode.HOLD);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
