package dev.prefixrouter.spring.e2e;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;

/** A fake vLLM on loopback: OpenAI chat completions streamed as SSE, and vLLM-format /metrics. */
final class FakeVllm implements AutoCloseable {
  final String name;
  final AtomicInteger completions = new AtomicInteger();
  private final HttpServer server;

  FakeVllm(String name) throws IOException {
    this.name = name;
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext(
        "/v1/chat/completions",
        ex -> {
          ex.getRequestBody().readAllBytes();
          completions.incrementAndGet();
          ex.getResponseHeaders().add("Content-Type", "text/event-stream");
          ex.sendResponseHeaders(200, 0);
          try (OutputStream o = ex.getResponseBody()) {
            for (String piece : new String[] {"Hello", " from ", name}) {
              o.write(
                  ("data: {\"choices\":[{\"delta\":{\"content\":\"" + piece + "\"}}]}\n\n")
                      .getBytes(StandardCharsets.UTF_8));
              o.flush();
            }
            o.write("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
          }
        });
    server.createContext(
        "/metrics",
        ex -> {
          byte[] b =
              ("vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 0\n"
                      + "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 0\n"
                      + "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.1\n"
                      + "vllm:cache_config_info{engine=\"0\",num_gpu_blocks=\"5000\"} 1\n")
                  .getBytes(StandardCharsets.UTF_8);
          ex.sendResponseHeaders(200, b.length);
          try (OutputStream o = ex.getResponseBody()) {
            o.write(b);
          }
        });
    server.start();
  }

  String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
