package dev.prefixrouter.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A redis-server of the test's own on a free port, without persistence, that the test may kill and
 * restart (by its process, never the shared instance).
 */
final class PrivateRedisServer implements AutoCloseable {
  final int port;
  private Process process;

  PrivateRedisServer() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      this.port = s.getLocalPort();
    }
    this.process = start();
  }

  String uri() {
    return "redis://127.0.0.1:" + port;
  }

  private Process start() throws IOException {
    Process p =
        new ProcessBuilder(
                "redis-server",
                "--port",
                Integer.toString(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no")
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (!answersPing()) {
      if (!p.isAlive() || System.nanoTime() - deadline > 0) {
        p.destroyForcibly();
        throw new IOException("redis-server on port " + port + " did not start");
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10)); // an external process starting
    }
    return p;
  }

  private boolean answersPing() {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 200);
      s.setSoTimeout(500);
      OutputStream out = s.getOutputStream();
      out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = s.getInputStream();
      byte[] buf = new byte[7];
      int n = in.readNBytes(buf, 0, 7);
      return new String(buf, 0, n, StandardCharsets.US_ASCII).equals("+PONG\r\n");
    } catch (IOException e) {
      return false;
    }
  }

  /** Kills the server (SIGKILL) and waits for it to exit. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(10, TimeUnit.SECONDS);
  }

  /** Starts a fresh, empty server on the same port. */
  void restart() throws IOException {
    this.process = start();
  }

  @Override
  public void close() throws InterruptedException {
    kill();
  }
}
