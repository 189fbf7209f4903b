package dev.prefixrouter.bench.sim;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.SplittableRandom;
import org.jspecify.annotations.Nullable;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.core.ObjectReadContext;
import tools.jackson.core.json.JsonFactory;

/** Seeded workload generators (see {@code shared/reference/benchmarks-and-workloads.md}). */
final class Workloads {
  private Workloads() {}

  /** The client's {@code max_tokens} granularity: {@link #clientMaxTokens} rounds up to it. */
  static final int MAX_TOKENS_STEP = 256;

  /**
   * The {@code max_tokens} every client of a workload sends, which is all a gateway knows of a
   * request's output: the workload's largest output length rounded up to a multiple of {@value
   * #MAX_TOKENS_STEP} (one fixed cap per workload, as a client sets one limit for all its calls).
   * The router is told this cap; the simulated backends still generate each request's own length.
   */
  static int clientMaxTokens(java.util.List<SimRequest> requests) {
    int largest = 1;
    for (SimRequest r : requests) {
      largest = Math.max(largest, r.outputTokens());
    }
    return (largest + MAX_TOKENS_STEP - 1) / MAX_TOKENS_STEP * MAX_TOKENS_STEP;
  }

  private static final int VOCAB_FROM = 1_000;
  private static final int VOCAB_SIZE = 120_000;

  /** Deterministic token ids for a named segment: equal names give equal tokens. */
  static int[] segment(long name, int length) {
    SplittableRandom r = new SplittableRandom(name * 0x9E3779B97F4A7C15L + 0x632BE59BD9B4E019L);
    int[] t = new int[length];
    for (int i = 0; i < length; i++) {
      t[i] = VOCAB_FROM + r.nextInt(VOCAB_SIZE);
    }
    return t;
  }

  static int[] concat(int[]... parts) {
    int n = 0;
    for (int[] p : parts) {
      n += p.length;
    }
    int[] out = new int[n];
    int at = 0;
    for (int[] p : parts) {
      System.arraycopy(p, 0, out, at, p.length);
      at += p.length;
    }
    return out;
  }

  /** Poisson arrival times at {@code ratePerSec}. */
  static long[] poisson(int n, double ratePerSec, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    long[] t = new long[n];
    double now = 0;
    for (int i = 0; i < n; i++) {
      now += -Math.log(1 - r.nextDouble()) / ratePerSec;
      t[i] = (long) (now * 1e9);
    }
    return t;
  }

  /**
   * inference-perf {@code shared_prefix}: {@code groups × perGroup} prompts of a group system
   * prompt plus a unique question, shuffled with the seed, Poisson arrivals.
   */
  static List<SimRequest> sharedPrefix(
      int groups,
      int perGroup,
      int system,
      int question,
      int output,
      double rate,
      long seed,
      String[] tenants) {
    List<int[]> prompts = new ArrayList<>();
    for (int g = 0; g < groups; g++) {
      int[] sys = segment(1_000_000L + g, system);
      for (int q = 0; q < perGroup; q++) {
        prompts.add(concat(sys, segment(5_000_000L + (long) g * perGroup + q, question)));
      }
    }
    Collections.shuffle(prompts, new Random(seed));
    long[] at = poisson(prompts.size(), rate, seed + 1);
    List<SimRequest> out = new ArrayList<>(prompts.size());
    for (int i = 0; i < prompts.size(); i++) {
      String tenant = tenants[i % tenants.length];
      out.add(new SimRequest(i, at[i], tenant, null, prompts.get(i), output));
    }
    return out;
  }

  /** High-cache: 256 groups × {@code perGroup} (16 in the reference config). */
  static List<SimRequest> highCache(double rateScale, long seed, int perGroup) {
    return sharedPrefix(256, perGroup, 2048, 256, 256, 160 * rateScale, seed, new String[] {"t"});
  }

  static List<SimRequest> lowCache(double rateScale, long seed, int perGroup) {
    return sharedPrefix(256, perGroup, 256, 2048, 256, 60 * rateScale, seed, new String[] {"t"});
  }

  /**
   * Capacity planning: the low-cache prompts (256-token shared system prompt, 2048-token question)
   * with 16-token answers, so prefill dominates, at 100 requests/s × {@code rateScale}.
   */
  static List<SimRequest> capacity(double rateScale, long seed, int perGroup) {
    return sharedPrefix(256, perGroup, 256, 2048, 16, 100 * rateScale, seed, new String[] {"t"});
  }

  /**
   * Multimodal: each request a unique 512-token context, one image's 576 placeholder tokens (the
   * image drawn from a Zipf(1.0) set of 3,000) and a unique 128-token question, 64-token answers,
   * Poisson at 60 requests/s × {@code rateScale}. The unique context in front of the image means no
   * prefix is shared: only the backends' encoder caches can reuse work.
   */
  static List<SimRequest> media(double rateScale, long seed, int n) {
    int images = 3_000;
    double[] cdf = new double[images];
    double sum = 0;
    for (int r = 0; r < images; r++) {
      sum += 1.0 / (r + 1);
      cdf[r] = sum;
    }
    SplittableRandom rnd = new SplittableRandom(seed * 131 + 7);
    long[] at = poisson(n, 60 * rateScale, seed + 1);
    List<SimRequest> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      int pos = Arrays.binarySearch(cdf, rnd.nextDouble() * sum);
      int image = pos >= 0 ? pos : Math.min(images - 1, -pos - 1);
      int[] prompt =
          concat(
              segment(13_000_000L + i, 512),
              segment(11_000_000L + image, 576),
              segment(15_000_000L + i, 128));
      out.add(new SimRequest(i, at[i], "t", null, prompt, 64, image, List.of()));
    }
    return out;
  }

  /** How a RAG request's retrieved chunks are ordered in its prompt. */
  enum ChunkOrdering {
    /** As retrieved: a per-request relevance order (a random permutation here). */
    RETRIEVAL,
    /** {@link dev.prefixrouter.api.ChunkOrder#canonicalById}: equal sets become equal. */
    CANONICAL_ID,
    /** {@link dev.prefixrouter.api.ChunkOrder#canonical} by corpus rank: popular chunks first. */
    CANONICAL_RANK
  }

  static final int RAG_CORPUS = 20_000;
  static final int RAG_CHUNK_TOKENS = 256;
  static final int RAG_CHUNKS_PER_REQUEST = 5;

  /**
   * RAG: a shared 256-token system prompt, 5 distinct chunks of 256 tokens drawn from a Zipf(1.0)
   * corpus of 20,000 chunks, a unique 96-token question; 64-token answers; Poisson arrivals at 100
   * requests/s × {@code rateScale}. The draws are the same for every ordering (same seed), only the
   * chunks' order in the prompt differs.
   */
  static List<SimRequest> rag(ChunkOrdering ordering, double rateScale, long seed, int n) {
    return rag(ordering, rateScale, seed, n, null);
  }

  /** {@link #rag}; {@code chunksOut}, when given, receives each request's chunk ranks as drawn. */
  static List<SimRequest> rag(
      ChunkOrdering ordering,
      double rateScale,
      long seed,
      int n,
      @Nullable List<List<Integer>> chunksOut) {
    double[] cdf = new double[RAG_CORPUS];
    double sum = 0;
    for (int r = 0; r < RAG_CORPUS; r++) {
      sum += 1.0 / (r + 1);
      cdf[r] = sum;
    }
    SplittableRandom rnd = new SplittableRandom(seed * 31 + 17);
    int[] system = segment(1_000_000L, 256);
    long[] at = poisson(n, 100 * rateScale, seed + 1);
    List<SimRequest> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      List<Integer> drawn = new ArrayList<>(RAG_CHUNKS_PER_REQUEST);
      while (drawn.size() < RAG_CHUNKS_PER_REQUEST) {
        double u = rnd.nextDouble() * sum;
        int pos = Arrays.binarySearch(cdf, u);
        int rank = pos >= 0 ? pos : Math.min(RAG_CORPUS - 1, -pos - 1);
        if (!drawn.contains(rank)) {
          drawn.add(rank); // retrieval order: the draw order
        }
      }
      if (chunksOut != null) {
        chunksOut.add(List.copyOf(drawn));
      }
      List<Integer> ordered =
          switch (ordering) {
            case RETRIEVAL -> drawn;
            case CANONICAL_ID ->
                dev.prefixrouter.api.ChunkOrder.canonicalById(drawn, r -> "chunk-" + r);
            case CANONICAL_RANK -> dev.prefixrouter.api.ChunkOrder.canonical(drawn, r -> r);
          };
      int[][] parts = new int[ordered.size() + 2][];
      parts[0] = system;
      List<SimRequest.Chunk> spans = new ArrayList<>(ordered.size());
      int blocks = RAG_CHUNK_TOKENS / BackendProfile.BLOCK;
      for (int c = 0; c < ordered.size(); c++) {
        parts[c + 1] = segment(7_000_000L + ordered.get(c), RAG_CHUNK_TOKENS);
        spans.add(
            new SimRequest.Chunk(
                ordered.get(c), (system.length / BackendProfile.BLOCK) + c * blocks, blocks));
      }
      parts[parts.length - 1] = segment(9_000_000L + i, 96);
      out.add(new SimRequest(i, at[i], "t", null, concat(parts), 64, -1, List.copyOf(spans)));
    }
    return out;
  }

  /**
   * Two tenants on the high-cache prompts: "greedy" offers 10× the token quota, "polite" half of
   * it. Returns the requests; the quota is {@link #TENANT_QUOTA_TOKENS_PER_MINUTE}.
   */
  static List<SimRequest> tenants(double rateScale, long seed) {
    // per-request tokens 2048 + 256 + 256 = 2560; polite 1 rps = 153,600 tokens/min
    double politeRate = 1.0 * rateScale;
    double greedyRate = 20.0 * rateScale;
    List<SimRequest> polite =
        sharedPrefix(16, 16, 2048, 256, 256, politeRate, seed, new String[] {"polite"});
    List<SimRequest> greedy =
        sharedPrefix(64, 64, 2048, 256, 256, greedyRate, seed + 7, new String[] {"greedy"});
    long end = polite.get(polite.size() - 1).arrivalNanos();
    List<SimRequest> all = new ArrayList<>(polite);
    for (SimRequest g : greedy) {
      if (g.arrivalNanos() <= end) {
        all.add(g);
      }
    }
    all.sort((a, b) -> Long.compare(a.arrivalNanos(), b.arrivalNanos()));
    List<SimRequest> out = new ArrayList<>(all.size());
    for (int i = 0; i < all.size(); i++) {
      SimRequest r = all.get(i);
      out.add(new SimRequest(i, r.arrivalNanos(), r.tenant(), null, r.tokens(), r.outputTokens()));
    }
    return out;
  }

  /** Token quota per tenant per minute for {@link #tenants}: twice the polite tenant's demand. */
  static final long TENANT_QUOTA_TOKENS_PER_MINUTE = 2 * 60 * 2560;

  /**
   * Agentic traffic: tasks arrive as a Poisson stream; each runs on one of a few applications whose
   * system + tools prompt ({@code 4096} tokens) all its requests share, adds a task description
   * (1,024 tokens), then branches into 2–4 sub-agents (sessions) that each take 3–6 tool-loop
   * steps: every step sends the whole branch history and appends the model's output (100–300
   * tokens) and a tool result (300–1,200 tokens), so prompts grow to ~12k tokens and the prefixes
   * form a deep tree (application → task → branch → step). Steps of a branch are 1–3 s apart (think
   * + tool time); about {@code 20 × rateScale} requests per second overall. Seeded: every choice
   * comes from {@code seed}.
   */
  static List<SimRequest> agentic(double rateScale, long seed, int tasks) {
    SplittableRandom r = new SplittableRandom(seed);
    int apps = 6;
    double taskRate = 1.5 * rateScale; // ~13 requests per task: ~20 req/s
    List<SimRequest> out = new ArrayList<>();
    double start = 0;
    for (int t = 0; t < tasks; t++) {
      start += -Math.log(1 - r.nextDouble()) / taskRate;
      // a few applications carry most tasks (Zipf-like: app k with weight 1/(k+1))
      double u = r.nextDouble() * 2.45; // ~ H(6)
      int app = 0;
      for (double acc = 1.0; app < apps - 1 && u > acc; acc += 1.0 / (app + 2)) {
        app++;
      }
      int[] system = segment(40_000_000L + app, 4096);
      int[] task = concat(system, segment(41_000_000L + t, 1024));
      int branches = 2 + r.nextInt(3);
      for (int b = 0; b < branches; b++) {
        int[] history = concat(task, segment(42_000_000L + (long) t * 16 + b, 64));
        int steps = 3 + r.nextInt(4);
        double at = start + r.nextDouble() * 0.5 / rateScale;
        String session = "agent-" + t + "-" + b;
        for (int k = 0; k < steps; k++) {
          int output = 100 + r.nextInt(201);
          out.add(new SimRequest(0, (long) (at * 1e9), "t", session, history, output));
          long id = ((long) t * 16 + b) * 16 + k;
          int[] reply = segment(43_000_000_000L + id, output);
          int[] tool = segment(44_000_000_000L + id, 300 + r.nextInt(901));
          history = concat(history, reply, tool);
          at += (1 + 2 * r.nextDouble()) / rateScale;
        }
      }
    }
    out.sort((a, b) -> Long.compare(a.arrivalNanos(), b.arrivalNanos()));
    List<SimRequest> numbered = new ArrayList<>(out.size());
    for (int i = 0; i < out.size(); i++) {
      SimRequest q = out.get(i);
      numbered.add(
          new SimRequest(
              i, q.arrivalNanos(), q.tenant(), q.session(), q.tokens(), q.outputTokens()));
    }
    return numbered;
  }

  /**
   * Long multi-turn conversations under cache pressure (issue #18): {@code sessions} chats, each a
   * 2,048-token system prompt (one of 8) and an 8,192-token document of its own, then 6 turns, each
   * a new user message (100–400 tokens) after the whole history with the scripted replies (150–600
   * tokens): prompts grow from ~10k to ~14k tokens. Sessions start uniformly over 300 s, turns 24 s
   * apart (both ÷ {@code rateScale}): ~17 requests/s at 1×, and the live conversations' contexts
   * (~340 × ~12k tokens) about fill the default fleet's KV (8 × 29,205 blocks × 16 tokens = 3.7M),
   * so evictions hit conversations that come back.
   */
  static List<SimRequest> longChat(int sessions, double rateScale, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    List<SimRequest> out = new ArrayList<>();
    int turns = 6;
    for (int s = 0; s < sessions; s++) {
      int[] history = concat(segment(50_000_000L + s % 8, 2048), segment(51_000_000L + s, 8192));
      double start = r.nextDouble() * 300 / rateScale;
      for (int t = 0; t < turns; t++) {
        int[] user = segment(52_000_000L + (long) s * 100 + t, 100 + r.nextInt(301));
        int[] prompt = concat(history, user);
        int output = 150 + r.nextInt(451);
        long at = (long) ((start + t * 24.0 / rateScale) * 1e9);
        out.add(new SimRequest(0, at, "t", "long-" + s, prompt, output));
        history = concat(prompt, segment(53_000_000L + (long) s * 100 + t, output));
      }
    }
    return numbered(out);
  }

  /**
   * RL rollout bursts (issue #18): every 4 s ÷ {@code rateScale} a trainer sends a batch of 8
   * problems × 16 samples — 128 requests within 50 ms, the 16 samples of a problem identical (a
   * 512-token instruction shared by all, then the problem, 1,000–3,000 tokens) — with long
   * generations (300–1,500 tokens); {@code batches} batches, ~32 requests/s at 1×. A problem is
   * sent in one batch only (a new step samples new problems).
   */
  static List<SimRequest> rlRollout(int batches, double rateScale, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    int[] instruction = segment(60_000_000L, 512);
    List<SimRequest> out = new ArrayList<>();
    for (int b = 0; b < batches; b++) {
      double start = b * 4.0 / rateScale;
      for (int p = 0; p < 8; p++) {
        long problem = (long) b * 8 + p;
        int[] prompt = concat(instruction, segment(61_000_000L + problem, 1000 + r.nextInt(2001)));
        for (int k = 0; k < 16; k++) {
          double at = start + r.nextDouble() * 0.05;
          out.add(new SimRequest(0, (long) (at * 1e9), "t", null, prompt, 300 + r.nextInt(1201)));
        }
      }
    }
    return numbered(out);
  }

  /**
   * Time-varying load (issue #18): the high-cache prompts (256 groups × {@code perGroup} of a
   * 2,048-token group prompt and a 256-token question) arriving as a Poisson process whose rate
   * swings between 0.25× and 2× of 160 requests/s × {@code rateScale} (mean ~1.1×), one cycle per 8
   * s ÷ {@code rateScale} (about three cycles per run at any rate): quiet spells in which balance
   * costs nothing to hold back, and surges in which queues form. Built by thinning a 2× Poisson
   * stream.
   */
  static List<SimRequest> varyingLoad(double rateScale, long seed, int perGroup) {
    List<SimRequest> base = highCache(2 * rateScale, seed, perGroup * 2);
    SplittableRandom r = new SplittableRandom(seed + 99);
    List<SimRequest> out = new ArrayList<>();
    int want = 256 * perGroup;
    for (SimRequest q : base) {
      double t = q.arrivalNanos() / 1e9;
      // relative rate in [0.125, 1] of the 2x stream: 0.25x .. 2x
      double rel = 0.5625 + 0.4375 * Math.sin(2 * Math.PI * t * rateScale / 8.0);
      if (r.nextDouble() < rel && out.size() < want) {
        out.add(q);
      }
    }
    return numbered(out);
  }

  /** Index drawn from Zipf weights {@code 1 / (k + 1)^alpha} over {@code n} items. */
  private static int zipf(SplittableRandom r, int n, double alpha) {
    double total = 0;
    for (int k = 0; k < n; k++) {
      total += Math.pow(k + 1, -alpha);
    }
    double u = r.nextDouble() * total;
    for (int k = 0; k < n; k++) {
      u -= Math.pow(k + 1, -alpha);
      if (u <= 0) {
        return k;
      }
    }
    return n - 1;
  }

  /**
   * Mixed prompt lengths (session 18 probe, not tuned on): 70 % short chat requests (one of 4
   * system prompts of 1,024 tokens, then 100–300 new tokens, 50–400 output) and 30 % long RAG
   * requests (one of 256 documents of 6–12k tokens, Zipf α 0.8, then a 50-token question, 50–200
   * output), no sessions, Poisson at 40 × {@code rateScale} per second, 2,400 requests (60 s at
   * 1×). The documents (~2.3M tokens) fit the fleet's KV but not one backend's.
   */
  static List<SimRequest> mixedLengths(double rateScale, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    int n = 2400;
    long[] at = poisson(n, 40 * rateScale, seed + 7);
    List<SimRequest> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      int[] prompt;
      int output;
      if (r.nextDouble() < 0.7) {
        prompt =
            concat(
                segment(70_000_000L + r.nextInt(4), 1024),
                segment(71_000_000L + i, 100 + r.nextInt(201)));
        output = 50 + r.nextInt(351);
      } else {
        int doc = zipf(r, 256, 0.8);
        int len = 6144 + (int) ((doc * 2654435761L) % 6145);
        prompt = concat(segment(72_000_000L + doc, len), segment(73_000_000L + i, 50));
        output = 50 + r.nextInt(151);
      }
      out.add(new SimRequest(0, at[i], "t", null, prompt, output));
    }
    return numbered(out);
  }

  /**
   * One hot prefix (session 18 probe, not tuned on): 16 system prompts of 3,072 tokens with Zipf α
   * 1.2 popularity (the hottest carries ~37 % of the traffic), each request a unique 300-token
   * suffix, 100–300 output, no sessions, Poisson at 60 × {@code rateScale} per second, 3,600
   * requests. At higher rates the hottest prefix's traffic outgrows one backend and must be
   * replicated.
   */
  static List<SimRequest> hotPrefix(double rateScale, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    int n = 3600;
    long[] at = poisson(n, 60 * rateScale, seed + 11);
    List<SimRequest> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      int g = zipf(r, 16, 1.2);
      int[] prompt = concat(segment(74_000_000L + g, 3072), segment(75_000_000L + i, 300));
      out.add(new SimRequest(0, at[i], "t", null, prompt, 100 + r.nextInt(201)));
    }
    return numbered(out);
  }

  /**
   * Chat sessions over sessionless batch traffic (session 18 probe, not tuned on): 400 chats (one
   * of 8 system prompts of 2,048 tokens; 3–8 turns of 50–300 user tokens, replies 100–400 tokens,
   * 2–10 s apart ÷ {@code rateScale}) starting over 120 s ÷ {@code rateScale}, mixed with
   * sessionless summarisation jobs (a unique 4–8k-token text after a shared 512-token instruction,
   * 100–300 output) at 8 × {@code rateScale} per second.
   */
  static List<SimRequest> chatOverBatch(double rateScale, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    List<SimRequest> out = new ArrayList<>();
    for (int s = 0; s < 400; s++) {
      int[] history =
          concat(segment(76_000_000L + r.nextInt(8), 2048), segment(77_000_000L + s, 64));
      double t = r.nextDouble() * 120 / rateScale;
      int turns = 3 + r.nextInt(6);
      for (int k = 0; k < turns; k++) {
        int[] prompt =
            concat(history, segment(78_000_000L + (long) s * 16 + k, 50 + r.nextInt(251)));
        int output = 100 + r.nextInt(301);
        out.add(new SimRequest(0, (long) (t * 1e9), "t", "chat-" + s, prompt, output));
        history = concat(prompt, segment(79_000_000L + (long) s * 16 + k, output));
        t += (2 + 8 * r.nextDouble()) / rateScale;
      }
    }
    int jobs = 960;
    long[] at = poisson(jobs, 8 * rateScale, seed + 13);
    int[] instruction = segment(80_000_000L, 512);
    for (int j = 0; j < jobs; j++) {
      int[] prompt = concat(instruction, segment(81_000_000L + j, 4096 + r.nextInt(4097)));
      out.add(new SimRequest(0, at[j], "t", null, prompt, 100 + r.nextInt(201)));
    }
    return numbered(out);
  }

  private static List<SimRequest> numbered(List<SimRequest> out) {
    out.sort((a, b) -> Long.compare(a.arrivalNanos(), b.arrivalNanos()));
    List<SimRequest> numbered = new ArrayList<>(out.size());
    for (int i = 0; i < out.size(); i++) {
      SimRequest q = out.get(i);
      numbered.add(
          new SimRequest(
              i, q.arrivalNanos(), q.tenant(), q.session(), q.tokens(), q.outputTokens()));
    }
    return numbered;
  }

  /**
   * The standard (c) run ({@code --workload multi-turn}): 128 conversations of 10 turns, 8 s ÷
   * {@code rateScale} apart.
   */
  static List<SimRequest> multiTurn(double rateScale, long seed) {
    return multiTurn(128, 10, 8.0, rateScale, seed);
  }

  /**
   * Multi-turn chat: {@code sessions} conversations of {@code turns} turns; each turn sends the
   * whole history (a system prompt shared by 8 groups, then every earlier user message and scripted
   * assistant reply) plus a new user message; turns are {@code gapSec} apart.
   */
  static List<SimRequest> multiTurn(
      int sessions, int turns, double gapSec, double rateScale, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    List<SimRequest> out = new ArrayList<>();
    double stagger = gapSec / rateScale;
    for (int s = 0; s < sessions; s++) {
      int[] history = segment(9_000_000L + s % 8, 1024);
      double start = r.nextDouble() * stagger;
      for (int t = 0; t < turns; t++) {
        int[] user = segment(20_000_000L + (long) s * 1000 + t, 100 + r.nextInt(200));
        int[] prompt = concat(history, user);
        int output = 150 + r.nextInt(300);
        long at = (long) ((start + t * gapSec / rateScale) * 1e9);
        out.add(new SimRequest(0, at, "t", "session-" + s, prompt, output));
        int[] reply = segment(30_000_000L + (long) s * 1000 + t, output);
        history = concat(prompt, reply);
      }
    }
    out.sort((a, b) -> Long.compare(a.arrivalNanos(), b.arrivalNanos()));
    List<SimRequest> numbered = new ArrayList<>(out.size());
    for (int i = 0; i < out.size(); i++) {
      SimRequest q = out.get(i);
      numbered.add(
          new SimRequest(
              i, q.arrivalNanos(), q.tenant(), q.session(), q.tokens(), q.outputTokens()));
    }
    return numbered;
  }

  /** A malformed trace line. */
  static final class TraceException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    TraceException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /**
   * A Mooncake-format JSONL trace ({@code timestamp} ms, {@code input_length}, {@code
   * output_length}, {@code hash_ids} of 512-token blocks), expanded deterministically to token ids:
   * each hash id is a fixed 512-token sequence, the last block cut to the input length. Timestamps
   * are divided by {@code rateScale}.
   *
   * @throws IOException if the file cannot be read
   * @throws TraceException naming the line of a malformed record
   */
  static List<SimRequest> mooncake(Path path, double rateScale, int limit) throws IOException {
    JsonFactory json = new JsonFactory();
    List<SimRequest> out = new ArrayList<>();
    try (BufferedReader in = Files.newBufferedReader(path, StandardCharsets.UTF_8)) {
      String line;
      int lineNo = 0;
      while ((line = in.readLine()) != null && out.size() < limit) {
        lineNo++;
        if (line.isBlank()) {
          continue;
        }
        try {
          out.add(parseLine(json, line, out.size(), rateScale));
        } catch (JacksonException | IllegalArgumentException e) {
          throw new TraceException(
              path
                  + ":"
                  + lineNo
                  + ": "
                  + (e instanceof JacksonException j ? j.getOriginalMessage() : e.getMessage()),
              e);
        }
      }
    }
    if (out.isEmpty()) {
      throw new TraceException(path + ": no requests in the trace", null);
    }
    return out;
  }

  private static SimRequest parseLine(JsonFactory json, String line, int id, double rateScale) {
    long ts = -1;
    int input = -1;
    int output = -1;
    List<Long> ids = null;
    try (JsonParser p = json.createParser(ObjectReadContext.empty(), line)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new IllegalArgumentException("expected a JSON object");
      }
      while (p.nextToken() == JsonToken.PROPERTY_NAME) {
        String name = p.currentName();
        JsonToken v = p.nextToken();
        switch (name) {
          case "timestamp" -> ts = number(p, v, name);
          case "input_length" -> input = (int) number(p, v, name);
          case "output_length" -> output = (int) number(p, v, name);
          case "hash_ids" -> {
            if (v != JsonToken.START_ARRAY) {
              throw new IllegalArgumentException("hash_ids must be an array");
            }
            ids = new ArrayList<>();
            while (p.nextToken() != JsonToken.END_ARRAY) {
              ids.add(number(p, p.currentToken(), "hash_ids[]"));
            }
          }
          default -> p.skipChildren();
        }
      }
    }
    if (ts < 0 || input < 1 || output < 0 || ids == null) {
      throw new IllegalArgumentException(
          "needs timestamp >= 0, input_length >= 1, output_length >= 0 and hash_ids");
    }
    int blocks = (input + 511) / 512;
    if (ids.size() != blocks) {
      throw new IllegalArgumentException(
          "hash_ids has " + ids.size() + " ids but input_length " + input + " needs " + blocks);
    }
    int[] tokens = new int[input];
    for (int b = 0; b < blocks; b++) {
      int[] seg = segment(100_000_000L + ids.get(b), 512);
      System.arraycopy(seg, 0, tokens, b * 512, Math.min(512, input - b * 512));
    }
    return new SimRequest(
        id, (long) (ts / rateScale * 1e6), "t", null, tokens, Math.max(1, output));
  }

  private static long number(JsonParser p, JsonToken v, String field) {
    if (v != JsonToken.VALUE_NUMBER_INT) {
      throw new IllegalArgumentException(field + " must be an integer");
    }
    long n = p.getLongValue();
    if (n < 0) {
      throw new IllegalArgumentException(field + " must be >= 0, was " + n);
    }
    return n;
  }
}
