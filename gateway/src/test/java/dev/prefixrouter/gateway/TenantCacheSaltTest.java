package dev.prefixrouter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class TenantCacheSaltTest {
  private static String salted(String body, String salt) {
    return new String(
        TenantCacheSalt.withSalt(body.getBytes(StandardCharsets.UTF_8), salt),
        StandardCharsets.UTF_8);
  }

  @Test
  void theSaltIsInjectiveOverTenantAndClientSalt() {
    assertThat(TenantCacheSalt.salt("a", null)).isEqualTo("1:a");
    assertThat(TenantCacheSalt.salt("a", "b")).isEqualTo("1:a|b");
    // a tenant whose name looks like an encoded pair does not meet that pair
    assertThat(TenantCacheSalt.salt("1:a|b", null)).isNotEqualTo(TenantCacheSalt.salt("a", "b"));
    assertThat(TenantCacheSalt.salt("a|b", null)).isNotEqualTo(TenantCacheSalt.salt("a", "b"));
  }

  @Test
  void aBodyWithoutASaltGetsOneSplicedInTheRestByteForByte() {
    assertThat(salted(" {\"model\": \"m\" , \"x\":[1,{\"cache_salt\":2}]}", "1:a"))
        .isEqualTo(" {\"cache_salt\":\"1:a\",\"model\": \"m\" , \"x\":[1,{\"cache_salt\":2}]}");
    assertThat(salted("{}", "1:a")).isEqualTo("{\"cache_salt\":\"1:a\"}");
    assertThat(salted("{\"m\":1}", "1:\"q\"\u001F"))
        .isEqualTo("{\"cache_salt\":\"1:\\\"q\\\"\\u001F\",\"m\":1}");
  }

  @Test
  void theClientsSaltIsReplacedInPlace() {
    assertThat(salted("{\"cache_salt\":\"x\\\"y\", \"m\":1}", "1:a|x\"y"))
        .isEqualTo("{\"cache_salt\":\"1:a|x\\\"y\", \"m\":1}");
    assertThat(salted("{\"m\":[1,{\"cache_salt\":2}],\"cache_salt\":null }", "1:a"))
        .isEqualTo("{\"m\":[1,{\"cache_salt\":2}],\"cache_salt\":\"1:a\" }");
  }
}
