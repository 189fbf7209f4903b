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
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.quicktheories.core.Gen;

/**
 * Model-based test: random sequences of recordRouted / match / capacity change / removeBackend / KV
 * events applied to the index and to a naive reference model (per backend a map block key → (stamp,
 * depth) with confirmed flags, plus the engine-hash map); every match, held count, LRU age and
 * predicted/confirmed count must agree.
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

  /**
   * Reference model of one backend, block by block: the held blocks in LRU order (most recent
   * first), each with the stamp of the last write that touched it (one stamp per write, the clock
   * made strictly increasing); the victim is the least recent block. A write holds the first {@code
   * capacity} blocks of its path: it touches those it holds already (deepest first, so the head
   * ends most recent), evicts others, then touches the whole path again. A store below a parent
   * block the backend holds that needs no eviction instead places its blocks just less recent than
   * the parent, with the parent's stamp (recency is not refreshed); a store that must evict touches
   * as a route does, then the held blocks from its parent up to the root (before it evicts: a store
   * never evicts its own prefix, and holds at most capacity minus that prefix), and them again
   * after. Engine hashes map to router keys with copy counts; a removal takes a block out once no
   * copy of any hash mapped to its key is left.
   */
  static final class ModelBackend {
    long capacity;
    final Map<Long, long[]> held = new HashMap<>(); // key -> {stamp}
    final List<Long> order = new ArrayList<>(); // held keys, most recent first
    final Set<Long> confirmed = new HashSet<>();
    final Map<Long, Long> engineToRouter = new HashMap<>();
    final Map<Long, Integer> engineCopies = new HashMap<>();
    final Map<Long, Integer> refs = new HashMap<>();
    long clock;
    long lastStamp = Long.MIN_VALUE;

    ModelBackend(long capacity, Map<Long, Long> parentOf) {
      this.capacity = capacity;
      this.parentOf = parentOf;
    }

    long nextStamp() {
      lastStamp = clock > lastStamp ? clock : lastStamp + 1;
      return lastStamp;
    }

    long victim() {
      return order.get(order.size() - 1);
    }

    void evictOldest() {
      forget(victim());
    }

    private void forget(long k) {
      held.remove(k);
      order.remove(k);
      confirmed.remove(k);
    }

    /** Makes {@code k} the most recent block, with {@code stamp}. */
    private void touch(long k, long stamp) {
      order.remove(k);
      order.add(0, k);
      held.put(k, new long[] {stamp});
    }

    /** Places {@code k} just less recent than {@code parent}, with its stamp. */
    private void placeBelow(long parent, long k) {
      order.remove(k);
      order.add(order.indexOf(parent) + 1, k);
      held.put(k, new long[] {held.get(parent)[0]});
    }

    /** The index's LRU age: "room" below capacity, else the age of the victim's stamp. */
    void checkLruAge(long age, long now) {
      if (held.size() < capacity) {
        assertThat(age).isEqualTo(IndexSignal.ABSENT);
      } else {
        assertThat(age).isEqualTo(Math.max(0, now - held.get(victim())[0]));
      }
    }

    /** Parent key of every key seen on a path (keys are chained: a key names its prefix). */
    final Map<Long, Long> parentOf;

    void touchPath(long[] keys, int n, boolean confirm) {
      touchPath(keys, n, confirm, null);
    }

    /** {@link #touchPath(long[], int, boolean)} below {@code parent} (a store). */
    void touchPath(long[] keys, int n, boolean confirm, Long parent) {
      for (int i = 0; i < n; i++) {
        if (i > 0) {
          parentOf.put(keys[i], keys[i - 1]);
        } else if (parent != null) {
          parentOf.put(keys[0], parent);
        }
      }
      long stamp = nextStamp();
      int above = 0;
      for (Long k = parent; k != null; k = parentOf.get(k)) {
        if (held.containsKey(k)) {
          above++;
        }
      }
      int hold = (int) Math.min(n, capacity - above);
      int present = 0;
      for (int i = 0; i < hold; i++) {
        if (held.containsKey(keys[i])) {
          present++;
        }
      }
      int missing = hold - present;
      boolean below =
          confirm
              && parent != null
              && held.containsKey(parent)
              && held.size() + missing <= capacity;
      for (int i = hold - 1; i >= 0; i--) {
        if (held.containsKey(keys[i])) {
          if (confirm) {
            confirmed.add(keys[i]);
          }
          if (below) {
            placeBelow(parent, keys[i]);
          } else {
            touch(keys[i], stamp);
          }
        }
      }
      if (!below) { // the prefix is no candidate for the eviction below
        for (Long k = parent; k != null; k = parentOf.get(k)) {
          if (held.containsKey(k)) {
            touch(k, stamp);
          }
        }
      }
      while (held.size() + missing > capacity) {
        evictOldest();
      }
      for (int i = hold - 1; i >= 0; i--) {
        if (below) {
          placeBelow(parent, keys[i]);
        } else {
          touch(keys[i], stamp);
        }
        if (confirm) {
          confirmed.add(keys[i]);
        }
      }
      if (!below) {
        for (Long k = parent; k != null; k = parentOf.get(k)) {
          if (held.containsKey(k)) {
            touch(k, stamp);
          }
        }
      }
    }

    int match(long[] keys) {
      int d = 0;
      while (d < keys.length && held.containsKey(keys[d])) {
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
      touchPath(keys, keys.length, true, parent == null ? null : parentKey);
      for (int i = 0; i < keys.length; i++) {
        int c = engineCopies.merge(engineHashes[i], 1, Integer::sum);
        if (c == 1) {
          engineToRouter.put(engineHashes[i], keys[i]);
        }
        refs.merge(engineToRouter.get(engineHashes[i]), 1, Integer::sum);
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
      int left = refs.getOrDefault(k, 0) - 1;
      if (left <= 0) {
        refs.remove(k);
        forget(k);
      } else {
        refs.put(k, left);
      }
    }
  }

  /**
   * The index's prune: every block held below a key no backend holds goes (its match could not
   * reach it).
   */
  static void prune(Map<Integer, ModelBackend> model, Map<Long, Long> parentOf) {
    Set<Long> heldByAny = new HashSet<>();
    model.values().forEach(b -> heldByAny.addAll(b.held.keySet()));
    for (ModelBackend b : model.values()) {
      for (Long k : new ArrayList<>(b.held.keySet())) {
        for (Long a = parentOf.get(k); a != null; a = parentOf.get(a)) {
          if (!heldByAny.contains(a)) {
            b.forget(k);
            break;
          }
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
    check(true, -1, 6);
  }

  /** Without KV events what each backend holds is prefix-closed (no gaps). */
  @Test
  void prefixClosedMirrorsAgreeWithTheReferenceModel() {
    check(false, -1, 6);
  }

  /**
   * An index that prunes after nearly every write (above 2 keys): each prune must drop exactly the
   * blocks held below a key nobody holds.
   */
  @Test
  void prunesAgreeWithTheReferenceModel() {
    prunedBlocks = 0;
    check(true, 2, 6);
    assertThat(prunedBlocks).as("blocks pruned over the examples").isPositive();
    check(false, 2, 6);
  }

  private long prunedBlocks; // over the examples of one check

  private void check(boolean events, long pruneAbove, int capacity) {
    qt().withExamples(300)
        .forAll(ops())
        .checkAssert(
            ops -> {
              RadixPrefixIndex.Builder builder =
                  RadixPrefixIndex.builder().maxBackends(130).predictionTtl(Duration.ZERO);
              if (pruneAbove >= 0) {
                builder.pruneAbove(pruneAbove);
              }
              RadixPrefixIndex index = builder.build();
              long prunes = 0;
              Map<Integer, ModelBackend> model = new HashMap<>();
              Map<Long, Long> parents = new HashMap<>();
              for (int s : SLOTS) {
                index.addBackend(s, capacity);
                model.put(s, new ModelBackend(capacity, parents));
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
                  while (m.held.size() > cap) {
                    m.evictOldest();
                  }
                } else if (kind < 50) {
                  index.removeBackend(slot);
                  index.addBackend(slot, capacity);
                  model.put(slot, new ModelBackend(capacity, parents));
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
                  // 1-4 consecutive blocks in one event, head first or (odd b / 30) tail first
                  int first = (op.b() / 5) % 6;
                  int count = Math.min(6 - first, 1 + (op.a() / 4) % 4);
                  long[] engine = new long[count];
                  for (int i = 0; i < count; i++) {
                    int block = (op.b() / 30) % 2 == 0 ? first + i : first + count - 1 - i;
                    engine[i] = engineHash(op.a(), op.b(), block);
                  }
                  index.apply(slot, new BlockRemoved(engine, "GPU"), H, now);
                  for (long engineHash : engine) {
                    m.removed(engineHash);
                  }
                } else if (kind < 83) {
                  index.apply(slot, AllBlocksCleared.INSTANCE, H, now);
                  ModelBackend fresh = new ModelBackend(m.capacity, parents);
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
                Map<String, Long> counters = index.stats().counters();
                if (counters.get("prunes") > prunes) {
                  prunes = counters.get("prunes");
                  prune(model, parents);
                }
                long capacities = 0;
                for (int s : SLOTS) {
                  capacities += model.get(s).capacity;
                }
                assertThat(counters.get("treeKeys"))
                    .as("step %d, keys in the tree", step)
                    .isLessThanOrEqualTo(pruneAbove < 0 ? 2 * capacities : Long.MAX_VALUE);
                long predicted = 0;
                long confirmed = 0;
                for (int s : SLOTS) {
                  ModelBackend b = model.get(s);
                  assertThat(index.heldBlocks(s)).as("held, slot %d", s).isEqualTo(b.held.size());
                  assertThat(index.heldBlocks(s)).isLessThanOrEqualTo(b.capacity);
                  b.checkLruAge(index.signal(s, IndexSignal.LRU_AGE_NANOS, now), now);
                  predicted += b.held.size() - b.confirmed.size();
                  confirmed += b.confirmed.size();
                }
                assertThat(index.stats().confirmedBlocks()).as("confirmed").isEqualTo(confirmed);
                assertThat(index.stats().predictedBlocks()).as("predicted").isEqualTo(predicted);
              }
              prunedBlocks += index.stats().counters().get("prunedBlocks");
              for (int s : SLOTS) {
                index.removeBackend(s);
              }
              assertThat(index.stats().nodes()).isZero();
            });
  }
}
