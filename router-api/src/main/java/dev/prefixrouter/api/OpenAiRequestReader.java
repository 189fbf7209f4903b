package dev.prefixrouter.api;

import dev.prefixrouter.api.OpenAiRequestException.Problem;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.core.ObjectReadContext;
import tools.jackson.core.StreamReadConstraints;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.core.exc.StreamConstraintsException;
import tools.jackson.core.json.JsonFactory;

/**
 * Reads an OpenAI {@code /v1/chat/completions} or {@code /v1/completions} JSON body into a {@link
 * RouteRequest}, with Jackson's streaming parser (no tree model): one pass, unknown fields skipped.
 *
 * <p>Fields used: {@code model} (required), {@code messages} (chat: {@code role} + {@code content},
 * where content may be a string, {@code null} or an array of parts whose {@code text} parts are
 * joined with newlines; an {@code image_url} / {@code input_image} part makes the request require
 * the {@code vision} capability), {@code prompt} (completions: a string, an array of token ids, or
 * an array of either, routed on the first), {@code max_completion_tokens} or else {@code
 * max_tokens} (reserved output tokens; the reader's default when absent, capped at its maximum),
 * {@code user}, {@code stream}, {@code cache_salt}.
 *
 * <p>Limits: the whole body (default 8 MiB), nesting depth 64, numbers of at most 32 digits; the
 * number of messages and token ids is bounded by the body size. Every refusal is an {@link
 * OpenAiRequestException} with a {@link Problem} and the field's path.
 *
 * <p>Immutable and thread-safe; build once and share. Cost: linear in the body size.
 *
 * <pre>{@code
 * OpenAiRequestReader reader = OpenAiRequestReader.builder().maxBodyBytes(4 << 20).build();
 * OpenAiRequest parsed = reader.read(bodyBytes, tenantFromAuthHeader);
 * RouteDecision d = engine.route(parsed.routeRequest());
 * }</pre>
 */
public final class OpenAiRequestReader {

  /** The capability a request with image parts requires. */
  public static final String VISION_CAPABILITY = "vision";

  private final JsonFactory factory;
  private final int maxBodyBytes;
  private final int defaultMaxOutputTokens;
  private final int maxReservedOutputTokens;
  private final String defaultTenant;

  private OpenAiRequestReader(Builder b) {
    this.maxBodyBytes = b.maxBodyBytes;
    this.defaultMaxOutputTokens = b.defaultMaxOutputTokens;
    this.maxReservedOutputTokens = b.maxReservedOutputTokens;
    this.defaultTenant = b.defaultTenant;
    this.factory =
        JsonFactory.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .streamReadConstraints(
                StreamReadConstraints.builder()
                    .maxDocumentLength(b.maxBodyBytes)
                    .maxNestingDepth(64)
                    .maxNumberLength(32)
                    .maxStringLength(b.maxBodyBytes)
                    .maxNameLength(1024)
                    .build())
            .build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** A reader with the defaults (8 MiB bodies, 256 default / 32768 max reserved tokens). */
  public static OpenAiRequestReader defaults() {
    return builder().build();
  }

  /**
   * Reads a body.
   *
   * @param tenant the tenant as the host authenticated it; {@code null} falls back to the body's
   *     {@code user}, then to the reader's default tenant
   * @throws OpenAiRequestException for any body that cannot be routed as is
   */
  public OpenAiRequest read(byte[] body, @Nullable String tenant) {
    Objects.requireNonNull(body, "body");
    if (body.length > maxBodyBytes) {
      throw new OpenAiRequestException(
          Problem.TOO_LARGE,
          null,
          "body of " + body.length + " bytes exceeds the limit of " + maxBodyBytes + " bytes");
    }
    try (JsonParser p = factory.createParser(ObjectReadContext.empty(), body)) {
      return parse(p, tenant);
    } catch (StreamConstraintsException e) {
      throw new OpenAiRequestException(Problem.TOO_LARGE, null, e.getOriginalMessage(), e);
    } catch (OpenAiRequestException e) {
      throw e;
    } catch (JacksonException e) {
      throw new OpenAiRequestException(
          Problem.MALFORMED_JSON, null, "malformed JSON: " + e.getOriginalMessage(), e);
    }
  }

  /**
   * Reads a body from a stream, reading at most one byte past the size cap.
   *
   * @throws IOException if the stream fails
   */
  public OpenAiRequest read(InputStream body, @Nullable String tenant) throws IOException {
    Objects.requireNonNull(body, "body");
    byte[] bytes = body.readNBytes(maxBodyBytes + 1);
    if (bytes.length > maxBodyBytes) {
      throw new OpenAiRequestException(
          Problem.TOO_LARGE, null, "body exceeds the limit of " + maxBodyBytes + " bytes");
    }
    return read(bytes, tenant);
  }

  private OpenAiRequest parse(JsonParser p, @Nullable String tenant) {
    if (p.nextToken() != JsonToken.START_OBJECT) {
      throw new OpenAiRequestException(
          Problem.NOT_AN_OBJECT, null, "the body must be a JSON object");
    }
    String model = null;
    List<ChatMessage> messages = null;
    Prompt prompt = null;
    int promptCount = 0;
    Integer maxTokens = null;
    Integer maxCompletionTokens = null;
    String user = null;
    boolean stream = false;
    String cacheSalt = null;
    boolean[] vision = new boolean[1];

    JsonToken t;
    while ((t = p.nextToken()) == JsonToken.PROPERTY_NAME) {
      String name = p.currentName();
      JsonToken v = p.nextToken();
      switch (name) {
        case "model" -> model = string(p, v, "model", false);
        case "messages" -> messages = messages(p, v, vision);
        case "prompt" -> {
          Object[] r = prompt(p, v);
          prompt = (Prompt) r[0];
          promptCount = (Integer) r[1];
        }
        case "max_tokens" -> maxTokens = nonNegativeInt(p, v, "max_tokens");
        case "max_completion_tokens" ->
            maxCompletionTokens = nonNegativeInt(p, v, "max_completion_tokens");
        case "user" -> user = string(p, v, "user", true);
        case "stream" -> stream = bool(p, v, "stream");
        case "cache_salt" -> {
          cacheSalt = string(p, v, "cache_salt", true);
          if (cacheSalt != null && (cacheSalt.isEmpty() || cacheSalt.length() > 1024)) {
            throw new OpenAiRequestException(
                Problem.INVALID_VALUE,
                "cache_salt",
                "cache_salt must be 1..1024 characters, was " + cacheSalt.length());
          }
        }
        default -> p.skipChildren();
      }
    }
    if (t != JsonToken.END_OBJECT) {
      throw new OpenAiRequestException(Problem.MALFORMED_JSON, null, "unexpected token " + t);
    }
    if (p.nextToken() != null) {
      throw new OpenAiRequestException(
          Problem.MALFORMED_JSON, null, "trailing content after the JSON object");
    }
    if (model == null || model.isBlank()) {
      throw new OpenAiRequestException(
          Problem.MISSING_MODEL, "model", "the body has no (or a blank) 'model'");
    }
    if (messages != null && prompt != null) {
      throw new OpenAiRequestException(
          Problem.MISSING_PROMPT, null, "the body has both 'messages' and 'prompt'");
    }
    if (messages == null && prompt == null) {
      throw new OpenAiRequestException(
          Problem.MISSING_PROMPT, null, "the body has neither 'messages' nor 'prompt'");
    }
    OpenAiRequest.Endpoint endpoint =
        messages != null
            ? OpenAiRequest.Endpoint.CHAT_COMPLETIONS
            : OpenAiRequest.Endpoint.COMPLETIONS;
    Prompt routedPrompt = messages != null ? Prompt.ofChat(messages) : prompt;

    Integer requested = maxCompletionTokens != null ? maxCompletionTokens : maxTokens;
    int reserve =
        Math.min(requested != null ? requested : defaultMaxOutputTokens, maxReservedOutputTokens);
    String effectiveTenant =
        tenant != null ? tenant : (user != null && !user.isBlank() ? user : defaultTenant);

    RouteRequest.Builder rb =
        RouteRequest.builder(effectiveTenant, model)
            .prompt(routedPrompt)
            .maxOutputTokens(reserve)
            .cacheSalt(cacheSalt);
    if (vision[0]) {
      rb.requireCapability(VISION_CAPABILITY);
    }
    return new OpenAiRequest(
        rb.build(), endpoint, stream, user, messages != null ? 1 : promptCount);
  }

  private static List<ChatMessage> messages(JsonParser p, JsonToken v, boolean[] vision) {
    if (v != JsonToken.START_ARRAY) {
      throw wrongType("messages", "an array", v);
    }
    List<ChatMessage> out = new ArrayList<>();
    JsonToken t;
    while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
      String path = "messages[" + out.size() + "]";
      if (t != JsonToken.START_OBJECT) {
        throw wrongType(path, "an object", t);
      }
      String role = null;
      String content = "";
      while ((t = p.nextToken()) == JsonToken.PROPERTY_NAME) {
        String name = p.currentName();
        JsonToken fv = p.nextToken();
        switch (name) {
          case "role" -> role = string(p, fv, path + ".role", false);
          case "content" -> content = content(p, fv, path + ".content", vision);
          default -> p.skipChildren();
        }
      }
      if (role == null || role.isBlank()) {
        throw new OpenAiRequestException(
            Problem.INVALID_VALUE, path + ".role", path + " has no (or a blank) role");
      }
      out.add(new ChatMessage(role, content));
    }
    if (out.isEmpty()) {
      throw new OpenAiRequestException(
          Problem.INVALID_VALUE, "messages", "messages must not be empty");
    }
    return out;
  }

  private static String content(JsonParser p, JsonToken v, String path, boolean[] vision) {
    if (v == JsonToken.VALUE_NULL) {
      return "";
    }
    if (v == JsonToken.VALUE_STRING) {
      return p.getString();
    }
    if (v != JsonToken.START_ARRAY) {
      throw wrongType(path, "a string, null or an array of parts", v);
    }
    StringBuilder sb = new StringBuilder();
    int i = 0;
    JsonToken t;
    while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
      String partPath = path + "[" + i++ + "]";
      if (t != JsonToken.START_OBJECT) {
        throw wrongType(partPath, "an object", t);
      }
      String type = null;
      String text = null;
      while ((t = p.nextToken()) == JsonToken.PROPERTY_NAME) {
        String name = p.currentName();
        JsonToken fv = p.nextToken();
        switch (name) {
          case "type" -> type = string(p, fv, partPath + ".type", false);
          case "text" -> text = string(p, fv, partPath + ".text", false);
          default -> p.skipChildren();
        }
      }
      if ("text".equals(type) && text != null) {
        if (sb.length() > 0) {
          sb.append('\n');
        }
        sb.append(text);
      } else if ("image_url".equals(type) || "input_image".equals(type)) {
        vision[0] = true;
      }
    }
    return sb.toString();
  }

  /** Returns {prompt, count}. */
  private static Object[] prompt(JsonParser p, JsonToken v) {
    if (v == JsonToken.VALUE_STRING) {
      return new Object[] {Prompt.ofText(p.getString()), 1};
    }
    if (v != JsonToken.START_ARRAY) {
      throw wrongType("prompt", "a string or an array", v);
    }
    JsonToken t = p.nextToken();
    if (t == JsonToken.END_ARRAY) {
      throw new OpenAiRequestException(Problem.INVALID_VALUE, "prompt", "prompt must not be empty");
    }
    if (t == JsonToken.VALUE_NUMBER_INT) {
      return new Object[] {Prompt.ofTokens(tokenIds(p, t, "prompt")), 1};
    }
    // an array of prompts: route on the first, count the rest
    Prompt first = null;
    int count = 0;
    while (t != JsonToken.END_ARRAY) {
      String path = "prompt[" + count + "]";
      Prompt one;
      if (t == JsonToken.VALUE_STRING) {
        one = Prompt.ofText(p.getString());
      } else if (t == JsonToken.START_ARRAY) {
        JsonToken inner = p.nextToken();
        if (inner == JsonToken.END_ARRAY) {
          throw new OpenAiRequestException(Problem.INVALID_VALUE, path, path + " is empty");
        }
        one = Prompt.ofTokens(tokenIds(p, inner, path));
      } else {
        throw wrongType(path, "a string or an array of token ids", t);
      }
      if (first == null) {
        first = one;
      }
      count++;
      t = p.nextToken();
    }
    return new Object[] {first, count};
  }

  /** Reads token ids starting at the current token {@code t} through the closing bracket. */
  private static int[] tokenIds(JsonParser p, JsonToken t, String path) {
    int[] ids = new int[64];
    int n = 0;
    while (t != JsonToken.END_ARRAY) {
      if (t != JsonToken.VALUE_NUMBER_INT) {
        throw wrongType(path + "[" + n + "]", "a token id (integer)", t);
      }
      long id = p.getLongValue();
      if (id < 0 || id > Integer.MAX_VALUE) {
        throw new OpenAiRequestException(
            Problem.INVALID_VALUE, path + "[" + n + "]", "token id out of range: " + id);
      }
      if (n == ids.length) {
        ids = Arrays.copyOf(ids, n * 2);
      }
      ids[n++] = (int) id;
      t = p.nextToken();
    }
    return Arrays.copyOf(ids, n);
  }

  private static @Nullable String string(
      JsonParser p, JsonToken v, String field, boolean nullable) {
    if (v == JsonToken.VALUE_STRING) {
      return p.getString();
    }
    if (nullable && v == JsonToken.VALUE_NULL) {
      return null;
    }
    throw wrongType(field, nullable ? "a string or null" : "a string", v);
  }

  private static boolean bool(JsonParser p, JsonToken v, String field) {
    if (v == JsonToken.VALUE_TRUE) {
      return true;
    }
    if (v == JsonToken.VALUE_FALSE || v == JsonToken.VALUE_NULL) {
      return false;
    }
    throw wrongType(field, "a boolean", v);
  }

  private static @Nullable Integer nonNegativeInt(JsonParser p, JsonToken v, String field) {
    if (v == JsonToken.VALUE_NULL) {
      return null;
    }
    if (v != JsonToken.VALUE_NUMBER_INT) {
      throw wrongType(field, "an integer", v);
    }
    JsonParser.NumberType nt = p.getNumberType();
    if (nt != JsonParser.NumberType.INT && nt != JsonParser.NumberType.LONG) {
      throw new OpenAiRequestException(Problem.INVALID_VALUE, field, field + " is out of range");
    }
    long value = p.getLongValue();
    if (value < 0 || value > RouteRequest.MAX_OUTPUT_TOKENS_LIMIT) {
      throw new OpenAiRequestException(
          Problem.INVALID_VALUE,
          field,
          field + " must be in [0, " + RouteRequest.MAX_OUTPUT_TOKENS_LIMIT + "], was " + value);
    }
    return (int) value;
  }

  private static OpenAiRequestException wrongType(String field, String expected, JsonToken got) {
    return new OpenAiRequestException(
        Problem.WRONG_TYPE, field, field + " must be " + expected + ", was " + describe(got));
  }

  private static String describe(@Nullable JsonToken t) {
    if (t == null) {
      return "end of input";
    }
    return switch (t) {
      case START_OBJECT -> "an object";
      case START_ARRAY -> "an array";
      case VALUE_STRING -> "a string";
      case VALUE_NUMBER_INT -> "an integer";
      case VALUE_NUMBER_FLOAT -> "a decimal number";
      case VALUE_TRUE, VALUE_FALSE -> "a boolean";
      case VALUE_NULL -> "null";
      default -> t.name();
    };
  }

  /** Builder for {@link OpenAiRequestReader}. */
  public static final class Builder {
    private int maxBodyBytes = 8 << 20;
    private int defaultMaxOutputTokens = 256;
    private int maxReservedOutputTokens = 32_768;
    private String defaultTenant = "anonymous";

    private Builder() {}

    /** Largest accepted body; 1 KiB .. 1 GiB. */
    public Builder maxBodyBytes(int maxBodyBytes) {
      if (maxBodyBytes < 1024 || maxBodyBytes > (1 << 30)) {
        throw new IllegalArgumentException(
            "maxBodyBytes must be in [1024, 1073741824], was " + maxBodyBytes);
      }
      this.maxBodyBytes = maxBodyBytes;
      return this;
    }

    /** Output tokens reserved when the body gives no {@code max_tokens}; >= 0. */
    public Builder defaultMaxOutputTokens(int tokens) {
      if (tokens < 0 || tokens > RouteRequest.MAX_OUTPUT_TOKENS_LIMIT) {
        throw new IllegalArgumentException("defaultMaxOutputTokens out of range: " + tokens);
      }
      this.defaultMaxOutputTokens = tokens;
      return this;
    }

    /** Cap on reserved output tokens, whatever the body asks; >= 0. */
    public Builder maxReservedOutputTokens(int tokens) {
      if (tokens < 0 || tokens > RouteRequest.MAX_OUTPUT_TOKENS_LIMIT) {
        throw new IllegalArgumentException("maxReservedOutputTokens out of range: " + tokens);
      }
      this.maxReservedOutputTokens = tokens;
      return this;
    }

    /** Tenant used when neither the host nor the body's {@code user} names one. */
    public Builder defaultTenant(String defaultTenant) {
      Objects.requireNonNull(defaultTenant, "defaultTenant");
      if (defaultTenant.isBlank()) {
        throw new IllegalArgumentException("defaultTenant must not be blank");
      }
      this.defaultTenant = defaultTenant;
      return this;
    }

    public OpenAiRequestReader build() {
      return new OpenAiRequestReader(this);
    }
  }
}
