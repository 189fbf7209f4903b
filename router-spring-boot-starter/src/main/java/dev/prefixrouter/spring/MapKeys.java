package dev.prefixrouter.spring;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.EnumerablePropertySource;
import org.springframework.core.env.Environment;
import org.springframework.core.env.PropertySource;

/**
 * Refuses map keys that Spring Boot would bind as another key. A map key written without brackets
 * keeps only lower-case letters, digits, {@code -} and {@code .}: {@code
 * prefix-router.limiter.tenants.team_a} binds as tenant {@code teama}, a label {@code gpu_type} as
 * {@code gputype}, an alias of {@code Qwen/Qwen2.5-7B} as {@code qwenqwen2.5-7b}, and the engine
 * compares them exactly, so the quota, label, alias or split that was meant would silently not
 * apply. Such a key fails startup naming the property and the bracketed spelling that binds as
 * written ({@code prefix-router.limiter.tenants.[team_a]}). Checked: {@code limiter.tenants},
 * {@code model-aliases}, {@code backends[i].labels} and both levels of {@code model-splits} (an
 * unbracketed split model ends at its first {@code .}; what that leaves as the target then names no
 * served model, which the engine refuses at startup). Reads the names of every enumerable property
 * source under {@code prefix-router.}, as written (environment variables, whose names are
 * upper-case by convention, are not under it); O(properties) once at startup.
 */
final class MapKeys {
  private static final Pattern BINDS_AS_WRITTEN = Pattern.compile("[a-z0-9.-]+");
  private static final Pattern SEGMENT = Pattern.compile("[a-z0-9-]+");

  /** Maps with scalar values: everything after the prefix is the key. */
  private static final Pattern SCALAR_MAP =
      Pattern.compile(
          "(prefix-router\\.(?:limiter\\.tenants|model-aliases|backends\\[\\d+]\\.labels)\\.)(.+)");

  private static final String SPLITS = "prefix-router.model-splits.";

  private MapKeys() {}

  /**
   * @throws PrefixRouterPropertyException for the first key that would bind as another key
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
        if (name.startsWith("prefix-router.")) {
          checkName(name);
        }
      }
    }
  }

  private static void checkName(String name) {
    Matcher m = SCALAR_MAP.matcher(name);
    if (m.matches()) {
      String key = m.group(2);
      if (!key.startsWith("[") && !BINDS_AS_WRITTEN.matcher(key).matches()) {
        throw refused(name, key, m.group(1) + "[" + key + "]");
      }
      return;
    }
    if (!name.startsWith(SPLITS)) {
      return;
    }
    String rest = name.substring(SPLITS.length());
    if (rest.startsWith("[")) {
      int close = rest.indexOf(']');
      if (close < 0 || close + 1 >= rest.length() || rest.charAt(close + 1) != '.') {
        return; // not a model → target entry: left to the binder
      }
      String target = rest.substring(close + 2);
      if (!target.startsWith("[") && !BINDS_AS_WRITTEN.matcher(target).matches()) {
        throw refused(name, target, SPLITS + rest.substring(0, close + 2) + "[" + target + "]");
      }
      return;
    }
    int dot = rest.indexOf('.');
    String model = dot < 0 ? rest : rest.substring(0, dot);
    String target = dot < 0 ? "" : rest.substring(dot + 1);
    if (!SEGMENT.matcher(model).matches()
        || (!target.startsWith("[") && !BINDS_AS_WRITTEN.matcher(target).matches())) {
      throw refused(name, rest, SPLITS + "[MODEL].[TARGET]");
    }
  }

  private static PrefixRouterPropertyException refused(String name, String key, String bracketed) {
    return new PrefixRouterPropertyException(
        name,
        "map key '"
            + key
            + "' would bind as another key (an unbracketed map key keeps only lower-case letters,"
            + " digits, '-' and '.'); write it in brackets: "
            + bracketed);
  }
}
