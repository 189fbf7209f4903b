package dev.prefixrouter.radix;

import com.carrotsearch.hppc.LongIntHashMap;

/**
 * A backend's block key → entry map: hppc's open-addressing map plus {@link #homeSlot}, an
 * unsynchronized read of a key's home slot that a batch of lookups issues first, so that their
 * cache misses overlap instead of being taken one lookup at a time.
 */
final class KeyIndex extends LongIntHashMap {

  /** The key stored in {@code key}'s home slot (a prefetch: the value means nothing). */
  long homeSlot(long key) {
    int slot = hashKey(key) & mask;
    // and the next line (clusters cross lines), and the value a put will write
    return keys[slot] + keys[(slot + 8) & mask] + values[slot];
  }
}
