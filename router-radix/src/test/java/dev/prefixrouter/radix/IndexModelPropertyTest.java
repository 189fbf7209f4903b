package dev.prefixrouter.radix;

import static org.assertj.core.api.Assertions.assertThat;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import dev.prefixrouter.api.AllBlocksCleared;
import dev.prefixrouter.api.BlockRemoved;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.Prompt;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.api.spi.IndexSignal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.quicktheories.core.Gen;

/**
 * Model-based test: random sequences of recordRouted / match / capacity change / removeBackend / KV
 * events applied to the index and to a naive reference model (per backend a recency-ordered map
 * block key → confirmed flag, plus the engine-hash map); every match must agree.
 */
class IndexModelPropertyTest {
  private static final BlockHasher H = BlockHashers.tokens(2);
  private static final int[] SLOTS = {0, 1, 64, 129}; // spans three bitset words

  record Op(int kind, int backend, int a, int b) {}

  /**
   * Paths are prefixes of four documents; documents 0/1 and 2/3 share their first two blocks, so
   * paths overlap heavily.
   */
  private static int[] path(int a, int b) {
    int doc = a % 4;
    int len = 2 * (1 + b % 6);
    int[] t = new int[len];
    for (int i = 0; i < len; i++) {
      t[i] = i < 4 ? doc >> 1 : 10 * doc + i;
    }
    return t;
  }

  /** Engine hash of block {@code i} of a document path; variant 1 is a second engine copy. */
  private static long engineHash(int a, int b, int i) {
    return 1_000L * (b % 2) + 100L * (a % 4) + i;
  }

  /** Reference model of one backend. */
  static final class ModelBackend {
    long capacity;
    final LinkedHashMap<Long, Boolean> lru = new LinkedHashMap<>(); // oldest first
    final Map<Long, Integer> copies = new HashMap<>();
    final Map<Long, Long> engineToRouter = new HashMap<>();
    final Map<Long, Integer> engineCopies = new HashMap<>();
    final Map<Long, Long> stampOf =
        new HashMap<>(); // last touch of each block, as the index stamps
    long clock;
    long lastStamp = Long.MIN_VALUE;

    /** The index's stamps: the clock, made strictly increasing per backend. */
    long nextStamp() {
      lastStamp = clock > lastStamp ? clock : lastStamp + 1;
      return lastStamp;
    }

    ModelBackend(long capacity) {
      this.capacity = capacity;
    }

    void touch(long k, boolean confirmed) {
      Boolean was = lru.remove(k);
      lru.put(k, confirmed || (was != null && was));
      stampOf.put(k, nextStamp());
    }

    /** The index's LRU age: "room" below capacity, else the age of the oldest block's stamp. */
    void checkLruAge(long age, long now) {
      if (lru.size() < capacity) {
        assertThat(age).isEqualTo(IndexSignal.ABSENT);
      } else {
        long oldest = stampOf.get(lru.keySet().iterator().next());
        assertThat(age).isEqualTo(Math.max(0, now - oldest));
      }
    }

    void evictOldest() {
      Iterator<Long> it = lru.keySet().iterator();
      long k = it.next();
      it.remove();
      copies.remove(k);
    }

    void touchPath(long[] keys, int n, boolean confirm) {
      List<Long> present = new ArrayList<>();
      int missing = 0;
      for (int i = n - 1; i >= 0; i--) {
        if (lru.containsKey(keys[i])) {
          touch(keys[i], confirm);
          present.add(keys[i]);
        } else {
          missing++;
        }
      }
      if (missing == 0) {
        return;
      }
      while (lru.size() + missing > capacity && !lru.isEmpty()) {
        long oldest = lru.keySet().iterator().next();
        if (present.contains(oldest)) {
          break;
        }
        evictOldest();
      }
      for (int i = n - 1; i >= 0; i--) {
        if (lru.containsKey(keys[i])) {
          touch(keys[i], confirm);
        } else {
          while (lru.size() >= capacity) {
            evictOldest();
          }
          lru.put(keys[i], confirm);
          stampOf.put(keys[i], nextStamp());
        }
      }
    }

    int match(long[] keys) {
      int d = 0;
      while (d < keys.length && lru.containsKey(keys[d])) {
        d++;
      }
      return d;
    }

    void stored(long[] engineHashes, Long parent, int[] tokens) {
      long parentKey = 0;
      if (parent != null) {
        Long p = engineToRouter.get(parent);
        if (p == null) {
          return;
        }
        parentKey = p;
      }
      long[] keys = BlockHasher.keysOf(H, Prompt.ofTokens(tokens), parentKey);
      for (int i = 0; i < keys.length; i++) {
        int c = engineCopies.merge(engineHashes[i], 1, Integer::sum);
        if (c == 1) {
          engineToRouter.put(engineHashes[i], keys[i]);
        }
      }
      touchPath(keys, keys.length, true);
      for (long k : keys) {
        if (lru.containsKey(k)) {
          copies.merge(k, 1, Integer::sum);
        }
      }
    }

    void removed(long engineHash) {
      Integer c = engineCopies.get(engineHash);
      if (c == null) {
        return;
      }
      long k = engineToRouter.get(engineHash);
      if (c == 1) {
        engineCopies.remove(engineHash);
        engineToRouter.remove(engineHash);
      } else {
        engineCopies.put(engineHash, c - 1);
      }
      if (lru.containsKey(k)) {
        int left = copies.getOrDefault(k, 0) - 1;
        if (left <= 0) {
          lru.remove(k);
          copies.remove(k);
        } else {
          copies.put(k, left);
        }
      }
    }
  }

  private static Gen<List<Op>> ops() {
    Gen<Op> op =
        integers()
            .between(0, 99)
            .zip(
                integers().between(0, SLOTS.length - 1),
                integers().between(0, 255),
                integers().between(0, 255),
                (k, bk, a, b) -> new Op(k, bk, a, b));
    return lists().of(op).ofSizeBetween(1, 80);
  }

  @Test
  void indexAgreesWithTheReferenceModelOnEveryMatch() {
    check(true);
  }

  /** Without KV events every mirror stays prefix-closed, so matches take the bisection path. */
  @Test
  void prefixClosedMirrorsAgreeWithTheReferenceModel() {
    check(false);
  }

  private void check(boolean events) {
    qt().withExamples(300)
        .forAll(ops())
        .checkAssert(
            ops -> {
              RadixPrefixIndex index =
                  RadixPrefixIndex.builder()
                      .maxBackends(130)
                      .stripes(4)
                      .predictionTtl(Duration.ZERO)
                      .build();
              Map<Integer, ModelBackend> model = new HashMap<>();
              for (int s : SLOTS) {
                index.addBackend(s, 6);
                model.put(s, new ModelBackend(6));
              }
              long now = 0;
              int step = 0;
              for (Op op : ops) {
                now += 10;
                step++;
                for (int s : SLOTS) {
                  assertThat(index.listsConsistent(s))
                      .as("step %d, lists of slot %d", step, s)
                      .isTrue();
                }
                int slot = SLOTS[op.backend()];
                ModelBackend m = model.get(slot);
                m.clock = now;
                int[] tokens = path(op.a(), op.b());
                long[] keys = BlockHasher.keysOf(H, Prompt.ofTokens(tokens), 0);
                int kind = op.kind();
                if (!events && kind >= 50 && kind < 83) {
                  kind = kind % 2 == 0 ? 0 : 90; // a route or a match instead of an event
                }
                if (kind < 35) {
                  index.recordRouted(keys, keys.length, slot, now);
                  m.touchPath(keys, keys.length, false);
                } else if (kind < 45) {
                  long cap = 1 + op.a() % 8;
                  index.setCapacity(slot, cap);
                  m.capacity = cap;
                  while (m.lru.size() > cap) {
                    m.evictOldest();
                  }
                } else if (kind < 50) {
                  index.removeBackend(slot);
                  index.addBackend(slot, 6);
                  model.put(slot, new ModelBackend(6));
                } else if (kind < 70) {
                  // store a suffix of the path, continuing from the engine hash of its parent
                  int blocks = tokens.length / 2;
                  int from = (op.b() / 7) % blocks;
                  long[] engine = new long[blocks - from];
                  for (int i = from; i < blocks; i++) {
                    engine[i - from] = engineHash(op.a(), op.b(), i);
                  }
                  Long parent = from == 0 ? null : engineHash(op.a(), op.b(), from - 1);
                  int[] stored = java.util.Arrays.copyOfRange(tokens, 2 * from, tokens.length);
                  index.apply(slot, new BlockStored(engine, parent, stored, 2, "GPU"), H, now);
                  m.stored(engine, parent, stored);
                } else if (kind < 80) {
                  long engineHash = engineHash(op.a(), op.b(), (op.b() / 5) % 6);
                  index.apply(slot, BlockRemoved.of(engineHash), H, now);
                  m.removed(engineHash);
                } else if (kind < 83) {
                  index.apply(slot, AllBlocksCleared.INSTANCE, H, now);
                  ModelBackend fresh = new ModelBackend(m.capacity);
                  fresh.lastStamp = m.lastStamp; // the mirror is emptied, its stamp clock goes on
                  model.put(slot, fresh);
                } else {
                  int[] out = new int[SLOTS.length];
                  index.match(keys, keys.length, SLOTS, SLOTS.length, out);
                  for (int i = 0; i < SLOTS.length; i++) {
                    assertThat(out[i])
                        .as("step %d, backend slot %d", step, SLOTS[i])
                        .isEqualTo(model.get(SLOTS[i]).match(keys));
                  }
                }
                for (int s : SLOTS) {
                  assertThat(index.heldBlocks(s))
                      .as("held, slot %d", s)
                      .isEqualTo(model.get(s).lru.size());
                  assertThat(index.heldBlocks(s)).isLessThanOrEqualTo(model.get(s).capacity);
                  model.get(s).checkLruAge(index.signal(s, IndexSignal.LRU_AGE_NANOS, now), now);
                }
              }
              for (int s : SLOTS) {
                index.removeBackend(s);
              }
              assertThat(index.stats().nodes()).isZero();
            });
  }
}
