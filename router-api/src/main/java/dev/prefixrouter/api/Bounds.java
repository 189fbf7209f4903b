package dev.prefixrouter.api;

/** Bounds the engine applies to what it echoes of its input. */
final class Bounds {
  private Bounds() {}

  /** A model name or id as it appears in a message. */
  static String echo(String s) {
    return s;
  }
}
