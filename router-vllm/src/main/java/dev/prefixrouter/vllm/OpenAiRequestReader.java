package dev.prefixrouter.vllm;

import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.vllm.OpenAiRequestException.Problem;
import java.io.IOException;
import java.io.InputStream;
import java.util.Locale;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonParser;
import tools.jackson.core.ObjectReadContext;
import tools.jackson.core.StreamReadConstraints;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.core.TokenStreamLocation;
import tools.jackson.core.exc.StreamConstraintsException;
import tools.jackson.core.exc.UnexpectedEndOfInputException;
import tools.jackson.core.json.JsonFactory;

/**
 * Reads an OpenAI {@code /v1/chat/completions}, {@code /v1/completions} or {@code /v1/responses}
 * JSON body into a {@link RouteRequest}, with Jackson's streaming parser (no tree model): one pass,
 * unknown fields skipped.
 *
 * <p><b>Prompt.</b> A conversation ({@code messages}, or {@code input} with optional {@code
 * instructions}) is rendered once, while the body is read, into one canonical text ({@link
 * Prompt.Text}; see {@link ChatRendering}): roles and text, the {@code tools} definitions, the
 * assistants' {@code tool_calls}, tool results, and every non-text part (image, audio, video, file)
 * as a SHA-256 digest of its URL or inline data, so different tools or different images never give
 * equal block keys. Routing and every failover then hash that text without rendering again, and the
 * lease keeps one string (at most two chars per body byte) instead of a message list. Completions'
 * {@code prompt} is a string, an array of token ids, or an array of either (routed on the first;
 * the others' estimated tokens are {@link RouteRequest#additionalPromptTokens()}, reserved and
 * charged). An image part makes the request require the {@link #VISION_CAPABILITY}. The hex SHA-256
 * digest of every non-text part (the same digest the prompt carries, over the part's fields but its
 * type) goes into {@link RouteRequest#media()} for media affinity; the first {@link
 * RouteRequest#MAX_MEDIA} distinct ones, more parts are rendered but not listed.
 *
 * <p><b>Reservation.</b> Output tokens reserved = {@code min(asked, maxReservedOutputTokens)} per
 * choice, where asked is the largest of {@code max_completion_tokens}, {@code max_output_tokens}
 * and {@code max_tokens} the body gives (engines read different ones per endpoint), else the
 * reader's default; times {@code max(n, best_of)} and the number of prompts of a completions body;
 * at most {@link RouteRequest#MAX_OUTPUT_TOKENS_LIMIT}.
 *
 * <p><b>Tenant.</b> The host's tenant if given, else the body's {@code user} if not blank, else the
 * reader's default. {@code priority} (vLLM's scheduling priority) and {@code stream} are passed
 * through in {@link OpenAiRequest}, which also says whether the body has {@code priority} and
 * {@code kv_transfer_params} members (for a host that strips them before forwarding).
 *
 * <p><b>Bounds</b> (each refusal is an {@link OpenAiRequestException} with a {@link Problem}, the
 * field's path, the bound and the offending length, never the offending value): the body (default 8
 * MiB; {@link Problem#TOO_LARGE}); strict UTF-8 (overlong forms, encoded surrogates and truncated
 * sequences are {@link Problem#MALFORMED_JSON}); nesting depth 64, numbers of 32 digits, field
 * names of 1024 chars; {@code model}, tenant and {@code user} at most {@value #MAX_NAME_LENGTH}
 * chars and without control characters (they appear in logs and limiter keys); {@code n} and {@code
 * best_of} in {@code [1, }{@value #MAX_CHOICES}{@code ]}; {@code cache_salt} 1..1024 chars; roles
 * and part types at most 64 chars. The number of messages and token ids is bounded by the body
 * size. Messages never quote the body and never name parser internals.
 *
 * <p>Immutable and thread-safe; build once and share. Cost: linear in the body size (one UTF-8
 * check, one parse, one SHA-256 pass over media parts).
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

  /** Longest accepted {@code model}, tenant and {@code user}, in chars. */
  public static final int MAX_NAME_LENGTH = 256;

  /** Largest accepted {@code n} and {@code best_of}. */
  public static final int MAX_CHOICES = 128;

  private static final int MAX_SALT_LENGTH = RouteRequest.MAX_CACHE_SALT_LENGTH;

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
                    .maxNestingDepth(MAX_DEPTH)
                    .maxNumberLength(MAX_NUMBER_DIGITS)
                    .maxStringLength(b.maxBodyBytes)
                    .maxNameLength(MAX_FIELD_NAME_LENGTH)
                    .build())
            .build();
  }

  private static final int MAX_DEPTH = 64;
  private static final int MAX_NUMBER_DIGITS = 32;
  private static final int MAX_FIELD_NAME_LENGTH = 1024;

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
   * @throws OpenAiRequestException for any body (or host tenant) that cannot be routed as is
   */
  public OpenAiRequest read(byte[] body, @Nullable String tenant) {
    Objects.requireNonNull(body, "body");
    if (body.length > maxBodyBytes) {
      throw new OpenAiRequestException(
          Problem.TOO_LARGE,
          null,
          "body of " + body.length + " bytes exceeds the limit of " + maxBodyBytes + " bytes");
    }
    if (tenant != null) {
      checkName(tenant, "tenant");
    }
    int invalid = Utf8.firstInvalid(body);
    if (invalid >= 0) {
      throw new OpenAiRequestException(
          Problem.MALFORMED_JSON, null, "invalid UTF-8 at byte offset " + invalid);
    }
    // JSON on the wire is UTF-8 (RFC 8259), and a NUL byte is never valid in it; the JSON parser
    // would take one among the first four bytes as UTF-16 or UTF-32 and parse characters, not
    // bytes,
    // so the byte offsets the gateway splices a cache salt at would be wrong. NUL bytes further on
    // fail the parse itself.
    for (int i = 0; i < Math.min(4, body.length); i++) {
      if (body[i] == 0) {
        throw new OpenAiRequestException(
            Problem.MALFORMED_JSON,
            null,
            "a NUL byte at byte offset " + i + ": the body must be UTF-8 JSON");
      }
    }
    BodyParser parsed;
    try (JsonParser p = factory.createParser(ObjectReadContext.empty(), body)) {
      parsed = new BodyParser(p, factory);
      parsed.parse();
    } catch (StreamConstraintsException e) {
      throw new OpenAiRequestException(Problem.TOO_LARGE, null, tooLarge(e), e);
    } catch (JacksonException e) {
      throw new OpenAiRequestException(Problem.MALFORMED_JSON, null, malformed(e), e);
    }
    return request(parsed, tenant);
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

  private OpenAiRequest request(BodyParser b, @Nullable String hostTenant) {
    String model = b.model;
    if (model == null || model.isBlank()) {
      throw new OpenAiRequestException(
          Problem.MISSING_MODEL, "model", "the body has no (or a blank) 'model'");
    }
    checkName(model, "model");
    if (b.promptFields != 1 || b.endpoint == null) {
      throw new OpenAiRequestException(
          Problem.MISSING_PROMPT,
          null,
          "the body must have exactly one of 'messages', 'prompt' and 'input', had "
              + b.promptFields);
    }
    if (b.user != null) {
      checkName(b.user, "user");
    }
    if (b.cacheSalt != null && (b.cacheSalt.isEmpty() || b.cacheSalt.length() > MAX_SALT_LENGTH)) {
      throw new OpenAiRequestException(
          Problem.INVALID_VALUE,
          "cache_salt",
          "cache_salt must be 1.." + MAX_SALT_LENGTH + " characters, was " + b.cacheSalt.length());
    }
    Prompt prompt;
    int prompts = 1;
    if (b.chat != null) {
      prompt =
          Prompt.ofText(
              b.chat.finish(
                  b.tools, b.endpoint == OpenAiRequest.Endpoint.RESPONSES ? b.instructions : null));
    } else {
      prompt = Objects.requireNonNull(b.prompt, "prompt");
      prompts = b.promptCount;
    }

    // the largest of the limits the body gives: engines read different fields per endpoint (vLLM's
    // chat ignores max_output_tokens), so a small one in a field the engine ignores must not shrink
    // the reservation while a large one in the field it reads sets the output
    Integer asked = largest(largest(b.maxCompletionTokens, b.maxOutputTokens), b.maxTokens);
    int perChoice =
        Math.min(asked != null ? asked : defaultMaxOutputTokens, maxReservedOutputTokens);
    int choices = Math.max(b.n != null ? b.n : 1, b.bestOf != null ? b.bestOf : 1);
    long reserve =
        Math.min((long) perChoice * choices * prompts, RouteRequest.MAX_OUTPUT_TOKENS_LIMIT);

    String effectiveTenant =
        hostTenant != null
            ? hostTenant
            : (b.user != null && !b.user.isBlank() ? b.user : defaultTenant);
    if (b.otherPromptTokens > RouteRequest.MAX_ADDITIONAL_PROMPT_TOKENS) {
      throw new OpenAiRequestException(
          Problem.INVALID_VALUE,
          "prompt",
          "the prompts after the first must total at most "
              + RouteRequest.MAX_ADDITIONAL_PROMPT_TOKENS
              + " tokens (estimated), had "
              + b.otherPromptTokens);
    }
    RouteRequest.Builder rb =
        RouteRequest.builder(effectiveTenant, model)
            .prompt(prompt)
            .additionalPromptTokens((int) b.otherPromptTokens) // reserved and charged, not routed
            .maxOutputTokens((int) reserve)
            .cacheSalt(b.cacheSalt);
    if (b.vision) {
      rb.requireCapability(VISION_CAPABILITY);
    }
    b.media.forEach(rb::media);
    return new OpenAiRequest(
        rb.build(),
        b.endpoint,
        b.stream,
        b.user,
        prompts,
        choices,
        b.priority != null ? b.priority : 0,
        b.priority != null,
        b.kvTransferParams);
  }

  /**
   * Model, tenant and user names end up in logs, limiter keys and rejection messages: bounded, not
   * blank, no control characters.
   */
  private static void checkName(String value, String field) {
    if (value.isBlank()) {
      throw new OpenAiRequestException(Problem.INVALID_VALUE, field, field + " must not be blank");
    }
    if (value.length() > MAX_NAME_LENGTH) {
      throw new OpenAiRequestException(
          Problem.INVALID_VALUE,
          field,
          field + " must be at most " + MAX_NAME_LENGTH + " characters, was " + value.length());
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (Character.isISOControl(c) || c == '\u2028' || c == '\u2029') {
        throw new OpenAiRequestException(
            Problem.INVALID_VALUE,
            field,
            String.format(
                "%s must not contain control characters, has U+%04X at index %d",
                field, (int) c, i));
      }
    }
  }

  /** A parser limit, said in our terms (the limits are the reader's, not the parser's). */
  private String tooLarge(StreamConstraintsException e) {
    String m = String.valueOf(e.getOriginalMessage()).toLowerCase(Locale.ROOT);
    String what;
    if (m.contains("nesting depth")) {
      what = "nesting deeper than " + MAX_DEPTH + " levels";
    } else if (m.contains("number")) {
      what = "a number longer than " + MAX_NUMBER_DIGITS + " digits";
    } else if (m.contains("name")) {
      what = "a field name longer than " + MAX_FIELD_NAME_LENGTH + " characters";
    } else {
      what = "a value longer than " + maxBodyBytes + " characters";
    }
    return "the body exceeds a limit: " + what + at(e);
  }

  private static String malformed(JacksonException e) {
    String kind;
    String m = String.valueOf(e.getOriginalMessage());
    if (e instanceof UnexpectedEndOfInputException) {
      kind = "unexpected end of input";
    } else if (m.startsWith("Duplicate")) {
      kind = "a field appears twice in one object";
    } else {
      kind = "unexpected character";
    }
    return "malformed JSON: " + kind + at(e);
  }

  private static String at(JacksonException e) {
    TokenStreamLocation l = e.getLocation();
    if (l == null || l.getLineNr() < 0) {
      return "";
    }
    return " at line " + l.getLineNr() + ", column " + l.getColumnNr();
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
      if (defaultTenant.isBlank() || defaultTenant.length() > MAX_NAME_LENGTH) {
        throw new IllegalArgumentException(
            "defaultTenant must be 1.." + MAX_NAME_LENGTH + " non-blank characters");
      }
      this.defaultTenant = defaultTenant;
      return this;
    }

    public OpenAiRequestReader build() {
      return new OpenAiRequestReader(this);
    }
  }

  private static @Nullable Integer largest(@Nullable Integer a, @Nullable Integer b) {
    return a == null ? b : b == null ? a : Integer.valueOf(Math.max(a, b));
  }
}
