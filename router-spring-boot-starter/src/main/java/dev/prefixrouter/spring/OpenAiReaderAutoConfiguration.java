package dev.prefixrouter.spring;

import dev.prefixrouter.vllm.OpenAiRequestReader;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * An {@link OpenAiRequestReader} bean (router-vllm on the classpath) from {@code
 * prefix-router.reader.*}, for hosts that read OpenAI bodies into route requests; an application's
 * own reader bean replaces it. Invalid properties fail startup naming the property.
 */
@AutoConfiguration
@ConditionalOnClass(OpenAiRequestReader.class)
@ConditionalOnProperty(
    prefix = "prefix-router",
    name = "enabled",
    havingValue = "true",
    matchIfMissing = true)
@EnableConfigurationProperties(ReaderProperties.class)
public class OpenAiReaderAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  public OpenAiRequestReader prefixRouterRequestReader(ReaderProperties r) {
    String prefix = "prefix-router.reader.";
    OpenAiRequestReader.Builder b = OpenAiRequestReader.builder();
    long bytes = r.getMaxBodySize().toBytes();
    PrefixRouterPropertyException.naming(
        prefix + "max-body-size",
        () ->
            b.maxBodyBytes((int) Math.max(Integer.MIN_VALUE, Math.min(Integer.MAX_VALUE, bytes))));
    PrefixRouterPropertyException.naming(
        prefix + "default-max-output-tokens",
        () -> b.defaultMaxOutputTokens(r.getDefaultMaxOutputTokens()));
    PrefixRouterPropertyException.naming(
        prefix + "max-reserved-output-tokens",
        () -> b.maxReservedOutputTokens(r.getMaxReservedOutputTokens()));
    PrefixRouterPropertyException.naming(
        prefix + "default-tenant", () -> b.defaultTenant(r.getDefaultTenant()));
    return b.build();
  }
}
