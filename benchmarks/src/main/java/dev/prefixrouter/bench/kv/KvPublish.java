package dev.prefixrouter.bench.kv;

import java.io.BufferedReader;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The publishing side of {@link KvSoak} as its own JVM, started by {@code kv-soak} (not a command
 * of the jar). Arguments: {@code seconds events/s backends drop events/batch timesFile}. It binds
 * one {@link WirePublisher} per backend on loopback and talks to its parent by lines on standard
 * output: {@code ENDPOINT b pub replay} per backend; after every subscription arrived, {@code START
 * wallNanos}; when the publishing time is over, {@code DONE}, then (after writing the publish
 * times, {@code int count, long[count]} wall ns per backend, to {@code timesFile}) {@code CPU
 * seconds} (its CPU time while publishing). It then keeps serving replays until its standard input
 * closes.
 */
public final class KvPublish {
  private KvPublish() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 6) {
      throw new IllegalArgumentException(
          "arguments: seconds events/s backends drop events/batch timesFile");
    }
    run(args);
  }

  private static void run(String[] args) throws Exception {
    double seconds = Double.parseDouble(args[0]);
    int rate = Integer.parseInt(args[1]);
    int backends = Integer.parseInt(args[2]);
    double drop = Double.parseDouble(args[3]);
    int perBatch = Integer.parseInt(args[4]);
    Path times = Path.of(args[5]);
    KvSoak.checkArguments(seconds, rate, backends, perBatch);
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    int stores = perBatch / 2;
    byte[][][] payloads = new byte[backends][KvSoak.RING][];
    List<WirePublisher> pubs = new ArrayList<>();
    try {
      for (int b = 0; b < backends; b++) {
        KvSoak.encode(b, payloads[b], new long[KvSoak.RING], stores);
        WirePublisher p = new WirePublisher("", KvSoak.PUBLISHER_BUFFER);
        pubs.add(p);
        out.println("ENDPOINT " + b + " " + p.endpoint() + " " + p.replayEndpoint());
      }
      for (WirePublisher p : pubs) {
        p.awaitSubscriber(Duration.ofSeconds(20));
      }
      long[][] sentAt = new long[backends][KvSoak.maxBatches(seconds, rate, backends, 2 * stores)];
      long cpuStart = KvSoak.cpuNanos();
      out.println("START " + KvSoak.wallNanos());
      long[] counts = KvSoak.publish(pubs, payloads, seconds, rate, drop, 2 * stores, sentAt);
      long cpuEnd = KvSoak.cpuNanos();
      out.println("DONE");
      try (DataOutputStream d =
          new DataOutputStream(new java.io.BufferedOutputStream(Files.newOutputStream(times)))) {
        for (int b = 0; b < backends; b++) {
          int n = (int) Math.min(counts[b], sentAt[b].length);
          d.writeInt(n);
          for (int k = 0; k < n; k++) {
            d.writeLong(sentAt[b][k]);
          }
        }
      }
      out.println("CPU " + (cpuEnd - cpuStart) / 1e9);
      BufferedReader in =
          new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      while (in.readLine() != null) {
        // serve replays until the parent closes our input
      }
    } catch (IOException e) {
      System.err.println("kv-publish: " + e);
    } finally {
      pubs.forEach(WirePublisher::close);
    }
  }
}
