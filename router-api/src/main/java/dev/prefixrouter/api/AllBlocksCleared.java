package dev.prefixrouter.api;

/** The engine dropped its whole prefix cache ({@code reset_prefix_cache()}). */
public record AllBlocksCleared() implements KvEvent {
  /** The shared instance. */
  public static final AllBlocksCleared INSTANCE = new AllBlocksCleared();
}
