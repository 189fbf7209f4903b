package dev.prefixrouter.api;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * {@link WorkflowRouter}'s memory: per group (keyed by tenant and group id), where each member was
 * placed and which backends took the group's maps. Bounded three ways: at most {@code maxGroups}
 * groups (the least recently used is dropped beyond), at most {@code maxMembers} members per group
 * (the oldest placement is forgotten beyond) and {@link #MAX_HOLDERS} holders per group; a group
 * not used (routed or viewed) for {@code ttlNanos} is forgotten.
 *
 * <p>Thread-safe: one lock, held for O(inputs + holders) per call and never while routing. Memory:
 * about 100 bytes per member plus the ids' strings.
 */
final class WorkflowGroups {
  /** Most backends remembered as holders of one group's maps. */
  static final int MAX_HOLDERS = 64;

  /** One member's placement: the backend and the prompt tokens it left there. */
  record Placement(String backendId, int promptTokens) {}

  /** One group's state. */
  private static final class Group {
    final LinkedHashMap<String, Placement> members = new LinkedHashMap<>();
    final List<String> holders = new ArrayList<>(2);
    long lastUsed;
  }

  private final int maxGroups;
  private final int maxMembers;
  private final long ttlNanos;
  private final LinkedHashMap<String, Group> groups = new LinkedHashMap<>(16, 0.75f, true);
  private long expired;
  private long evicted;
  private long forgottenMembers;

  WorkflowGroups(int maxGroups, int maxMembers, long ttlNanos) {
    this.maxGroups = maxGroups;
    this.maxMembers = maxMembers;
    this.ttlNanos = ttlNanos;
  }

  /** The key of a tenant's group: injective over (tenant, group). */
  static String key(String tenant, String group) {
    return tenant.length() + ":" + tenant + group;
  }

  /** The backends that took the group's maps, oldest first (a copy; empty for an unknown group). */
  synchronized List<String> holders(String key, long now) {
    Group g = live(key, now);
    return g == null || g.holders.isEmpty() ? List.of() : List.copyOf(g.holders);
  }

  /**
   * Per backend, the prompt tokens of the known {@code inputs} placed there (inputs never placed,
   * or forgotten, are left out); a new map in the inputs' order of first backend.
   */
  synchronized Map<String, Long> inputTokens(String key, List<String> inputs, long now) {
    Map<String, Long> out = new LinkedHashMap<>();
    Group g = live(key, now);
    if (g == null) {
      return out;
    }
    for (String in : inputs) {
      Placement p = g.members.get(in);
      if (p != null) {
        out.merge(p.backendId(), (long) p.promptTokens(), Long::sum);
      }
    }
    return out;
  }

  /** Remembers that {@code member} went to {@code backendId} (a map also makes it a holder). */
  synchronized void record(
      String key, String member, boolean map, String backendId, int promptTokens, long now) {
    Group g = live(key, now);
    if (g == null) {
      g = new Group();
      groups.put(key, g);
      if (groups.size() > maxGroups) {
        Iterator<Group> eldest = groups.values().iterator();
        eldest.next();
        eldest.remove();
        evicted++;
      }
    }
    g.lastUsed = now;
    g.members.remove(member); // a re-placed member moves to the newest position
    g.members.put(member, new Placement(backendId, promptTokens));
    if (g.members.size() > maxMembers) {
      Iterator<String> oldest = g.members.keySet().iterator();
      oldest.next();
      oldest.remove();
      forgottenMembers++;
    }
    if (map && !g.holders.contains(backendId)) {
      g.holders.add(backendId);
      if (g.holders.size() > MAX_HOLDERS) {
        g.holders.remove(0);
      }
    }
    expire(now);
  }

  /** Forgets a group; whether it was known. */
  synchronized boolean forget(String key) {
    return groups.remove(key) != null;
  }

  synchronized int size() {
    return groups.size();
  }

  synchronized long expired() {
    return expired;
  }

  synchronized long evicted() {
    return evicted;
  }

  synchronized long forgottenMembers() {
    return forgottenMembers;
  }

  /** The group if known and used within the ttl (then marked used now), else null. */
  private @Nullable Group live(String key, long now) {
    Group g = groups.get(key);
    if (g == null) {
      return null;
    }
    if (now - g.lastUsed > ttlNanos) {
      groups.remove(key);
      expired++;
      return null;
    }
    g.lastUsed = now;
    return g;
  }

  /** Drops expired groups from the least recently used end (amortised O(1) per call). */
  private void expire(long now) {
    Iterator<Group> it = groups.values().iterator();
    while (it.hasNext()) {
      Group g = it.next();
      if (now - g.lastUsed <= ttlNanos) {
        return;
      }
      it.remove();
      expired++;
    }
  }
}
