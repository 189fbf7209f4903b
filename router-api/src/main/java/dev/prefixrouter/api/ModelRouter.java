package dev.prefixrouter.api;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/** Alias resolution and weighted A/B splits. Immutable after construction; thread-safe. */
final class ModelRouter {

  private record Split(String[] targets, int[] cumulative, int total) {}

  private final Map<String, String> aliases;
  private final Map<String, Split> splits;
  private final AtomicLong sequence = new AtomicLong();

  ModelRouter(Map<String, String> aliases, Map<String, Map<String, Integer>> weights) {
    this.aliases = Map.copyOf(aliases);
    Map<String, Split> s = new LinkedHashMap<>();
    for (Map.Entry<String, Map<String, Integer>> e : weights.entrySet()) {
      List<Map.Entry<String, Integer>> parts = List.copyOf(e.getValue().entrySet());
      String[] targets = new String[parts.size()];
      int[] cumulative = new int[parts.size()];
      int total = 0;
      for (int i = 0; i < parts.size(); i++) {
        targets[i] = parts.get(i).getKey();
        total += parts.get(i).getValue();
        cumulative[i] = total;
      }
      s.put(e.getKey(), new Split(targets, cumulative, total));
    }
    this.splits = Map.copyOf(s);
  }

  /** The request's model after alias resolution only (a split's name stays as it is). */
  String alias(RouteRequest request) {
    return aliases.getOrDefault(request.model(), request.model());
  }

  /**
   * The model to serve {@code request}: its alias target if any, then a weighted pick if the model
   * is split. Sticky per session id when one is given; otherwise a well-mixed sequence, so shares
   * converge to the weights.
   */
  String resolve(RouteRequest request) {
    String model = aliases.getOrDefault(request.model(), request.model());
    Split split = splits.get(model);
    if (split == null) {
      return model;
    }
    long h;
    String session = request.sessionId();
    if (session != null) {
      h = mix(session.hashCode() * 0x9E3779B97F4A7C15L + model.hashCode());
    } else {
      h = mix(sequence.getAndIncrement() * 0x9E3779B97F4A7C15L);
    }
    int bucket = (int) Long.remainderUnsigned(h, split.total());
    int[] cumulative = split.cumulative();
    for (int i = 0; i < cumulative.length; i++) {
      if (bucket < cumulative[i]) {
        return split.targets()[i];
      }
    }
    return split.targets()[cumulative.length - 1];
  }

  /** SplitMix64 finalizer. */
  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }
}
