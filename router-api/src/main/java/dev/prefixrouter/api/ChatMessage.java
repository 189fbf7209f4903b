package dev.prefixrouter.api;

import java.util.Objects;

/**
 * One message of a chat conversation, as in the OpenAI {@code messages} array.
 *
 * @param role the speaker ({@code system}, {@code user}, {@code assistant}, {@code tool}, ...);
 *     never blank
 * @param content the message text (multi-part contents are flattened to their text parts by the
 *     reader); may be empty
 */
public record ChatMessage(String role, String content) {
  public ChatMessage {
    Objects.requireNonNull(role, "role");
    Objects.requireNonNull(content, "content");
    if (role.isBlank()) {
      throw new IllegalArgumentException("role must not be blank");
    }
  }

  public static ChatMessage of(String role, String content) {
    return new ChatMessage(role, content);
  }
}
