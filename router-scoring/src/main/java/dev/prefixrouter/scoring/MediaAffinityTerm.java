package dev.prefixrouter.scoring;

import dev.prefixrouter.api.RouteRequest;
import dev.prefixrouter.api.spi.ScoringContext;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Media affinity as a cost term of {@link EstimatedTtftScorer}: the encode time of the request's
 * media ({@link RouteRequest#media()}, content digests) that the candidate's encoder cache is not
 * believed to hold. A backend that was sent the same image recently is spared its encode, so it
 * costs {@code encodeMillis} less per such item; the term adds to the queue and prefill terms, so a
 * holder whose queue costs more than the encode it saves loses to an idle backend.
 *
 * <pre>
 * media(b) = encodeMillis · (items − heldWithRoom(b)) / weight(b)
 * heldWithRoom(b) = items remembered on b, or 0 when b has maxQueued or more requests queued
 * </pre>
 *
 * <p><b>Bounded by load.</b> The queue terms do not see the encodes of requests already queued on a
 * holder, so a holder of popular media takes bursts of them until its real queue far exceeds its
 * estimate. A candidate whose queue (the router's own leases before their first token plus the rest
 * of the reported waiting count, as in {@link Candidates#ownQueued} and {@link Candidates#waiting})
 * has reached {@code maxQueued} therefore gets no credit: it pays like a backend without the media,
 * and the request goes where it would have gone without affinity.
 *
 * <pre>{@code
 * EstimatedTtftScorer scorer = EstimatedTtftScorer.builder()
 *     .addTerm(MediaAffinityTerm.builder().encodeMillis(40).perBackend(128).build())
 *     .build();
 * }</pre>
 *
 * <p>What a backend "holds" is a belief: the digests of the last {@code perBackend} media routed to
 * it, each for at most {@code ttl}. Opt-in (add it to the scorer); a request without media costs a
 * fill of zeros. State per backend is one small LRU map behind its own lock, touched only for
 * requests with media: O(candidates × media) lookups per decision, O(media) inserts per route.
 * Memory: at most {@code perBackend} digests per backend. Thread-safe.
 */
public final class MediaAffinityTerm implements CostTerm {
  /** The term's name, for {@link EstimatedTtftScorer#termNames()}. */
  public static final String NAME = "media-affinity";

  private static final String REASON = "est-ttft, media affinity (encoder cache)";

  private final double encodeMillis;
  private final int perBackend;
  private final long ttlNanos;
  private final int maxQueued;
  private final Object grow = new Object();
  private volatile @Nullable Recent[] recent = new Recent[16];

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

  private MediaAffinityTerm(Builder b) {
    this.encodeMillis = b.encodeMillis;
    this.perBackend = b.perBackend;
    this.ttlNanos = b.ttl.toNanos();
    this.maxQueued = b.maxQueued;
  }

  /** A builder with the defaults: 30 ms per item, 256 items per backend, 10 minutes, 2 queued. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public void costs(Candidates c, double[] out) {
    int n = c.size();
    Set<String> media = c.ctx().request().media();
    if (media.isEmpty()) {
      Arrays.fill(out, 0, n, 0.0);
      return;
    }
    ScoringContext ctx = c.ctx();
    long now = ctx.nowNanos();
    int items = media.size();
    for (int i = 0; i < n; i++) {
      boolean room = c.ownQueued(i) + c.waiting(i) < maxQueued;
      int held = room ? held(ctx.slot(i), media, now) : 0;
      out[i] = encodeMillis * (items - held) / c.weight(i);
    }
  }

  /**
   * The reason when the winner got a credit (its media cost is below another candidate's) and,
   * without this term, would cost more than the best.
   */
  @Override
  public @Nullable String reason(Candidates c) {
    int n = c.size();
    if (n < 2 || c.ctx().request().media().isEmpty()) {
      return null;
    }
    int winner = c.order()[0];
    double best = Double.POSITIVE_INFINITY;
    double highestMedia = 0;
    for (int i = 0; i < n; i++) {
      best = Math.min(best, c.costWithout(i, this));
      highestMedia = Math.max(highestMedia, c.termCost(this, i));
    }
    boolean credited = c.termCost(this, winner) < highestMedia;
    return credited && c.costWithout(winner, this) > best ? REASON : null;
  }

  @Override
  public void onRouted(ScoringContext ctx, int candidate) {
    Set<String> media = ctx.request().media();
    if (media.isEmpty()) {
      return;
    }
    Recent r = recentOf(ctx.slot(candidate), true);
    long now = ctx.nowNanos();
    synchronized (r) {
      for (String d : media) {
        r.put(d, now);
      }
    }
  }

  @Override
  public void removeBackend(int slot) {
    synchronized (grow) {
      Recent[] rs = recent;
      if (slot < rs.length && rs[slot] != null) {
        rs = rs.clone(); // copy on write: readers load the array without the lock
        rs[slot] = null;
        recent = rs;
      }
    }
  }

  /** How many of {@code media} were routed to {@code slot} within the ttl. */
  private int held(int slot, Set<String> media, long now) {
    Recent r = recentOf(slot, false);
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

  private @Nullable Recent recentOf(int slot, boolean create) {
    Recent[] rs = recent;
    if (slot < rs.length && rs[slot] != null) {
      return rs[slot];
    }
    if (!create) {
      return null;
    }
    synchronized (grow) {
      rs = recent;
      if (slot < rs.length && rs[slot] != null) {
        return rs[slot];
      }
      // always a fresh copy published by the volatile store, never a plain store into the array
      // readers hold: a reader could otherwise see the new Recent before its fields
      rs = Arrays.copyOf(rs, slot < rs.length ? rs.length : Math.max(slot + 1, rs.length * 2));
      rs[slot] = new Recent(perBackend);
      recent = rs;
      return rs[slot];
    }
  }

  @Override
  public String toString() {
    return "MediaAffinityTerm[encodeMillis="
        + encodeMillis
        + ", perBackend="
        + perBackend
        + ", ttl="
        + Duration.ofNanos(ttlNanos)
        + ", maxQueued="
        + maxQueued
        + "]";
  }

  /** Builder of a {@link MediaAffinityTerm}; setters validate at once. */
  public static final class Builder {
    private double encodeMillis = 30;
    private int perBackend = 256;
    private Duration ttl = Duration.ofMinutes(10);
    private int maxQueued = 2;

    private Builder() {}

    /** The encode time one uncached media item costs, in ms, (0, 60000]; default 30. */
    public Builder encodeMillis(double ms) {
      if (!(ms > 0 && ms <= 60_000)) {
        throw new IllegalArgumentException("encodeMillis must be in (0, 60000], was " + ms);
      }
      this.encodeMillis = ms;
      return this;
    }

    /**
     * Media digests remembered per backend, [1, 1000000] (size it to the engine's encoder cache in
     * items); default 256.
     */
    public Builder perBackend(int items) {
      if (items < 1 || items > 1_000_000) {
        throw new IllegalArgumentException("perBackend must be in [1, 1000000], was " + items);
      }
      this.perBackend = items;
      return this;
    }

    /** How long a digest counts as cached, (0, 1 day]; default 10 minutes. */
    public Builder ttl(Duration ttl) {
      this.ttl = Durations.positiveAtMost("ttl", ttl, Duration.ofDays(1));
      return this;
    }

    /**
     * A candidate with this many requests queued or more gets no credit for the media it holds, in
     * [1, 1000000]; default 2. {@code 1000000} leaves the credit unbounded by load.
     */
    public Builder maxQueued(int maxQueued) {
      if (maxQueued < 1 || maxQueued > 1_000_000) {
        throw new IllegalArgumentException("maxQueued must be in [1, 1000000], was " + maxQueued);
      }
      this.maxQueued = maxQueued;
      return this;
    }

    /** The term; add it with {@link EstimatedTtftScorer.Builder#addTerm}. */
    public MediaAffinityTerm build() {
      return new MediaAffinityTerm(this);
    }
  }
}
