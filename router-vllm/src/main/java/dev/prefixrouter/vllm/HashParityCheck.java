package dev.prefixrouter.vllm;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.KvEvent;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.api.spi.PredictionSink;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hash-parity self-test of precise mode: do the block keys the router computes from the engines' KV
 * events equal the keys routing computed from the requests? They do only when the host hashes what
 * the engine caches: the same tokenizer and chat template, the router's block size equal to the
 * engine's, and no seed the events cannot know (prefix isolation seeds routed keys per tenant).
 * Otherwise every event confirms blocks no request will ever match, and the only symptom would be
 * hit rates that silently stay at the predicted level. This check makes the mismatch a counter and
 * one clear log line.
 *
 * <pre>{@code
 * HashParityCheck parity = HashParityCheck.builder(hasher).build();
 * RoutingEngine engine = RoutingEngine.builder().hasher(hasher).predictionSink(parity)...build();
 * KvEventSubscriber events = KvEventSubscriber.builder(parity.sink(engine::applyKvEvents)).build();
 * }</pre>
 *
 * <p><b>How.</b> As a {@link PredictionSink} it remembers the first block key of every routed
 * prompt in a fixed table (direct-mapped, {@link Builder#recentPrompts} entries of 8 bytes; older
 * keys are overwritten, so it answers for recent traffic). On the event side ({@link #sink} or
 * {@link #check}) every {@code BlockStored} that starts a sequence (no parent) on the GPU tier,
 * without a cache salt or LoRA adapter (their keys are seeded), has the router key of its first
 * block recomputed from its token ids, with seed 0 as the index does, and looked up: a hit means a
 * request with these very tokens was routed. Events with a parent are not checked (their chain
 * starts at a key the check does not track). Over each window of {@link Builder#window} checked
 * events, no hit at all while requests were routed is a <em>mismatch</em>: counted, and logged once
 * (again only after a window with hits). An event block size other than the hasher's is counted and
 * logged at once: the index drops such events.
 *
 * <p><b>Cost.</b> Routing side: one hash and one store per placement, no allocation. Event side:
 * one block hashed per checked event. Memory: {@code 8 × recentPrompts} bytes. Thread-safe; both
 * sides may be called concurrently from any threads. A false hit needs a 64-bit key collision; a
 * false miss (the prompt was routed by another replica, or so long ago that its entry was
 * overwritten) only delays the verdict, since one hit in a window clears it.
 */
public final class HashParityCheck implements PredictionSink {
  private static final Logger log = LoggerFactory.getLogger(HashParityCheck.class);
  private static final long EMPTY = 0;

  /**
   * Counters.
   *
   * @param checked sequence-starting GPU events checked
   * @param matched of those, events whose first key routing had produced
   * @param blockSizeMismatches events whose block size differs from the hasher's
   * @param mismatches windows judged a mismatch
   * @param mismatch whether the last judged window was a mismatch
   */
  public record Stats(
      long checked, long matched, long blockSizeMismatches, long mismatches, boolean mismatch) {}

  private final BlockHasher hasher;
  private final AtomicLongArray recent;
  private final int mask;
  private final int window;
  private final LongAdder checked = new LongAdder();
  private final LongAdder matched = new LongAdder();
  private final LongAdder blockSizeMismatches = new LongAdder();
  private final LongAdder mismatches = new LongAdder();
  private final LongAdder routed = new LongAdder();
  private final Object judge = new Object();
  private int windowChecked; // guarded by judge
  private int windowMatched; // guarded by judge
  private long routedAtWindowStart; // guarded by judge
  private volatile boolean mismatch;
  private volatile boolean blockSizeLogged;

  private HashParityCheck(Builder b) {
    this.hasher = b.hasher;
    this.recent = new AtomicLongArray(b.recentPrompts);
    this.mask = b.recentPrompts - 1;
    this.window = b.window;
  }

  /** A builder for a check of the keys of {@code hasher}, the engine's block hasher. */
  public static Builder builder(BlockHasher hasher) {
    return new Builder(hasher);
  }

  /** Remembers the first key of a routed prompt. Called by the engine on the routing thread. */
  @Override
  public void onPredicted(Backend backend, long[] keys, int keyCount, int heldBlocks) {
    if (keyCount > 0) {
      long k = keys[0] == EMPTY ? 1 : keys[0];
      recent.lazySet(slot(k), k);
      routed.increment();
    }
  }

  /** A sink that checks each batch and then hands it to {@code next}. */
  public KvEventSubscriber.Sink sink(KvEventSubscriber.Sink next) {
    Objects.requireNonNull(next, "next");
    return (backendId, batch) -> {
      check(backendId, batch);
      return next.apply(backendId, batch);
    };
  }

  /** Checks the sequence-starting stores of one backend's batch. Never throws for bad events. */
  public void check(String backendId, List<? extends KvEvent> batch) {
    for (KvEvent e : batch) {
      if (e instanceof BlockStored s
          && s.parentBlockHash() == null
          && s.tokenCount() > 0
          && s.cacheSalt() == null // seeded keys: the check knows no seed
          && s.loraName() == null
          && (s.medium() == null || s.medium().equalsIgnoreCase("GPU"))) {
        check(backendId, s);
      }
    }
  }

  private void check(String backendId, BlockStored s) {
    int size = hasher.tokensPerBlock();
    if (s.blockSize() != size) {
      blockSizeMismatches.increment();
      if (!blockSizeLogged) {
        blockSizeLogged = true;
        log.warn(
            "hash parity: backend {} stores blocks of {} tokens but the router hashes blocks of {}:"
                + " its KV events can confirm nothing; set the router's block size to the"
                + " engine's (prefix-router.hashing.block-size)",
            backendId,
            s.blockSize(),
            size);
      }
      return;
    }
    int[] first = new int[size];
    for (int i = 0; i < size; i++) {
      first[i] = s.tokenId(i);
    }
    long[] key = new long[1];
    if (hasher.keys(Prompt.ofTokens(first), 0, key) != 1) {
      return; // a hasher that does not make one key of one block is not comparable
    }
    long k = key[0] == EMPTY ? 1 : key[0];
    boolean hit = recent.get(slot(k)) == k;
    checked.increment();
    if (hit) {
      matched.increment();
    }
    judge(backendId, hit);
  }

  private void judge(String backendId, boolean hit) {
    boolean report = false;
    int n;
    synchronized (judge) {
      windowChecked++;
      if (hit) {
        windowMatched++;
      }
      if (windowChecked < window) {
        return;
      }
      n = windowChecked;
      boolean routedMeanwhile = routed.sum() > routedAtWindowStart;
      boolean bad = windowMatched == 0 && routedMeanwhile;
      windowChecked = 0;
      windowMatched = 0;
      routedAtWindowStart = routed.sum();
      if (bad) {
        mismatches.increment();
        report = !mismatch;
      }
      if (routedMeanwhile) {
        mismatch = bad;
      }
    }
    if (report) {
      log.warn(
          "hash parity: none of the last {} sequences the engines stored (last from backend {})"
              + " starts with a block key routing computed, although requests were routed: KV"
              + " events confirm blocks no request matches. Causes: the host's tokenizer or chat"
              + " template differs from the engine's, prompts routed as text, or prefix isolation"
              + " (routing seeds keys per tenant; events cannot)",
          n,
          backendId);
    }
  }

  private int slot(long key) {
    long h = key * 0x9E3779B97F4A7C15L;
    return (int) (h >>> 40) & mask;
  }

  /** The counters now. */
  public Stats stats() {
    return new Stats(
        checked.sum(), matched.sum(), blockSizeMismatches.sum(), mismatches.sum(), mismatch);
  }

  /** Builder for {@link HashParityCheck}; setters validate at once. */
  public static final class Builder {
    private final BlockHasher hasher;
    private int recentPrompts = 1 << 16;
    private int window = 64;

    private Builder(BlockHasher hasher) {
      this.hasher = Objects.requireNonNull(hasher, "hasher");
    }

    /**
     * Routed prompts remembered (their first keys), a power of two in 2^10 .. 2^22 (default 65,536:
     * 512 KiB).
     */
    public Builder recentPrompts(int prompts) {
      if (prompts < 1 << 10 || prompts > 1 << 22 || Integer.bitCount(prompts) != 1) {
        throw new IllegalArgumentException(
            "recentPrompts must be a power of two in [1024, 4194304], was " + prompts);
      }
      this.recentPrompts = prompts;
      return this;
    }

    /** Checked events per verdict, 1 .. 1,000,000 (default 64). */
    public Builder window(int events) {
      if (events < 1 || events > 1_000_000) {
        throw new IllegalArgumentException("window must be in [1, 1000000], was " + events);
      }
      this.window = events;
      return this;
    }

    public HashParityCheck build() {
      return new HashParityCheck(this);
    }
  }
}
