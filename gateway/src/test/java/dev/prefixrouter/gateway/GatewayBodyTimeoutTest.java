package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * A client that sends part of its body and stalls gets 408 after {@code body-timeout}: the body
 * read had no time limit, so a trickling client held its connection (and its buffer) for ever.
 */
@SpringBootTest(
    classes = GatewayApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
      "prefix-router.scorer.policy=round-robin",
      "prefix-router.gateway.body-timeout=1s"
    })
class GatewayBodyTimeoutTest {
  static final FakeEngine ENGINE = engine();

  @DynamicPropertySource
  static void backends(DynamicPropertyRegistry r) {
    r.add("prefix-router.backends[0].id", () -> "only");
    r.add("prefix-router.backends[0].url", ENGINE::url);
    r.add("prefix-router.backends[0].models[0]", () -> "m");
  }

  @LocalServerPort int port;

  @AfterAll
  static void stop() {
    ENGINE.close();
  }

  @Test
  void aBodyThatStallsIsAnsweredWith408() throws Exception {
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
      s.setSoTimeout(20_000);
      OutputStream out = s.getOutputStream();
      out.write(
          ("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  + "Content-Length: 1000\r\n\r\n{\"model\":\"m\",")
              .getBytes(StandardCharsets.US_ASCII));
      out.flush();
      long start = System.nanoTime();
      InputStream in = s.getInputStream();
      byte[] head = new byte[12];
      int n = 0;
      while (n < head.length) {
        int r = in.read(head, n, head.length - n);
        if (r < 0) {
          break;
        }
        n += r;
      }
      assertThat(new String(head, 0, n, StandardCharsets.US_ASCII)).isEqualTo("HTTP/1.1 408");
      assertThat((System.nanoTime() - start) / 1_000_000).isLessThan(15_000);
      assertThat(ENGINE.bodies).isEmpty();
    }
  }

  private static FakeEngine engine() {
    try {
      return new FakeEngine("only", FakeEngine.Mode.OK);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
