package dev.prefixrouter.spring;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.util.unit.DataSize;

/**
 * {@code prefix-router.reader.*}: the {@link dev.prefixrouter.vllm.OpenAiRequestReader} bean that
 * turns OpenAI request bodies into route requests.
 */
@ConfigurationProperties("prefix-router.reader")
public class ReaderProperties {
  /** Largest accepted request body, 1KB..1GB. */
  private DataSize maxBodySize = DataSize.ofMegabytes(8);

  /** Output tokens reserved when a body gives no max_tokens. */
  private int defaultMaxOutputTokens = 256;

  /** Cap on the output tokens reserved per choice, whatever a body asks. */
  private int maxReservedOutputTokens = 32_768;

  /** Tenant of a request when neither the host nor the body's user names one. */
  private String defaultTenant = "anonymous";

  public DataSize getMaxBodySize() {
    return maxBodySize;
  }

  public void setMaxBodySize(DataSize maxBodySize) {
    this.maxBodySize = maxBodySize;
  }

  public int getDefaultMaxOutputTokens() {
    return defaultMaxOutputTokens;
  }

  public void setDefaultMaxOutputTokens(int defaultMaxOutputTokens) {
    this.defaultMaxOutputTokens = defaultMaxOutputTokens;
  }

  public int getMaxReservedOutputTokens() {
    return maxReservedOutputTokens;
  }

  public void setMaxReservedOutputTokens(int maxReservedOutputTokens) {
    this.maxReservedOutputTokens = maxReservedOutputTokens;
  }

  public String getDefaultTenant() {
    return defaultTenant;
  }

  public void setDefaultTenant(String defaultTenant) {
    this.defaultTenant = defaultTenant;
  }
}
