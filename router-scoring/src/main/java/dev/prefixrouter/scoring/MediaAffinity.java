package dev.prefixrouter.scoring;

import dev.prefixrouter.api.Backend;
import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.spi.FirstTokenObservation;
import dev.prefixrouter.api.spi.Scorer;
import dev.prefixrouter.api.spi.ScoringContext;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.jspecify.annotations.Nullable;

/**
 * Media affinity: a request carrying media ({@link RouteRequest#media()}, content digests) prefers
 * a backend that was sent the same media recently, whose encoder (multimodal processor) cache then
 * spares it the encode. A decorator around a scorer whose costs are milliseconds of time to first
 * token ({@link EstimatedTtftScorer}): after the delegate ranks, each candidate's cost is credited
 * {@code encodeMillis} per media item it holds, and the candidate with the lowest credited cost
 * moves to rank 0 when that is below the credited cost of the delegate's choice; the rest of the
 * ranking stays as the delegate left it. The credit is the encode time saved, so it is bounded by
 * load: a holder whose queue costs more than the saving loses to an idle backend.
 *
 * <p>What a backend "holds" is a belief: the digests of the last {@code perBackend} media routed to
 * it, each for at most {@code ttl}; a request without media costs one {@code isEmpty} check. State
 * per backend is one small LRU map behind its own lock, touched only for requests with media:
 * O(candidates × media) map lookups per decision. Thread-safe.
 *
 * <p>This is an opt-in decorator, not a term of the default scorer: wrap the scorer with {@link
 * #wrap}. With a scorer whose cost is not in milliseconds (the anchors) the credit has no meaning.
 *
 * @deprecated use {@link MediaAffinityTerm}, the same credit as a cost term of {@link
 *     EstimatedTtftScorer} (added with {@link EstimatedTtftScorer.Builder#addTerm}): it ranks every
 *     candidate with the credit, not only rank 0, and gives no credit to a holder with {@code
 *     maxQueued} requests queued. Kept working for existing hosts.
 */
@Deprecated
public final class MediaAffinity implements Scorer {
  private final Scorer delegate;
  private final double encodeMillis;
  private final int perBackend;
  private final long ttlNanos;
  private volatile AtomicReferenceArray<Recent> recent = new AtomicReferenceArray<>(256);

  /** One backend's recent media: digest → routed at (engine nanos), in access order. */
  private static final class Recent extends LinkedHashMap<String, Long> {
    private static final long serialVersionUID = 1L;
    private final int capacity;

    Recent(int capacity) {
      super(16, 0.75f, true);
      this.capacity = capacity;
    }

    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
      return size() > capacity;
    }
  }

  private MediaAffinity(Scorer delegate, double encodeMillis, int perBackend, Duration ttl) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    if (!(encodeMillis > 0 && encodeMillis <= 60_000)) {
      throw new IllegalArgumentException("encodeMillis must be in (0, 60000], was " + encodeMillis);
    }
    if (perBackend < 1 || perBackend > 1_000_000) {
      throw new IllegalArgumentException("perBackend must be in [1, 1000000], was " + perBackend);
    }
    Objects.requireNonNull(ttl, "ttl");
    if (ttl.isNegative() || ttl.isZero() || ttl.compareTo(Duration.ofDays(1)) > 0) {
      throw new IllegalArgumentException("ttl must be in (0, 1 day], was " + ttl);
    }
    this.encodeMillis = encodeMillis;
    this.perBackend = perBackend;
    this.ttlNanos = ttl.toNanos();
  }

  /**
   * Wraps {@code delegate}.
   *
   * @param encodeMillis the encode time one cached media item saves, in ms, (0, 60000]
   * @param perBackend media digests remembered per backend, [1, 1000000] (size it to the engine's
   *     encoder/processor cache in items)
   * @param ttl how long a digest counts as cached, (0, 1 day]
   */
  public static MediaAffinity wrap(
      Scorer delegate, double encodeMillis, int perBackend, Duration ttl) {
    return new MediaAffinity(delegate, encodeMillis, perBackend, ttl);
  }

  /** {@link #wrap} with 30 ms per item, 256 items per backend, 10 minutes. */
  public static MediaAffinity wrap(Scorer delegate) {
    return wrap(delegate, 30, 256, Duration.ofMinutes(10));
  }

  @Override
  public String name() {
    return delegate.name() + "+media";
  }

  @Override
  public void start(int maxBackends) {
    delegate.start(maxBackends);
    recent = new AtomicReferenceArray<>(maxBackends);
  }

  @Override
  public void score(ScoringContext ctx) {
    delegate.score(ctx);
    Set<String> media = ctx.request().media();
    int n = ctx.size();
    if (media.isEmpty() || n < 2) {
      return;
    }
    int[] order = ctx.order();
    long now = ctx.nowNanos();
    int best = -1;
    double bestCost = Double.POSITIVE_INFINITY;
    int bestHeld = 0;
    double topCost = Double.NaN;
    for (int r = 0; r < n; r++) {
      int c = order[r];
      int held = held(ctx.slot(c), media, now);
      double credited = ctx.cost(c) - held * encodeMillis;
      if (r == 0) {
        topCost = credited;
      }
      if (credited < bestCost) {
        bestCost = credited;
        best = r;
        bestHeld = held;
      }
    }
    if (best > 0 && bestCost < topCost) {
      int c = order[best];
      System.arraycopy(order, 0, order, 1, best);
      order[0] = c;
      ctx.setReason("media affinity: holds " + bestHeld + " of " + media.size() + " media items");
    }
  }

  /** How many of {@code media} were routed to {@code slot} within the ttl. */
  private int held(int slot, Set<String> media, long now) {
    Recent r = recent.get(slot);
    if (r == null) {
      return 0;
    }
    int held = 0;
    synchronized (r) {
      for (String d : media) {
        Long at = r.get(d);
        if (at != null && now - at <= ttlNanos) {
          held++;
        }
      }
    }
    return held;
  }

  @Override
  public void onRouted(ScoringContext ctx, int candidate) {
    delegate.onRouted(ctx, candidate);
    recordMedia(ctx, candidate);
  }

  /** Forwarded, so a delegate's per-lease token reaches its {@code onEnded(int, Object)}. */
  @Override
  public @Nullable Object onRoutedLease(ScoringContext ctx, int candidate) {
    Object token = delegate.onRoutedLease(ctx, candidate);
    recordMedia(ctx, candidate);
    return token;
  }

  private void recordMedia(ScoringContext ctx, int candidate) {
    Set<String> media = ctx.request().media();
    if (media.isEmpty()) {
      return;
    }
    Recent r = recent.get(ctx.slot(candidate));
    if (r == null) {
      return;
    }
    long now = ctx.nowNanos();
    synchronized (r) {
      for (String d : media) {
        r.put(d, now);
      }
    }
  }

  @Override
  public OptionalLong estimatedTtftNanos(ScoringContext ctx, int candidate) {
    return delegate.estimatedTtftNanos(ctx, candidate);
  }

  @Override
  public int cachedTokens(ScoringContext ctx, int candidate) {
    return delegate.cachedTokens(ctx, candidate);
  }

  @Override
  public void onFirstToken(FirstTokenObservation observation) {
    delegate.onFirstToken(observation);
  }

  /** Forwarded as primitives, so a delegate that overrides this variant allocates nothing. */
  @Override
  public void onFirstToken(
      int slot,
      long ttftNanos,
      int promptTokens,
      int matchedTokens,
      long queuedPrefillTokens,
      int runningDecodes,
      double estimatedCost) {
    delegate.onFirstToken(
        slot,
        ttftNanos,
        promptTokens,
        matchedTokens,
        queuedPrefillTokens,
        runningDecodes,
        estimatedCost);
  }

  @Override
  public void onEnded(int slot) {
    delegate.onEnded(slot);
  }

  @Override
  public void onEnded(int slot, @Nullable Object token) {
    delegate.onEnded(slot, token);
  }

  @Override
  public void addBackend(int slot, Backend backend) {
    delegate.addBackend(slot, backend);
    recent.set(slot, new Recent(perBackend));
  }

  @Override
  public void updateBackend(int slot, Backend before, Backend after) {
    delegate.updateBackend(slot, before, after);
  }

  @Override
  public void removeBackend(int slot) {
    delegate.removeBackend(slot);
    recent.set(slot, null);
  }

  @Override
  public Map<String, Double> describe(int slot) {
    Map<String, Double> out = new LinkedHashMap<>(delegate.describe(slot));
    Recent r = recent.get(slot);
    if (r != null) {
      synchronized (r) {
        out.put("mediaRemembered", (double) r.size());
      }
    }
    return out;
  }

  @Override
  public String toString() {
    return "MediaAffinity["
        + delegate
        + ", encodeMillis="
        + encodeMillis
        + ", perBackend="
        + perBackend
        + ", ttl="
        + Duration.ofNanos(ttlNanos)
        + "]";
  }
}
