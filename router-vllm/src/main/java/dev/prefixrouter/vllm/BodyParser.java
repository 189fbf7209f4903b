package dev.prefixrouter.vllm;

import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.vllm.OpenAiRequestException.Problem;
import java.io.StringWriter;
import java.io.Writer;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;
import tools.jackson.core.JsonGenerator;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.core.ObjectWriteContext;
import tools.jackson.core.json.JsonFactory;

/**
 * One pass over one body: the top-level fields as read, and the prompt rendered once. Not
 * thread-safe; one instance per read.
 */
final class BodyParser {
  private final JsonParser p;
  private final JsonFactory factory;

  @Nullable String model;
  @Nullable ChatRendering chat; // messages (chat) or input (responses)
  @Nullable String tools; // compact JSON of `tools`
  @Nullable String instructions;
  @Nullable Prompt prompt; // completions
  int promptCount;
  long otherPromptTokens; // completions: the estimated tokens of the prompts after the first
  @Nullable Integer maxTokens;
  @Nullable Integer maxCompletionTokens;
  @Nullable Integer maxOutputTokens;
  @Nullable Integer n;
  @Nullable Integer bestOf;
  @Nullable Integer priority;
  @Nullable String user;
  boolean stream;
  @Nullable String cacheSalt;
  boolean kvTransferParams;
  boolean vision;

  /** Hex SHA-256 digests of the media parts, distinct, at most {@link RouteRequest#MAX_MEDIA}. */
  final java.util.Set<String> media = new java.util.LinkedHashSet<>();

  int promptFields; // how many of messages / prompt / input were given
  OpenAiRequest.@Nullable Endpoint endpoint;

  BodyParser(JsonParser p, JsonFactory factory) {
    this.p = p;
    this.factory = factory;
  }

  void parse() {
    if (p.nextToken() != JsonToken.START_OBJECT) {
      throw new OpenAiRequestException(
          Problem.NOT_AN_OBJECT, null, "the body must be a JSON object");
    }
    JsonToken t;
    while ((t = p.nextToken()) == JsonToken.PROPERTY_NAME) {
      String name = p.currentName();
      JsonToken v = p.nextToken();
      field(name, v);
    }
    if (t != JsonToken.END_OBJECT) {
      throw new OpenAiRequestException(
          Problem.MALFORMED_JSON, null, "unexpected " + describe(t) + " in the body object");
    }
    if (p.nextToken() != null) {
      throw new OpenAiRequestException(
          Problem.MALFORMED_JSON, null, "trailing content after the JSON object");
    }
  }

  private void field(String name, JsonToken v) {
    switch (name) {
      case "model" -> model = string(v, "model", false);
      case "messages" -> {
        promptFields++;
        endpoint = OpenAiRequest.Endpoint.CHAT_COMPLETIONS;
        chat = messages(v, "messages", false);
      }
      case "input" -> {
        promptFields++;
        endpoint = OpenAiRequest.Endpoint.RESPONSES;
        chat = input(v);
      }
      case "prompt" -> {
        promptFields++;
        endpoint = OpenAiRequest.Endpoint.COMPLETIONS;
        prompt(v);
      }
      case "tools" -> tools = v == JsonToken.VALUE_NULL ? null : compactJson(v, "tools");
      case "instructions" -> instructions = string(v, "instructions", true);
      case "max_tokens" -> maxTokens = intIn(v, "max_tokens", 0, MAX_TOKENS);
      case "max_completion_tokens" ->
          maxCompletionTokens = intIn(v, "max_completion_tokens", 0, MAX_TOKENS);
      case "max_output_tokens" -> maxOutputTokens = intIn(v, "max_output_tokens", 0, MAX_TOKENS);
      case "n" -> n = intIn(v, "n", 1, OpenAiRequestReader.MAX_CHOICES);
      case "best_of" -> bestOf = intIn(v, "best_of", 1, OpenAiRequestReader.MAX_CHOICES);
      case "priority" -> priority = intIn(v, "priority", Integer.MIN_VALUE, Integer.MAX_VALUE);
      case "user" -> user = string(v, "user", true);
      case "stream" -> stream = bool(v, "stream");
      case "cache_salt" -> cacheSalt = string(v, "cache_salt", true);
      case "kv_transfer_params" -> {
        kvTransferParams = true;
        p.skipChildren();
      }
      default -> p.skipChildren();
    }
  }

  private static final int MAX_TOKENS = dev.prefixrouter.api.RouteRequest.MAX_OUTPUT_TOKENS_LIMIT;

  // ---- chat messages and responses input

  private ChatRendering messages(JsonToken v, String path, boolean responses) {
    if (v != JsonToken.START_ARRAY) {
      throw wrongType(path, "an array", v);
    }
    ChatRendering out = new ChatRendering();
    JsonToken t;
    while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
      message(t, path, out.messages(), responses, out);
    }
    if (out.messages() == 0) {
      throw new OpenAiRequestException(Problem.INVALID_VALUE, path, path + " must not be empty");
    }
    return out;
  }

  /** {@code input}: a string (one user message) or an array of items. */
  private ChatRendering input(JsonToken v) {
    if (v == JsonToken.VALUE_STRING) {
      ChatRendering out = new ChatRendering();
      out.message("user", ChatRendering.escape(p.getString()), "");
      return out;
    }
    if (v != JsonToken.START_ARRAY) {
      throw wrongType("input", "a string or an array", v);
    }
    return messages(v, "input", true);
  }

  /**
   * One chat message, or one responses item: a message ({@code role} + {@code content}) or another
   * item ({@code function_call}, {@code function_call_output}, ...) rendered with its {@code type}
   * as role and its fields as extras.
   */
  private void message(JsonToken t, String array, int index, boolean responses, ChatRendering out) {
    if (t != JsonToken.START_OBJECT) {
      throw wrongType(array + "[" + index + "]", "an object", t);
    }
    String role = null;
    String type = null;
    CharSequence content = "";
    StringBuilder extras = this.extras;
    extras.setLength(0);
    while ((t = p.nextToken()) == JsonToken.PROPERTY_NAME) {
      String name = p.currentName();
      JsonToken fv = p.nextToken();
      switch (name) {
        case "role" -> role = requireString(fv, array, index, ".role");
        case "type" -> {
          if (responses) {
            type = requireString(fv, array, index, ".type");
          } else {
            p.skipChildren();
          }
        }
        case "content" ->
            content =
                fv == JsonToken.VALUE_STRING
                    ? ChatRendering.escape(p.getString())
                    : content(fv, array + "[" + index + "].content");
        case "tool_calls", "name", "tool_call_id" ->
            renderExtra(extras, name, fv, array + "[" + index + "]");
        case "id", "status" -> p.skipChildren();
        default -> {
          if (responses) {
            renderExtra(extras, name, fv, array + "[" + index + "]");
          } else {
            p.skipChildren();
          }
        }
      }
    }
    if (role == null && responses && type != null && !type.equals("message")) {
      role = type;
    }
    if (role == null || role.isBlank() || role.length() > MAX_ROLE_LENGTH) {
      throw badRole(array + "[" + index + "]", role);
    }
    out.message(role, content, extras);
  }

  private static OpenAiRequestException badRole(String path, @Nullable String role) {
    if (role == null || role.isBlank()) {
      return new OpenAiRequestException(
          Problem.INVALID_VALUE, path + ".role", path + " has no (or a blank) role");
    }
    return new OpenAiRequestException(
        Problem.INVALID_VALUE,
        path + ".role",
        path + ".role must be at most " + MAX_ROLE_LENGTH + " characters, was " + role.length());
  }

  /** A string field of {@code array[index]}; the path is built only for the error. */
  private String requireString(JsonToken v, String array, int index, String suffix) {
    if (v == JsonToken.VALUE_STRING) {
      return p.getString();
    }
    throw wrongType(array + "[" + index + "]" + suffix, "a string", v);
  }

  private static final int MAX_ROLE_LENGTH = 64;

  /** Scratch for one message's extras, appended to the rendering before the next message. */
  private final StringBuilder extras = new StringBuilder();

  private void renderExtra(StringBuilder extras, String name, JsonToken v, String path) {
    if (v == JsonToken.VALUE_NULL) {
      return;
    }
    String json = compactJson(v, path + "." + name);
    if (!json.equals("[]") && !json.equals("{}")) { // rendered as nothing, like absence
      ChatRendering.extra(extras, name, json);
    }
  }

  /** A string, null, or an array of parts: text parts joined by newlines, media as digests. */
  private CharSequence content(JsonToken v, String path) {
    if (v == JsonToken.VALUE_NULL) {
      return "";
    }
    if (v == JsonToken.VALUE_STRING) {
      return ChatRendering.escape(p.getString());
    }
    if (v != JsonToken.START_ARRAY) {
      throw wrongType(path, "a string, null or an array of parts", v);
    }
    StringBuilder sb = new StringBuilder();
    int i = 0;
    JsonToken t;
    while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
      CharSequence part = part(t, path + "[" + i++ + "]");
      if (sb.length() > 0) {
        sb.append('\n');
      }
      sb.append(part);
    }
    return sb;
  }

  /**
   * One digest for every part of the body (a part costs no buffer of its own), made on the first
   * part that needs one (a body of strings and text parts makes none).
   */
  private ChatRendering.@Nullable DigestWriter digest;

  /** The body's digest writer, reset for a new part. */
  private ChatRendering.DigestWriter freshDigest() {
    ChatRendering.DigestWriter d = digest;
    if (d == null) {
      d = new ChatRendering.DigestWriter();
      digest = d;
    } else {
      d.reset();
    }
    return d;
  }

  /**
   * One content part: the text of a text part ({@linkplain ChatRendering#escape escaped}), else the
   * placeholder of its digest. The part is read field by field; media fields are hashed as they are
   * read, without keeping them.
   */
  private CharSequence part(JsonToken t, String path) {
    if (t != JsonToken.START_OBJECT) {
      throw wrongType(path, "an object", t);
    }
    String type = null;
    String text = null;
    ChatRendering.DigestWriter digest = null;
    while ((t = p.nextToken()) == JsonToken.PROPERTY_NAME) {
      String name = p.currentName();
      JsonToken fv = p.nextToken();
      switch (name) {
        case "type" -> type = string(fv, path + ".type", false);
        case "text" -> text = string(fv, path + ".text", false);
        default -> {
          if (digest == null) {
            digest = freshDigest();
          }
          // names and text escaped as in the rendering: no two parts hash alike by spelling
          // a separator
          digest.put(ChatRendering.escape(name));
          digest.put(ChatRendering.UNIT);
          copyCompact(fv, digest, path + "." + name);
          digest.put(ChatRendering.RECORD);
        }
      }
    }
    if (type == null) {
      throw new OpenAiRequestException(
          Problem.INVALID_VALUE, path + ".type", path + " has no type");
    }
    if (isText(type)) {
      if (text == null) {
        throw new OpenAiRequestException(
            Problem.INVALID_VALUE, path + ".text", path + " is a text part without text");
      }
      return ChatRendering.escape(text);
    }
    if (type.equals("image_url") || type.equals("input_image") || type.equals("image")) {
      vision = true;
    }
    if (type.length() > MAX_ROLE_LENGTH) {
      throw new OpenAiRequestException(
          Problem.INVALID_VALUE,
          path + ".type",
          path + ".type must be at most " + MAX_ROLE_LENGTH + " characters, was " + type.length());
    }
    if (digest == null) {
      digest = freshDigest();
    }
    if (text != null) {
      digest.put("text");
      digest.put(ChatRendering.UNIT);
      digest.put(ChatRendering.escape(text));
    }
    byte[] d = digest.digest();
    if (media.size() < RouteRequest.MAX_MEDIA) {
      media.add(java.util.HexFormat.of().formatHex(d));
    }
    return ChatRendering.mediaPlaceholder(type, d);
  }

  private static boolean isText(String type) {
    return type.equals("text") || type.equals("input_text") || type.equals("output_text");
  }

  // ---- completions prompt

  /** {@code prompt}: a string, token ids, or an array of either (routed on the first). */
  private void prompt(JsonToken v) {
    if (v == JsonToken.VALUE_STRING) {
      prompt = Prompt.ofText(p.getString());
      promptCount = 1;
      return;
    }
    if (v != JsonToken.START_ARRAY) {
      throw wrongType("prompt", "a string or an array", v);
    }
    JsonToken t = p.nextToken();
    if (t == JsonToken.END_ARRAY) {
      throw new OpenAiRequestException(Problem.INVALID_VALUE, "prompt", "prompt must not be empty");
    }
    if (t == JsonToken.VALUE_NUMBER_INT) {
      prompt = Prompt.ofTokens(tokenIds(t, "prompt"));
      promptCount = 1;
      return;
    }
    Prompt first = null;
    int count = 0;
    long others = 0;
    while (t != JsonToken.END_ARRAY) {
      String path = "prompt[" + count + "]";
      Prompt one;
      if (t == JsonToken.VALUE_STRING) {
        Prompt text = Prompt.ofText(p.getString());
        one = first == null ? text : null;
        others += first == null ? 0 : text.estimatedTokens();
      } else if (t == JsonToken.START_ARRAY) {
        JsonToken inner = p.nextToken();
        if (inner == JsonToken.END_ARRAY) {
          throw new OpenAiRequestException(Problem.INVALID_VALUE, path, path + " is empty");
        }
        int[] ids = tokenIds(inner, path);
        one = first == null ? Prompt.ofTokens(ids) : null;
        others += first == null ? 0 : ids.length;
      } else {
        throw wrongType(path, "a string or an array of token ids", t);
      }
      if (first == null) {
        first = one;
      }
      count++;
      t = p.nextToken();
    }
    prompt = first;
    promptCount = count;
    otherPromptTokens = others;
  }

  /** Reads token ids starting at the current token {@code t} through the closing bracket. */
  private int[] tokenIds(JsonToken t, String path) {
    int[] ids = new int[64];
    int count = 0;
    while (t != JsonToken.END_ARRAY) {
      if (t != JsonToken.VALUE_NUMBER_INT) {
        throw wrongType(path + "[" + count + "]", "a token id (integer)", t);
      }
      long id = p.getNumberType() == JsonParser.NumberType.BIG_INTEGER ? -1 : p.getLongValue();
      if (id < 0 || id > Integer.MAX_VALUE) {
        throw new OpenAiRequestException(
            Problem.INVALID_VALUE,
            path + "[" + count + "]",
            path + "[" + count + "] must be a token id in [0, " + Integer.MAX_VALUE + "]");
      }
      if (count == ids.length) {
        ids = Arrays.copyOf(ids, count * 2);
      }
      ids[count++] = (int) id;
      t = p.nextToken();
    }
    return Arrays.copyOf(ids, count);
  }

  // ---- JSON values

  /** The value at the current token as compact JSON. */
  private String compactJson(JsonToken v, String path) {
    StringWriter out = new StringWriter();
    copyCompact(v, out, path);
    return out.toString();
  }

  private void copyCompact(JsonToken v, Writer out, String path) {
    if (v == null) {
      throw wrongType(path, "a value", null);
    }
    try (JsonGenerator g = factory.createGenerator(ObjectWriteContext.empty(), out)) {
      g.copyCurrentStructure(p);
    }
  }

  private @Nullable String string(JsonToken v, String field, boolean nullable) {
    if (v == JsonToken.VALUE_STRING) {
      return p.getString();
    }
    if (nullable && v == JsonToken.VALUE_NULL) {
      return null;
    }
    throw wrongType(field, nullable ? "a string or null" : "a string", v);
  }

  private boolean bool(JsonToken v, String field) {
    if (v == JsonToken.VALUE_TRUE) {
      return true;
    }
    if (v == JsonToken.VALUE_FALSE || v == JsonToken.VALUE_NULL) {
      return false;
    }
    throw wrongType(field, "a boolean", v);
  }

  /** An integer in {@code [min, max]}, or null for JSON null. */
  private @Nullable Integer intIn(JsonToken v, String field, int min, int max) {
    if (v == JsonToken.VALUE_NULL) {
      return null;
    }
    if (v != JsonToken.VALUE_NUMBER_INT) {
      throw wrongType(field, "an integer", v);
    }
    JsonParser.NumberType nt = p.getNumberType();
    long value = nt == JsonParser.NumberType.BIG_INTEGER ? Long.MAX_VALUE : p.getLongValue();
    if (value < min || value > max || nt == JsonParser.NumberType.BIG_INTEGER) {
      throw new OpenAiRequestException(
          Problem.INVALID_VALUE,
          field,
          field
              + " must be in ["
              + min
              + ", "
              + max
              + "], was "
              + (nt == JsonParser.NumberType.BIG_INTEGER ? "a larger number" : value));
    }
    return (int) value;
  }

  static OpenAiRequestException wrongType(String field, String expected, @Nullable JsonToken got) {
    return new OpenAiRequestException(
        Problem.WRONG_TYPE, field, field + " must be " + expected + ", was " + describe(got));
  }

  static String describe(@Nullable JsonToken t) {
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
      case PROPERTY_NAME -> "a field name";
      case END_ARRAY -> "the end of an array";
      case END_OBJECT -> "the end of an object";
      default -> "a JSON token";
    };
  }
}
