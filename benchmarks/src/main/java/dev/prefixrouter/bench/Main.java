package dev.prefixrouter.bench;

import java.util.Arrays;

/**
 * Entry point of the benchmarks jar.
 *
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar [compare] [options] # policy comparison (main job)
 * java -jar benchmarks/target/benchmarks.jar demo                # scripted routing demo
 * java -jar benchmarks/target/benchmarks.jar memory              # index bytes per entry
 * java -jar benchmarks/target/benchmarks.jar chat-memory         # a big chat's retained prompt
 * java -jar benchmarks/target/benchmarks.jar route-probe [case] [scorer] [slices] # route/hash, paired
 * java -jar benchmarks/target/benchmarks.jar scaling-probe [rounds] [phase ms] # 2 threads vs 1
 * java -jar benchmarks/target/benchmarks.jar jmh [args]          # JMH, any JMH arguments
 * java -jar benchmarks/target/benchmarks.jar kv-soak [args]      # KV events over ZMQ, lag + heap
 * </pre>
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("jmh")) {
      org.openjdk.jmh.Main.main(Arrays.copyOfRange(args, 1, args.length));
      return;
    }
    if (args.length > 0 && args[0].equals("kv-soak")) {
      dev.prefixrouter.bench.kv.KvSoak.main(Arrays.copyOfRange(args, 1, args.length));
      return;
    }
    if (args.length > 0 && args[0].equals("memory")) {
      IndexMemory.run(System.out);
      return;
    }
    if (args.length > 0 && args[0].equals("chat-memory")) {
      ChatMemory.run(System.out);
      return;
    }
    if (args.length > 0 && args[0].equals("route-probe")) {
      dev.prefixrouter.bench.jmh.RouteProbe.run(
          Arrays.copyOfRange(args, 1, args.length), System.out);
      return;
    }
    if (args.length > 0 && args[0].equals("scaling-probe")) {
      dev.prefixrouter.bench.jmh.ScalingProbe.run(
          Arrays.copyOfRange(args, 1, args.length), System.out);
      return;
    }
    if (args.length > 0 && args[0].equals("ext-probe")) {
      dev.prefixrouter.bench.jmh.ExtensionsProbe.run(
          System.out,
          args.length > 1 ? Integer.parseInt(args[1]) : 200,
          args.length > 2 ? Integer.parseInt(args[2]) : 5_000);
      return;
    }
    if (args.length > 0 && args[0].equals("demo")) {
      Demo.run(System.out);
      return;
    }
    String[] rest =
        args.length > 0 && args[0].equals("compare")
            ? Arrays.copyOfRange(args, 1, args.length)
            : args;
    if (rest.length > 0 && (rest[0].equals("--help") || rest[0].equals("-h"))) {
      System.out.println(
          "commands: [compare] [options] (default) | demo | memory | chat-memory | route-probe"
              + " [held|cold|new|mix] [scorer] [slices] |"
              + " scaling-probe | ext-probe [pairs routes-per-block] | kv-soak"
              + " [seconds events/s backends drop] | jmh [JMH args]");
    }
    int code = dev.prefixrouter.bench.sim.Compare.run(rest, System.out, System.err);
    if (code != 0) {
      System.exit(code);
    }
  }
}
