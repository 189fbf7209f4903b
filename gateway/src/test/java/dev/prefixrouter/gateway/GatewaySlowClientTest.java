package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * A client that stops reading a stream is not the backend's fault: its backpressure stops the
 * backend's chunks (the engine here writes 32 KiB chunks as fast as it can, so every buffer on the
 * way fills within the first second), and the idle timeout that follows used to fail the lease as a
 * TIMEOUT, counted against a healthy backend. It ends as CANCELLED, and both connections close.
 */
@SpringBootTest(
    classes = GatewayApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
      "prefix-router.scorer.policy=round-robin",
      "prefix-router.gateway.idle-timeout=1s"
    })
class GatewaySlowClientTest {
  static final FakeEngine FLOOD = engine("flood", FakeEngine.Mode.FLOOD);

  @DynamicPropertySource
  static void backends(DynamicPropertyRegistry r) {
    r.add("prefix-router.backends[0].id", () -> "flood");
    r.add("prefix-router.backends[0].url", FLOOD::url);
    r.add("prefix-router.backends[0].models[0]", () -> "flood");
  }

  @LocalServerPort int port;
  @Autowired MeterRegistry meters;

  @AfterAll
  static void stop() {
    FLOOD.close();
  }

  @Test
  void aClientThatStopsReadingIsNotCountedAgainstTheBackend() throws Exception {
    String body =
        "{\"model\":\"flood\",\"stream\":true,\"max_tokens\":1000,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    try (Socket s = new Socket()) {
      s.setReceiveBufferSize(4096);
      s.connect(new InetSocketAddress("127.0.0.1", port), 5000);
      OutputStream out = s.getOutputStream();
      out.write(
          ("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  + "Content-Type: application/json\r\nX-Tenant: slow\r\nContent-Length: "
                  + body.getBytes(StandardCharsets.UTF_8).length
                  + "\r\n\r\n"
                  + body)
              .getBytes(StandardCharsets.UTF_8));
      out.flush();
      InputStream in = s.getInputStream();
      byte[] buf = new byte[4096];
      int got = in.read(buf); // the headers and the stream's start; then nothing more is read
      assertThat(got).isPositive();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(12);
      while (failures("TIMEOUT") + failures("CANCELLED") == 0 && System.nanoTime() - deadline < 0) {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
      }
      assertThat(failures("TIMEOUT")).as("TIMEOUT failures counted against the backend").isZero();
      assertThat(failures("CANCELLED")).as("the lease ended as cancelled").isEqualTo(1);
      assertThat(FLOOD.readerGone.await(10, TimeUnit.SECONDS))
          .as("the upstream call was closed")
          .isTrue();
      s.setSoTimeout(10_000);
      while (in.read(buf) >= 0) {
        // what was on its way; then the gateway's close
      }
    }
  }

  private double failures(String kind) {
    Counter c =
        meters.find("prefixrouter.failures").tags("backend", "flood", "kind", kind).counter();
    return c == null ? 0 : c.count();
  }

  private static FakeEngine engine(String name, FakeEngine.Mode mode) {
    try {
      return new FakeEngine(name, mode);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
