package dev.prefixrouter.api;

import dev.prefixrouter.api.spi.Admission;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.api.spi.HealthPolicy;
import dev.prefixrouter.api.spi.PrefixIndex;
import dev.prefixrouter.api.spi.RoutingListener;
import dev.prefixrouter.api.spi.TenantLimiter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/** Test doubles for the SPIs. */
final class Fakes {
  private Fakes() {}

  /** A token bucket without refill: balance per tenant, tryAcquire denies below zero. */
  static final class CountingLimiter implements TenantLimiter {
    final Map<String, AtomicLong> balance = new ConcurrentHashMap<>();
    final long capacity;

    CountingLimiter(long capacity) {
      this.capacity = capacity;
    }

    long balance(String tenant) {
      return balance.computeIfAbsent(tenant, t -> new AtomicLong(capacity)).get();
    }

    @Override
    public Admission tryAcquire(String tenant, long tokens, long nowNanos) {
      if (tokens > capacity) {
        return Admission.tooLarge(tokens + " > capacity " + capacity);
      }
      AtomicLong b = balance.computeIfAbsent(tenant, t -> new AtomicLong(capacity));
      while (true) {
        long v = b.get();
        if (v < tokens) {
          return Admission.denied(1_000_000_000L, "bucket of " + tenant + " empty");
        }
        if (b.compareAndSet(v, v - tokens)) {
          return Admission.GRANTED;
        }
      }
    }

    @Override
    public void adjust(String tenant, long deltaTokens, long nowNanos) {
      balance.computeIfAbsent(tenant, t -> new AtomicLong(capacity)).addAndGet(-deltaTokens);
    }
  }

  /** Opens a slot after {@code threshold} failures; closes on success. */
  static class SimpleBreaker implements HealthPolicy {
    final Map<Integer, AtomicLong> failures = new ConcurrentHashMap<>();
    final int threshold;

    SimpleBreaker(int threshold) {
      this.threshold = threshold;
    }

    @Override
    public void addBackend(int slot, Backend backend) {
      failures.put(slot, new AtomicLong());
    }

    @Override
    public void removeBackend(int slot) {
      failures.remove(slot);
    }

    @Override
    public HealthState state(int slot, long nowNanos) {
      AtomicLong f = failures.get(slot);
      return f != null && f.get() >= threshold ? HealthState.OPEN : HealthState.CLOSED;
    }

    @Override
    public boolean tryAcquire(int slot, long nowNanos) {
      return state(slot, nowNanos) != HealthState.OPEN;
    }

    @Override
    public void onSuccess(int slot, long nowNanos) {
      AtomicLong f = failures.get(slot);
      if (f != null) {
        f.set(0);
      }
    }

    @Override
    public void onFailure(int slot, Failure failure, long nowNanos) {
      AtomicLong f = failures.get(slot);
      if (f != null) {
        f.incrementAndGet();
      }
    }
  }

  /** Remembers calls; match answers from a fixed table slot → matched blocks. */
  /** An index that holds nothing; tests override the calls they observe. Thread-safe. */
  static class NoOpIndex implements PrefixIndex {
    @Override
    public void addBackend(int slot, Backend backend) {}

    @Override
    public void updateBackend(int slot, Backend before, Backend after) {}

    @Override
    public void match(long[] keys, int keyCount, int[] slots, int count, int[] matchedOut) {
      java.util.Arrays.fill(matchedOut, 0, count, 0);
    }

    @Override
    public void recordRouted(long[] keys, int keyCount, int slot, long nowNanos) {}

    @Override
    public void apply(int slot, KvEvent event, BlockHasher hasher, long nowNanos) {}

    @Override
    public void removeBackend(int slot) {}

    @Override
    public IndexStats stats(String[] slotNames) {
      return IndexStats.EMPTY;
    }
  }

  static class RecordingIndex implements PrefixIndex {
    final List<String> calls = Collections.synchronizedList(new ArrayList<>());
    final Map<Integer, Integer> matchBySlot = new ConcurrentHashMap<>();

    @Override
    public void addBackend(int slot, Backend backend) {
      calls.add("add " + slot + " " + backend.capacityBlocks());
    }

    @Override
    public void updateBackend(int slot, Backend before, Backend after) {
      if (before.capacityBlocks() != after.capacityBlocks()) {
        calls.add("capacity " + slot + " " + after.capacityBlocks());
      }
    }

    @Override
    public void match(long[] keys, int keyCount, int[] slots, int count, int[] matchedOut) {
      for (int i = 0; i < count; i++) {
        matchedOut[i] = Math.min(keyCount, matchBySlot.getOrDefault(slots[i], 0));
      }
    }

    @Override
    public void recordRouted(long[] keys, int keyCount, int slot, long nowNanos) {
      calls.add("routed " + slot + " " + keyCount);
    }

    @Override
    public void onEngineCached(
        int slot, int predictedBlocks, int engineBlocks, int inFlightBlocks, long nowNanos) {
      calls.add(
          "engine " + slot + " " + predictedBlocks + " " + engineBlocks + " " + inFlightBlocks);
    }

    @Override
    public void apply(int slot, KvEvent event, BlockHasher hasher, long nowNanos) {
      calls.add("event " + slot + " " + event.getClass().getSimpleName());
    }

    @Override
    public void removeBackend(int slot) {
      calls.add("remove " + slot);
    }

    @Override
    public IndexStats stats(String[] slotNames) {
      return IndexStats.EMPTY;
    }
  }

  /** One key per 4 tokens of a token prompt (key = running sum), for tests only. */
  static final class SimpleHasher implements BlockHasher {
    @Override
    public int keys(Prompt prompt, long seed, long[] out) {
      if (!(prompt instanceof Prompt.Tokens t)) {
        return 0;
      }
      int n = t.length() / 4;
      if (n > out.length) {
        return n;
      }
      long k = seed;
      for (int i = 0; i < n; i++) {
        for (int j = 0; j < 4; j++) {
          k = k * 31 + t.token(i * 4 + j);
        }
        out[i] = k;
      }
      return n;
    }

    @Override
    public int tokensPerBlock() {
      return 4;
    }
  }

  /** Records event names. */
  static final class RecordingListener implements RoutingListener {
    final List<String> events = Collections.synchronizedList(new ArrayList<>());

    @Override
    public void onRouted(Routed routed) {
      events.add("routed " + routed.backendId());
    }

    @Override
    public void onRejected(Rejected rejected) {
      events.add("rejected " + rejected.reason());
    }

    @Override
    public void onFirstToken(Routed routed, long ttftNanos) {
      events.add("first " + routed.backendId() + " " + ttftNanos);
    }

    @Override
    public void onCompleted(Routed routed, Usage usage, long durationNanos) {
      events.add("completed " + routed.backendId());
    }

    @Override
    public void onFailed(Routed routed, Failure failure, boolean beforeFirstToken) {
      events.add("failed " + routed.backendId() + " " + beforeFirstToken);
    }

    @Override
    public void onBackendAdded(Backend backend) {
      events.add("added " + backend.id());
    }

    @Override
    public void onBackendRemoved(Backend backend) {
      events.add("removed " + backend.id());
    }

    @Override
    public void onDrainChanged(Backend backend, boolean draining) {
      events.add("drain " + backend.id() + " " + draining);
    }

    @Override
    public void onHealthChanged(Backend backend, HealthState from, HealthState to) {
      events.add("health " + backend.id() + " " + from + "->" + to);
    }
  }

  static int[] tokens(int n, int base) {
    int[] ids = new int[n];
    for (int i = 0; i < n; i++) {
      ids[i] = base + i;
    }
    return ids;
  }
}
