package dev.prefixrouter.gateway;

import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.databind.json.JsonMapper;

/**
 * Binds a request's vLLM {@code cache_salt} to its tenant, under prefix isolation: vLLM isolates
 * cached blocks by salt alone, so the engine keeps tenants apart only if every request carries a
 * salt its tenant owns. The salt forwarded is {@code <tenant length>:<tenant>}, followed by {@code
 * |<client salt>} when the client sent one (a tenant may still partition its own cache). The
 * encoding is injective over (tenant, client salt), so no client salt names another tenant's
 * namespace, and the engine reads the tenant back from it for KV events of requests this replica
 * has not routed ({@code RoutingEngineBuilder.prefixIsolation}). Stateless.
 *
 * <p>Cost: one streaming pass over the body's top-level members (nested values skipped) and one
 * copy of the body, with the member spliced in after the opening brace or its value replaced (the
 * reader refuses a body that names a field twice, so there is one).
 */
final class TenantCacheSalt {
  private static final JsonMapper JSON = JsonMapper.builder().build();

  private TenantCacheSalt() {}

  /** The salt forwarded for {@code tenant} when the client sent {@code client} (or none). */
  static String salt(String tenant, @Nullable String client) {
    String bound = tenant.length() + ":" + tenant;
    return client == null ? bound : bound + "|" + client;
  }

  /**
   * {@code body} (a JSON object, as the reader accepted it) with its {@code cache_salt} set to
   * {@code salt}, every other member as it came.
   */
  static byte[] withSalt(byte[] body, String salt) {
    long open = -1;
    boolean empty = true;
    long from = -1; // the byte range of the body's cache_salt value, if it has one
    long to = -1;
    try (JsonParser p = JSON.createParser(body)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new IllegalArgumentException("not a JSON object");
      }
      open = p.currentTokenLocation().getByteOffset();
      while (p.nextToken() == JsonToken.PROPERTY_NAME) {
        empty = false;
        boolean salt0 = "cache_salt".equals(p.currentName());
        p.nextToken();
        if (salt0) {
          from = p.currentTokenLocation().getByteOffset();
          p.skipChildren();
          p.finishToken();
          to = p.currentLocation().getByteOffset();
          break; // the reader refused a body that names a field twice
        }
        p.skipChildren();
      }
    } catch (JacksonException e) {
      throw new IllegalArgumentException("not a JSON object: " + e.getOriginalMessage(), e);
    }
    byte[] value = JSON.writeValueAsString(salt).getBytes(StandardCharsets.UTF_8);
    if (from >= 0) {
      return replace(body, (int) from, (int) to, value);
    }
    byte[] name = "\"cache_salt\":".getBytes(StandardCharsets.US_ASCII);
    byte[] member = new byte[name.length + value.length + (empty ? 0 : 1)];
    System.arraycopy(name, 0, member, 0, name.length);
    System.arraycopy(value, 0, member, name.length, value.length);
    if (!empty) {
      member[member.length - 1] = ',';
    }
    int at = (int) open + 1;
    return replace(body, at, at, member);
  }

  /** {@code body} with bytes {@code [from, to)} replaced by {@code with}. */
  private static byte[] replace(byte[] body, int from, int to, byte[] with) {
    byte[] out = new byte[body.length - (to - from) + with.length];
    System.arraycopy(body, 0, out, 0, from);
    System.arraycopy(with, 0, out, from, with.length);
    System.arraycopy(body, to, out, from + with.length, body.length - to);
    return out;
  }
}
