package dev.prefixrouter.bench;

import java.util.Arrays;

/**
 * Entry point of the benchmarks jar.
 *
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar            # the demo (main job for now)
 * java -jar benchmarks/target/benchmarks.jar jmh [args] # JMH, any JMH arguments
 * </pre>
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("jmh")) {
      org.openjdk.jmh.Main.main(Arrays.copyOfRange(args, 1, args.length));
      return;
    }
    if (args.length > 0 && args[0].equals("memory")) {
      IndexMemory.run(System.out);
      return;
    }
    if (args.length > 0 && (args[0].equals("--help") || args[0].equals("-h"))) {
      System.out.println("usage: java -jar benchmarks.jar [demo | memory | jmh [JMH args]]");
      return;
    }
    if (args.length > 0 && !args[0].equals("demo")) {
      System.err.println("unknown command '" + args[0] + "'; try --help");
      System.exit(2);
    }
    Demo.run(System.out);
  }
}
