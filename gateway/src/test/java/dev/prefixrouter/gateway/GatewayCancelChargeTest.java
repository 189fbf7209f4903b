package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import dev.prefixrouter.api.spi.Admission;
import dev.prefixrouter.api.spi.TenantLimiter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
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
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
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
 * refunded); one that goes away during a JSON answer pays for the answer, which the engine had
 * generated before its first byte. The limiter records what the gateway's engine takes and trues
 * up, by tenant.
 */
@SpringBootTest(
    classes = {GatewayApplication.class, GatewayCancelChargeTest.Limits.class},
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "prefix-router.scorer.policy=round-robin")
class GatewayCancelChargeTest {
  static final FakeEngine HOLD = engine("hold", FakeEngine.Mode.HOLD);
  static final FakeEngine HOLD_JSON = engine("hold-json", FakeEngine.Mode.HOLD_JSON);

  /** Grants everything; sums, by tenant, what the true-ups add and how many there were. */
  static final class Recording implements TenantLimiter {
    final Map<String, AtomicLong> adjusted = new ConcurrentHashMap<>();
    final Map<String, AtomicLong> adjustments = new ConcurrentHashMap<>();

    @Override
    public Admission tryAcquire(String tenant, long tokens, long nowNanos) {
      return Admission.GRANTED;
    }

    @Override
    public void adjust(String tenant, long deltaTokens, long nowNanos) {
      adjusted(tenant).addAndGet(deltaTokens);
      adjustments(tenant).incrementAndGet();
    }

    AtomicLong adjusted(String tenant) {
      return adjusted.computeIfAbsent(tenant, t -> new AtomicLong());
    }

    AtomicLong adjustments(String tenant) {
      return adjustments.computeIfAbsent(tenant, t -> new AtomicLong());
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
    r.add("prefix-router.backends[1].id", () -> "hold-json");
    r.add("prefix-router.backends[1].url", HOLD_JSON::url);
    r.add("prefix-router.backends[1].models[0]", () -> "hold-json");
  }

  @LocalServerPort int port;
  @Autowired Recording limiter;
  @Autowired MeterRegistry meters;

  @AfterAll
  static void stop() {
    HOLD.close();
    HOLD_JSON.close();
  }

  @Test
  void aClientThatGoesAwayMidStreamPaysForWhatItReceived() throws Exception {
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpResponse<InputStream> res =
        client.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
                .timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json")
                .header("X-Tenant", "streamer")
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
    while (limiter.adjustments("streamer").get() == 0 && System.nanoTime() - deadline < 0) {
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
    }
    assertThat(limiter.adjustments("streamer").get()).as("the lease ended").isEqualTo(1);
    // taken = prompt + 1,000 reserved; charged = taken + adjusted = prompt + output
    long outputCharged = limiter.adjusted("streamer").get() + 1_000;
    assertThat(outputCharged).as("output tokens charged").isBetween(1L, 10L);
  }

  /**
   * A non-streamed answer is generated whole before its first byte: a client that goes away once
   * the body has started is charged the output reserved for it (the engine's usage comes only at
   * the body's end), not the prompt alone (the whole output reservation used to be refunded).
   */
  @Test
  void aClientThatGoesAwayDuringAJsonAnswerPaysForTheAnswer() throws Exception {
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpResponse<InputStream> res =
        client.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/chat/completions"))
                .timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json")
                .header("X-Tenant", "json-reader")
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"model\":\"hold-json\",\"max_tokens\":1000,"
                            + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"))
                .build(),
            HttpResponse.BodyHandlers.ofInputStream());
    assertThat(res.statusCode()).isEqualTo(200);
    assertThat(res.body().read()).as("the body's first byte").isEqualTo('{');
    res.body().close();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (cancelled("hold-json") == 0 && System.nanoTime() - deadline < 0) {
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
    }
    assertThat(cancelled("hold-json")).as("the lease ended as cancelled").isEqualTo(1);
    // taken = prompt + 1,000 reserved; charged = taken + adjusted = prompt + output
    long outputCharged = limiter.adjusted("json-reader").get() + 1_000;
    assertThat(outputCharged).as("output tokens charged").isEqualTo(1_000);
  }

  private long cancelled(String model) {
    Timer t =
        meters
            .find("prefixrouter.gateway.requests")
            .tags("model", model, "outcome", "cancelled")
            .timer();
    return t == null ? 0 : t.count();
  }

  private static FakeEngine engine(String name, FakeEngine.Mode mode) {
    try {
      return new FakeEngine(name, mode);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
