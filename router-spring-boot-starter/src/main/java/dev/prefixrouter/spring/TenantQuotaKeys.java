package dev.prefixrouter.spring;

import java.util.regex.Pattern;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.EnumerablePropertySource;
import org.springframework.core.env.Environment;
import org.springframework.core.env.PropertySource;

/**
 * Refuses per-tenant quota keys that Spring Boot would bind as another tenant. A map key written
 * without brackets keeps only lower-case letters, digits, {@code -} and {@code .}: {@code
 * prefix-router.limiter.tenants.team_a} binds as tenant {@code teama}, {@code ...tenants.TeamA} as
 * {@code teama}, so the tenant that was meant would get the default quota (unlimited when {@code
 * tokens-per-minute} is 0). Such a key fails startup naming the property and the bracketed spelling
 * that binds as written ({@code prefix-router.limiter.tenants.[team_a]}). Reads the names of every
 * enumerable property source under the prefix, as written (environment variables, whose names are
 * upper-case by convention, are not under it); O(properties) once at startup.
 */
final class TenantQuotaKeys {
  static final String PREFIX = "prefix-router.limiter.tenants.";

  private static final Pattern BINDS_AS_WRITTEN = Pattern.compile("[a-z0-9.-]+");

  private TenantQuotaKeys() {}

  /**
   * @throws PrefixRouterPropertyException for the first key that would bind as another tenant
   */
  static void check(Environment env) {
    if (!(env instanceof ConfigurableEnvironment c)) {
      return;
    }
    for (PropertySource<?> source : c.getPropertySources()) {
      if (!(source instanceof EnumerablePropertySource<?> e)) {
        continue;
      }
      for (String name : e.getPropertyNames()) {
        if (!name.startsWith(PREFIX)) {
          continue;
        }
        String key = name.substring(PREFIX.length());
        if (key.startsWith("[") || BINDS_AS_WRITTEN.matcher(key).matches()) {
          continue;
        }
        throw new PrefixRouterPropertyException(
            name,
            "tenant id '"
                + key
                + "' would bind as another tenant (a map key keeps only lower-case letters,"
                + " digits, '-' and '.'); write it in brackets: "
                + PREFIX
                + "["
                + key
                + "]");
      }
    }
  }
}
