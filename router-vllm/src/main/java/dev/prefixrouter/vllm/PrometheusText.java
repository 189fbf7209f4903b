package dev.prefixrouter.vllm;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A tolerant parser of the Prometheus text exposition format (version 0.0.4) as vLLM and SGLang
 * serve it: metric names with colons, labels in any order parsed into a map, escaped label values
 * ({@code \\}, {@code \"}, {@code \n}), values {@code NaN}, {@code +Inf}, {@code -Inf}, optional
 * timestamps, comments. A malformed line is skipped and counted, never thrown: one bad line must
 * not hide the rest of a scrape. Stateless and thread-safe; linear in the input.
 */
public final class PrometheusText {

  /** One sample. */
  public record Sample(String name, Map<String, String> labels, double value) {
    public Sample {
      Objects.requireNonNull(name, "name");
      labels = Map.copyOf(labels);
    }

    public String label(String key) {
      return labels.get(key);
    }
  }

  /** The samples of one scrape and the number of lines that could not be parsed. */
  public record Scrape(List<Sample> samples, int malformedLines) {
    public Scrape {
      samples = List.copyOf(samples);
    }
  }

  private PrometheusText() {}

  public static Scrape parse(String text) {
    List<Sample> out = new ArrayList<>();
    int bad = 0;
    int start = 0;
    int n = text.length();
    while (start < n) {
      int end = text.indexOf('\n', start);
      if (end < 0) {
        end = n;
      }
      String line = text.substring(start, end).strip();
      start = end + 1;
      if (line.isEmpty() || line.charAt(0) == '#') {
        continue;
      }
      Sample s = parseLine(line);
      if (s == null) {
        bad++;
      } else {
        out.add(s);
      }
    }
    return new Scrape(out, bad);
  }

  private static Sample parseLine(String line) {
    int i = 0;
    int n = line.length();
    while (i < n && isNameChar(line.charAt(i), i == 0)) {
      i++;
    }
    if (i == 0) {
      return null;
    }
    String name = line.substring(0, i);
    Map<String, String> labels = new LinkedHashMap<>();
    if (i < n && line.charAt(i) == '{') {
      i++;
      while (true) {
        while (i < n && (line.charAt(i) == ' ' || line.charAt(i) == ',')) {
          i++;
        }
        if (i < n && line.charAt(i) == '}') {
          i++;
          break;
        }
        int k = i;
        while (i < n && isNameChar(line.charAt(i), i == k)) {
          i++;
        }
        if (i == k || i >= n || line.charAt(i) != '=') {
          return null;
        }
        String key = line.substring(k, i);
        i++;
        if (i >= n || line.charAt(i) != '"') {
          return null;
        }
        i++;
        StringBuilder v = new StringBuilder();
        boolean closed = false;
        while (i < n) {
          char c = line.charAt(i++);
          if (c == '\\' && i < n) {
            char e = line.charAt(i++);
            v.append(e == 'n' ? '\n' : e);
          } else if (c == '"') {
            closed = true;
            break;
          } else {
            v.append(c);
          }
        }
        if (!closed) {
          return null;
        }
        labels.put(key, v.toString());
      }
    }
    String rest = line.substring(i).strip();
    if (rest.isEmpty()) {
      return null;
    }
    int space = rest.indexOf(' ');
    String value = space < 0 ? rest : rest.substring(0, space);
    double d;
    switch (value) {
      case "NaN" -> d = Double.NaN;
      case "+Inf", "Inf" -> d = Double.POSITIVE_INFINITY;
      case "-Inf" -> d = Double.NEGATIVE_INFINITY;
      default -> {
        try {
          d = Double.parseDouble(value);
        } catch (NumberFormatException e) {
          return null;
        }
      }
    }
    return new Sample(name, labels, d);
  }

  private static boolean isNameChar(char c, boolean first) {
    return (c >= 'a' && c <= 'z')
        || (c >= 'A' && c <= 'Z')
        || c == '_'
        || c == ':'
        || (!first && c >= '0' && c <= '9');
  }
}
