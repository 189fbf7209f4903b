package dev.prefixrouter.gateway;

import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.databind.json.JsonMapper;

/**
 * Removes top-level members a client must not set from a request body before it is forwarded:
 * {@code kv_transfer_params} (vLLM's KV connectors read it to fetch or hold KV blocks by id, which
 * would let a client reach cached blocks past its tenant's {@code cache_salt}) and, when the
 * gateway does not let clients pick it, {@code priority} (vLLM's scheduling priority under {@code
 * --scheduling-policy priority}). Stateless.
 *
 * <p>Cost: nothing at all for a body without those members (the reader said which it has, by their
 * decoded names); else one streaming pass over the top-level members (nested values skipped) and
 * one copy of the body without the members' bytes, every other byte as it came. The reader refuses
 * a body that names a member twice, so each is removed once.
 */
final class ClientFields {
  private static final JsonMapper JSON = JsonMapper.builder().build();

  private ClientFields() {}

  /**
   * {@code body} (a JSON object, as the reader accepted it) without its top-level {@code
   * kv_transfer_params} when {@code kvTransferParams}, and without its {@code priority} when {@code
   * priority}; {@code body} itself (the same array) when neither is asked.
   *
   * @throws IllegalArgumentException if {@code body} is not a JSON object
   */
  static byte[] without(byte[] body, boolean kvTransferParams, boolean priority) {
    if (!kvTransferParams && !priority) {
      return body;
    }
    // byte ranges to drop, ascending: one per run of dropped members, with the commas that joined
    // them (two names, each once as the reader reads a body: at most two runs)
    int[] ranges = new int[4];
    int n = 0;
    try (JsonParser p = JSON.createParser(body)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new IllegalArgumentException("not a JSON object");
      }
      int prevEnd = -1; // where the previous member's value ended; -1 before the first member
      int runStart = -1; // the first dropped member of the current run; -1 outside a run
      int runPrevEnd = -1; // where the member before that run ended; -1 if there is none
      JsonToken t;
      while ((t = p.nextToken()) == JsonToken.PROPERTY_NAME) {
        int start = (int) p.currentTokenLocation().getByteOffset();
        String name = p.currentName();
        boolean drop =
            (kvTransferParams && "kv_transfer_params".equals(name))
                || (priority && "priority".equals(name));
        if (drop && runStart < 0) {
          runStart = start;
          runPrevEnd = prevEnd;
        } else if (!drop && runStart >= 0) {
          // a run followed by a member: the run, its commas and the space up to the member go
          if (n + 4 > ranges.length) {
            ranges = java.util.Arrays.copyOf(ranges, ranges.length * 2);
          }
          ranges[n++] = runStart;
          ranges[n++] = start;
          runStart = -1;
        }
        p.nextToken();
        p.skipChildren();
        p.finishToken();
        prevEnd = (int) p.currentLocation().getByteOffset();
      }
      if (t != JsonToken.END_OBJECT) {
        throw new IllegalArgumentException("not a well-formed JSON object");
      }
      if (runStart >= 0) {
        // a run at the end: from the end of the member before it (its comma goes too), or from
        // its own start when it is every member
        ranges[n++] = runPrevEnd >= 0 ? runPrevEnd : runStart;
        ranges[n++] = prevEnd;
      }
    } catch (JacksonException e) {
      throw new IllegalArgumentException("not a JSON object: " + e.getOriginalMessage(), e);
    }
    return n == 0 ? body : cut(body, ranges, n);
  }

  /** {@code body} without the byte ranges {@code ranges[0..n)} (ascending, disjoint pairs). */
  private static byte[] cut(byte[] body, int[] ranges, int n) {
    int removed = 0;
    for (int i = 0; i < n; i += 2) {
      removed += ranges[i + 1] - ranges[i];
    }
    byte[] out = new byte[body.length - removed];
    int from = 0;
    int at = 0;
    for (int i = 0; i < n; i += 2) {
      int len = ranges[i] - from;
      System.arraycopy(body, from, out, at, len);
      at += len;
      from = ranges[i + 1];
    }
    System.arraycopy(body, from, out, at, body.length - from);
    return out;
  }
}
