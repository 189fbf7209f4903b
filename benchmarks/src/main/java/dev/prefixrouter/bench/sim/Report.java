package dev.prefixrouter.bench.sim;

import java.io.IOException;
import java.io.PrintStream;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import tools.jackson.core.JsonGenerator;
import tools.jackson.core.ObjectWriteContext;
import tools.jackson.core.json.JsonFactory;

/** Console table, JSON, CSV and a self-contained HTML report (inline SVG, no network). */
final class Report {
  private Report() {}

  static void table(PrintStream out, String title, List<PolicyResult> rs) {
    out.println();
    out.println("== " + title);
    out.printf(
        Locale.ROOT,
        "%-20s %7s %8s %8s %8s %8s %9s %8s %7s %5s %5s %5s%n",
        "policy",
        "hit%",
        "ttft-avg",
        "ttft-p50",
        "ttft-p95",
        "ttft-p99",
        "e2e-avg",
        "tok/s",
        "imbal",
        "rej",
        "fail",
        "fovr");
    for (PolicyResult r : rs) {
      out.printf(
          Locale.ROOT,
          "%-20s %7.2f %8.1f %8.1f %8.1f %8.1f %9.1f %8.0f %7.2f %5d %5d %5d%n",
          row(r, r.policy()));
    }
    out.println("(times in ms; hit% = prompt tokens served from the backends' own caches)");
  }

  /** The columns of a result row, in table order, after the given policy label. */
  private static Object[] row(PolicyResult r, String label) {
    return new Object[] {
      label,
      100 * r.tokenHitRate(),
      r.ttftMean(),
      r.ttftP50(),
      r.ttftP95(),
      r.ttftP99(),
      r.e2eMean(),
      r.throughputTokensPerSec(),
      r.loadImbalance(),
      r.rejected(),
      r.failed(),
      r.failovers()
    };
  }

  static void gatewayTable(PrintStream out, List<GatewayHitRateSim.Result> rs) {
    out.println();
    out.println(
        "== (a) published gateway hit-rate workload: 3 backends × 600 blocks, 3000 requests");
    out.printf(
        Locale.ROOT,
        "%-20s %9s %9s %20s %20s%n",
        "policy",
        "uniform%",
        "skewed%",
        "uniform b0/b1/b2",
        "skewed b0/b1/b2");
    for (int i = 0; i < rs.size(); i += 2) {
      GatewayHitRateSim.Result u = rs.get(i);
      GatewayHitRateSim.Result s = rs.get(i + 1);
      out.printf(
          Locale.ROOT,
          "%-20s %9.2f %9.2f %20s %20s%n",
          u.policy(),
          100 * u.hitRate(),
          100 * s.hitRate(),
          split(u.perBackend()),
          split(s.perBackend()));
    }
    out.println(
        "(published: round robin 40.50 / 61.96, consistent hash 40.15 / 62.68, prefix tree 99.31 / 99.31)");
  }

  private static String split(int[] a) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < a.length; i++) {
      sb.append(i == 0 ? "" : "/").append(a[i]);
    }
    return sb.toString();
  }

  static void json(Path file, List<PolicyResult> rs, List<GatewayHitRateSim.Result> gw)
      throws IOException {
    try (Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8);
        JsonGenerator g = new JsonFactory().createGenerator(ObjectWriteContext.empty(), w)) {
      g.writeStartObject();
      g.writeName("gatewayHitRate");
      g.writeStartArray();
      for (GatewayHitRateSim.Result r : gw) {
        g.writeStartObject();
        g.writeStringProperty("policy", r.policy());
        g.writeStringProperty("distribution", r.distribution());
        g.writeNumberProperty("hitRate", r.hitRate());
        g.writeName("requestsPerBackend");
        g.writeArray(r.perBackend(), 0, r.perBackend().length);
        g.writeEndObject();
      }
      g.writeEndArray();
      g.writeName("fleet");
      g.writeStartArray();
      for (PolicyResult r : rs) {
        g.writeStartObject();
        g.writeStringProperty("workload", r.workload());
        g.writeStringProperty("policy", r.policy());
        g.writeNumberProperty("requests", r.requests());
        g.writeNumberProperty("completed", r.completed());
        g.writeNumberProperty("rejected", r.rejected());
        g.writeNumberProperty("failed", r.failed());
        g.writeNumberProperty("failovers", r.failovers());
        g.writeNumberProperty("tokenHitRate", r.tokenHitRate());
        g.writeNumberProperty("blockHitRate", r.blockHitRate());
        g.writeNumberProperty("ttftMeanMs", r.ttftMean());
        g.writeNumberProperty("ttftP50Ms", r.ttftP50());
        g.writeNumberProperty("ttftP95Ms", r.ttftP95());
        g.writeNumberProperty("ttftP99Ms", r.ttftP99());
        g.writeNumberProperty("e2eMeanMs", r.e2eMean());
        g.writeNumberProperty("e2eP95Ms", r.e2eP95());
        g.writeNumberProperty("outputTokensPerSec", r.throughputTokensPerSec());
        g.writeNumberProperty("loadImbalance", r.loadImbalance());
        g.writeName("routedPerBackend");
        g.writeArray(r.routedPerBackend(), 0, r.routedPerBackend().length);
        g.writeName("tenants");
        g.writeStartObject();
        for (Map.Entry<String, double[]> t : r.tenants().entrySet()) {
          g.writeName(t.getKey());
          g.writeStartObject();
          g.writeNumberProperty("offered", (long) t.getValue()[0]);
          g.writeNumberProperty("admitted", (long) t.getValue()[1]);
          g.writeEndObject();
        }
        g.writeEndObject();
        g.writeNumberProperty("simulatedSeconds", r.simulatedSeconds());
        g.writeNumberProperty("wallSeconds", r.wallSeconds());
        g.writeEndObject();
      }
      g.writeEndArray();
      g.writeEndObject();
    }
  }

  static void csv(Path file, List<PolicyResult> rs) throws IOException {
    StringBuilder sb =
        new StringBuilder(
            "workload,policy,requests,completed,rejected,failed,failovers,token_hit_rate,"
                + "block_hit_rate,ttft_mean_ms,ttft_p50_ms,ttft_p95_ms,ttft_p99_ms,e2e_mean_ms,"
                + "e2e_p95_ms,output_tokens_per_s,load_imbalance\n");
    for (PolicyResult r : rs) {
      sb.append(
          String.format(
              Locale.ROOT,
              "%s,%s,%d,%d,%d,%d,%d,%.5f,%.5f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.1f,%.4f%n",
              r.workload(),
              r.policy(),
              r.requests(),
              r.completed(),
              r.rejected(),
              r.failed(),
              r.failovers(),
              r.tokenHitRate(),
              r.blockHitRate(),
              r.ttftMean(),
              r.ttftP50(),
              r.ttftP95(),
              r.ttftP99(),
              r.e2eMean(),
              r.e2eP95(),
              r.throughputTokensPerSec(),
              r.loadImbalance()));
    }
    Files.writeString(file, sb.toString(), StandardCharsets.UTF_8);
  }

  private static final String[] COLORS = {
    "#d62728", "#ff7f0e", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79"
  };

  /** One TTFT CDF chart per workload (log-scale x) plus hit-rate and per-backend load bars. */
  static void html(Path file, List<PolicyResult> rs, List<GatewayHitRateSim.Result> gw)
      throws IOException {
    StringBuilder h = new StringBuilder();
    h.append(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>prefix-router policy comparison</title>")
        .append(
            "<style>body{font-family:sans-serif;margin:24px;max-width:1100px}table{border-collapse:collapse}")
        .append(
            "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f4f4f4}")
        .append("td:first-child,th:first-child{text-align:left}</style></head><body>")
        .append("<h1>prefix-router: policy comparison</h1>")
        .append(
            "<p>Simulated fleet (vLLM-like backends, H100 step-time fit) driven by the real RoutingEngine. ")
        .append("Hit rate is ground truth from the simulated caches.</p>");
    if (!gw.isEmpty()) {
      h.append(
          "<h2>(a) published gateway hit-rate workload</h2><table><tr><th>policy</th><th>distribution</th><th>hit %</th><th>requests per backend</th></tr>");
      for (GatewayHitRateSim.Result r : gw) {
        h.append(
            String.format(
                Locale.ROOT,
                "<tr><td>%s</td><td>%s</td><td>%.2f</td><td>%s</td></tr>",
                esc(r.policy()),
                r.distribution(),
                100 * r.hitRate(),
                split(r.perBackend())));
      }
      h.append("</table>");
    }
    String current = null;
    int start = 0;
    for (int i = 0; i <= rs.size(); i++) {
      String w = i < rs.size() ? rs.get(i).workload() : null;
      if (current != null && !current.equals(w)) {
        section(h, current, rs.subList(start, i));
        start = i;
      }
      if (i < rs.size() && !rs.get(i).workload().equals(current)) {
        current = w;
        start = i;
      }
    }
    h.append("</body></html>\n");
    Files.writeString(file, h.toString(), StandardCharsets.UTF_8);
  }

  private static void section(StringBuilder h, String workload, List<PolicyResult> rs) {
    h.append("<h2>").append(esc(workload)).append("</h2>");
    h.append(
            "<table><tr><th>policy</th><th>hit %</th><th>TTFT mean</th><th>p50</th><th>p95</th><th>p99</th>")
        .append(
            "<th>e2e mean</th><th>tok/s</th><th>imbalance</th><th>rejected</th><th>failed</th><th>failovers</th></tr>");
    for (PolicyResult r : rs) {
      h.append(
          String.format(
              Locale.ROOT,
              "<tr><td>%s</td><td>%.2f</td><td>%.1f</td><td>%.1f</td><td>%.1f</td><td>%.1f</td><td>%.1f</td><td>%.0f</td><td>%.2f</td><td>%d</td><td>%d</td><td>%d</td></tr>",
              row(r, esc(r.policy()))));
    }
    h.append("</table>");
    // TTFT CDF, log10 x from 1 ms to max
    int w = 760;
    int ht = 340;
    int left = 60;
    int bottom = 300;
    double max = 10;
    for (PolicyResult r : rs) {
      for (double v : r.ttftSample()) {
        max = Math.max(max, v);
      }
    }
    double lmax = Math.ceil(Math.log10(max));
    h.append(
        String.format(
            Locale.ROOT,
            "<h3>TTFT distribution (CDF)</h3><svg width=\"%d\" height=\"%d\" xmlns=\"http://www.w3.org/2000/svg\">",
            w + 200,
            ht));
    h.append(
        String.format(
            Locale.ROOT,
            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>",
            left,
            bottom,
            left + w - 80,
            bottom));
    h.append(
        String.format(
            Locale.ROOT,
            "<line x1=\"%d\" y1=\"20\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>",
            left,
            left,
            bottom));
    for (int d = 0; d <= lmax; d++) {
      double x = left + (w - 80) * d / lmax;
      h.append(
          String.format(
              Locale.ROOT,
              "<text x=\"%.0f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%s ms</text>",
              x,
              bottom + 15,
              d == 0 ? "1" : "1e" + d));
    }
    for (int q = 0; q <= 4; q++) {
      double y = bottom - (bottom - 20) * q / 4.0;
      h.append(
          String.format(
              Locale.ROOT,
              "<text x=\"%d\" y=\"%.0f\" font-size=\"11\" text-anchor=\"end\">%d%%</text>",
              left - 5,
              y + 4,
              q * 25));
    }
    for (int i = 0; i < rs.size(); i++) {
      double[] s = rs.get(i).ttftSample();
      StringBuilder pts = new StringBuilder();
      for (int k = 0; k < s.length; k++) {
        double x = left + (w - 80) * Math.max(0, Math.log10(Math.max(1, s[k]))) / lmax;
        double y = bottom - (bottom - 20) * (k + 1.0) / s.length;
        pts.append(String.format(Locale.ROOT, "%.1f,%.1f ", x, y));
      }
      String c = COLORS[i % COLORS.length];
      h.append(
          String.format(
              Locale.ROOT,
              "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>",
              c,
              pts));
      h.append(
          String.format(
              Locale.ROOT,
              "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"4\" fill=\"%s\"/><text x=\"%d\" y=\"%d\" font-size=\"12\">%s</text>",
              left + w - 60,
              24 + 16 * i,
              c,
              left + w - 44,
              29 + 16 * i,
              esc(rs.get(i).policy())));
    }
    h.append("</svg>");
    // per-backend routed load
    h.append("<h3>Requests per backend</h3><table><tr><th>policy</th>");
    int n = rs.get(0).routedPerBackend().length;
    for (int b = 0; b < n; b++) {
      h.append("<th>b").append(b).append("</th>");
    }
    h.append("</tr>");
    for (PolicyResult r : rs) {
      h.append("<tr><td>").append(esc(r.policy())).append("</td>");
      for (int v : r.routedPerBackend()) {
        h.append("<td>").append(v).append("</td>");
      }
      h.append("</tr>");
    }
    h.append("</table>");
  }

  private static String esc(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
  }
}
