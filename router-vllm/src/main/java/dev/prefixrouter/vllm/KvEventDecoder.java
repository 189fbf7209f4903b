package dev.prefixrouter.vllm;

import dev.prefixrouter.api.AllBlocksCleared;
import dev.prefixrouter.api.BlockRemoved;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.EngineHashes;
import dev.prefixrouter.api.KvEvent;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.msgpack.core.MessageFormat;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePackException;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;

/**
 * Decodes the msgpack payload of one vLLM / SGLang KV-event message (an {@code EventBatch}) into
 * router-api {@link KvEvent}s.
 *
 * <p>Both encodings, at both levels: the batch as a positional array {@code [ts, events, dp_rank]}
 * (shorter arrays are older versions: missing trailing fields are absent; extra trailing elements
 * are skipped and counted) or as a map; each event as a tagged array {@code ["BlockStored", f1, f2,
 * ...]} in declaration order or as a map with a {@code "type"} key anywhere. {@code BlockStored}
 * fields: {@code block_hashes}, {@code parent_block_hash}, {@code token_ids}, {@code block_size},
 * {@code lora_id}, {@code medium}, {@code lora_name}, {@code extra_keys}, {@code group_idx}, {@code
 * kv_cache_spec_kind}, {@code kv_cache_spec_sliding_window}; {@code BlockRemoved}: {@code
 * block_hashes}, {@code medium}, {@code group_idx}. Block hashes may be msgpack ints (uint64 above
 * {@link Long#MAX_VALUE} keeps its bit pattern) or bytes (the last 8 bytes, big-endian, as {@link
 * EngineHashes#fromBytes}).
 *
 * <p>What reaches the index: {@link BlockStored} (hashes, parent, tokens, block size, medium, cache
 * salt, LoRA adapter name), {@link BlockRemoved} and {@link AllBlocksCleared}. vLLM orders a
 * block's {@code extra_keys} as LoRA name (every block of an adapter's request), multimodal keys,
 * cache salt (block 0 only), each a bare string or, in a vLLM that tags them, a {@code ("lora",
 * name)} / {@code ("cache_salt", salt)} pair (both read). A store of an adapter carries {@code
 * lora_name}; its blocks' extra keys must then start with that name. A {@code cache_salt} is what
 * is left of the first block's entry after the adapter name when that is exactly one string and the
 * store starts the sequence (no parent: vLLM salts only a block that starts at token 0), and every
 * later entry holds only the adapter name (or nothing); the index then keys the blocks from the
 * salted / adapter requests' seed (an older vLLM's multimodal hash alone in block 0 reads as a
 * salt: it keys blocks no request's salt names, a harmless miss, never a false hit). Any other
 * {@code BlockStored} with extra keys (multimodal content hashes, prompt-embeds digests, an adapter
 * name other than {@code lora_name}, a salt with a parent) or of an adapter named only by {@code
 * lora_id} (older vLLM hashed the id) is skipped and counted ({@code skippedVariants}): the engine
 * hashed more than the token ids, salt and adapter name, and router keys recomputed from them alone
 * would confirm a prefix no request of that variant uses (a false hit); removals of such blocks
 * then find nothing, harmlessly. SGLang's {@code BlockStoredWithMetadata} carries its salt in a
 * {@code metadata} map ({@code {"cache_salt": ...}}): under the key {@code metadata} in the map
 * form, in the eighth slot (vLLM's {@code lora_name}) in the array form; the salt is read from
 * either and handled as a salt from {@code extra_keys} (a salted store with a parent is skipped),
 * and a metadata entry other than the salt skips the store as a variant, so a salted store is never
 * applied unsalted. The group index and the sliding window are read and type-checked; events of a
 * KV-cache group whose kind is not full attention ({@code full_attention}, {@code mla_attention},
 * {@code sink_full_attention}) are skipped and counted, since sliding-window groups do not hold the
 * prefix; so is a {@code BlockRemoved} (which names its group but not its kind) of a group the
 * endpoint's stores named as such ({@link #decode(byte[], Groups)}). Unknown event types and
 * unknown fields are skipped and counted; an event with a field of the wrong type, or inconsistent
 * lengths, is skipped and counted as malformed; the rest of the batch is kept.
 *
 * <p>Bounds: the payload (checked by the caller) bounds everything; every array, string and binary
 * header is checked against the bytes left before anything is allocated. Stateless and thread-safe;
 * cost linear in the payload.
 *
 * <p>Allocation: what it returns (the events, their arrays, which the event records copy once more,
 * and a boxed parent hash), the batch's list, and per payload one unpacker and a 64-byte scratch
 * array. Nothing per token, per hash or per field name: ints and hashes are read as primitives
 * (uint64 through the scratch array), and strings are read into the scratch array and matched
 * against the field names, event types, mediums and group kinds of the format, so only a string not
 * among them becomes a new {@link String}. msgpack-core's own string decoding (a 16 KiB character
 * buffer per unpacker) is not used.
 */
public final class KvEventDecoder {

  /** What one payload held. */
  public record Batch(
      double timestamp,
      @Nullable Integer dataParallelRank,
      List<KvEvent> events,
      int unknownEventTypes,
      int unknownFields,
      int malformedEvents,
      int skippedGroups,
      int skippedVariants) {
    public Batch {
      events = List.copyOf(events);
    }
  }

  /** The payload is not an {@code EventBatch} at all (not msgpack, truncated, wrong shape). */
  public static final class DecodeException extends Exception {
    private static final long serialVersionUID = 1L;

    DecodeException(String message, @Nullable Throwable cause) {
      super(message, cause);
    }
  }

  private static final List<String> STORED_FIELDS =
      List.of(
          "block_hashes",
          "parent_block_hash",
          "token_ids",
          "block_size",
          "lora_id",
          "medium",
          "lora_name",
          "extra_keys",
          "group_idx",
          "kv_cache_spec_kind",
          "kv_cache_spec_sliding_window");
  private static final List<String> REMOVED_FIELDS = List.of("block_hashes", "medium", "group_idx");
  private static final Set<String> FULL_ATTENTION =
      Set.of("full_attention", "mla_attention", "sink_full_attention");
  private static final String STORED = "BlockStored";
  private static final String REMOVED = "BlockRemoved";
  private static final String CLEARED = "AllBlocksCleared";

  /** SGLang's {@code BlockStoredWithMetadata}: a map, with {@code cache_salt}. */
  private static final String METADATA = "metadata";

  /**
   * The strings of the format (field names, event types, mediums, group kinds, key tags): a string
   * on the wire equal to one of them is returned as this constant instead of a new {@link String}.
   */
  private static final String[] KNOWN;

  private static final byte[][] KNOWN_UTF8;

  static {
    Set<String> known = new LinkedHashSet<>(STORED_FIELDS);
    known.addAll(List.of("type", STORED, REMOVED, CLEARED, "ts", "events"));
    known.addAll(List.of("data_parallel_rank", "attn_dp_rank", "GPU", "CPU", "gpu", "cpu"));
    known.addAll(List.of("disk", "DISK", "cpu_tiered", "sliding_window", "chunked_local"));
    known.addAll(FULL_ATTENTION);
    known.addAll(List.of(Key.LORA, Key.SALT, METADATA));
    KNOWN = known.toArray(String[]::new);
    KNOWN_UTF8 = new byte[KNOWN.length][];
    for (int i = 0; i < KNOWN.length; i++) {
      KNOWN_UTF8[i] = KNOWN[i].getBytes(StandardCharsets.UTF_8);
    }
  }

  /** Returned by {@link In#intValue} for a value that is not an int. */
  private static final long NOT_INT = Long.MIN_VALUE;

  private KvEventDecoder() {}

  /**
   * Decodes one payload.
   *
   * @throws DecodeException if the payload is not an {@code EventBatch} (the message names the
   *     problem and the byte offset, never the payload)
   */
  public static Batch decode(byte[] payload) throws DecodeException {
    return decode(payload, new Groups());
  }

  /**
   * Decodes one payload of an endpoint whose KV-cache groups {@code groups} has learnt so far (and
   * learns from this one): a {@code BlockRemoved} of a group known not to be full attention is
   * skipped and counted as {@code skippedGroups}. vLLM reports the same block hash in every group
   * of a hybrid model (the group is not part of the hash) and frees a sliding-window group's blocks
   * long before the full-attention group's; applied, such a removal would take the full-attention
   * block out of the index while the engine still holds it.
   */
  static Batch decode(byte[] payload, Groups groups) throws DecodeException {
    try (MessageUnpacker u = MessagePack.newDefaultUnpacker(payload)) {
      Counts counts = new Counts(groups);
      Batch b = batch(new In(u, payload.length), counts);
      if (u.hasNext()) {
        throw new DecodeException("trailing bytes after the batch", null);
      }
      return b;
    } catch (IOException | MessagePackException | IllegalArgumentException e) {
      throw new DecodeException("not an EventBatch: " + e.getClass().getSimpleName(), e);
    }
  }

  /**
   * The KV-cache groups (by {@code group_idx}) an endpoint's stores said are not full attention; a
   * group a later store says is full attention leaves the set. Bound: group indexes in {@code [0,
   * 1024)} (an index outside is never recorded, so its removals are applied). Not thread-safe: one
   * per endpoint, used by the thread that decodes its payloads.
   */
  static final class Groups {
    static final int MAX_GROUP = 1024;
    private final java.util.BitSet partial = new java.util.BitSet();

    void learn(long group, boolean fullAttention) {
      if (group >= 0 && group < MAX_GROUP) {
        partial.set((int) group, !fullAttention);
      }
    }

    boolean partial(long group) {
      return group >= 0 && group < MAX_GROUP && partial.get((int) group);
    }
  }

  private static final class Counts {
    final Groups groups;

    Counts(Groups groups) {
      this.groups = groups;
    }

    int unknownTypes;
    int unknownFields;
    int malformed;
    int skippedGroups;
    int skippedVariants;
  }

  private static Batch batch(In in, Counts counts) throws IOException, DecodeException {
    MessageUnpacker u = in.u;
    double ts = 0;
    Integer rank = null;
    List<KvEvent> events = null;
    ValueType type = u.getNextFormat().getValueType();
    if (type == ValueType.ARRAY) {
      int n = in.header(u.unpackArrayHeader());
      for (int i = 0; i < n; i++) {
        switch (i) {
          case 0 -> ts = number(u);
          case 1 -> events = events(in, counts);
          case 2 -> rank = nullableInt(in);
          default -> {
            u.skipValue();
            counts.unknownFields++;
          }
        }
      }
    } else if (type == ValueType.MAP) {
      int n = in.header(u.unpackMapHeader());
      for (int i = 0; i < n; i++) {
        String key = in.key();
        switch (key) {
          case "ts" -> ts = number(u);
          case "events" -> events = events(in, counts);
          case "data_parallel_rank", "attn_dp_rank" -> rank = nullableInt(in);
          default -> {
            u.skipValue();
            counts.unknownFields++;
          }
        }
      }
    } else {
      throw new DecodeException("the batch is a msgpack " + type + ", not an array or a map", null);
    }
    if (events == null) {
      throw new DecodeException("the batch has no events", null);
    }
    return new Batch(
        ts,
        rank,
        events,
        counts.unknownTypes,
        counts.unknownFields,
        counts.malformed,
        counts.skippedGroups,
        counts.skippedVariants);
  }

  private static List<KvEvent> events(In in, Counts counts) throws IOException, DecodeException {
    MessageUnpacker u = in.u;
    if (u.getNextFormat().getValueType() != ValueType.ARRAY) {
      throw new DecodeException("events is not an array", null);
    }
    int n = in.header(u.unpackArrayHeader());
    List<KvEvent> out = new ArrayList<>(Math.min(n, 1024));
    EventFields f = new EventFields(); // reset for each event
    for (int i = 0; i < n; i++) {
      f.reset();
      KvEvent e = event(in, f, counts);
      if (e != null) {
        out.add(e);
      }
    }
    return out;
  }

  /** One event read into {@code f}, or null if it is skipped (and counted). */
  private static @Nullable KvEvent event(In in, EventFields f, Counts counts)
      throws IOException, DecodeException {
    MessageUnpacker u = in.u;
    ValueType type = u.getNextFormat().getValueType();
    if (type == ValueType.ARRAY) {
      int n = in.header(u.unpackArrayHeader());
      if (n == 0) {
        counts.malformed++;
        return null;
      }
      if (u.getNextFormat().getValueType() != ValueType.STRING) {
        u.skipValue(n);
        counts.malformed++;
        return null;
      }
      f.tag = in.text();
      List<String> names = fieldsOf(f.tag);
      if (names == null) {
        u.skipValue(n - 1); // an unknown type: its fields mean nothing here
        n = 1;
      }
      for (int i = 1; i < n; i++) {
        if (i - 1 < names.size()) {
          f.read(names.get(i - 1), in);
        } else {
          u.skipValue();
          counts.unknownFields++;
        }
      }
    } else if (type == ValueType.MAP) {
      int n = in.header(u.unpackMapHeader());
      for (int i = 0; i < n; i++) {
        String key = in.key();
        if (key.equals("type")) {
          f.tag = u.getNextFormat().getValueType() == ValueType.STRING ? in.text() : skip(u);
        } else if (STORED_FIELDS.contains(key) || key.equals(METADATA)) {
          f.read(key, in);
        } else {
          u.skipValue();
          counts.unknownFields++;
        }
      }
    } else {
      u.skipValue();
      counts.malformed++;
      return null;
    }
    return f.toEvent(counts);
  }

  private static @Nullable String skip(MessageUnpacker u) throws IOException {
    u.skipValue();
    return null;
  }

  private static @Nullable List<String> fieldsOf(String tag) {
    return switch (tag) {
      case STORED -> STORED_FIELDS;
      case REMOVED -> REMOVED_FIELDS;
      case CLEARED -> List.of();
      default -> null;
    };
  }

  /**
   * One element of a block's extra keys: a bare string ({@code tag == null}, its role given by its
   * place) or a tagged pair.
   */
  private record Key(@Nullable String tag, String value) {
    static final String LORA = "lora";
    static final String SALT = "cache_salt";

    /** Whether this key may play the role {@code role} (untagged, or tagged so). */
    boolean may(String role) {
      return tag == null || tag.equals(role);
    }

    /** Whether this key may play {@code role} and holds {@code expected}. */
    boolean names(String role, @Nullable String expected) {
      return may(role) && value.equals(expected);
    }
  }

  /**
   * The fields of one event as read, in either encoding; one instance per batch, reset per event.
   */
  private static final class EventFields {
    @Nullable String tag;
    long @Nullable [] hashes;
    boolean hasParent;
    long parent;
    int @Nullable [] tokens;
    int blockSize;
    @Nullable String medium;
    @Nullable String groupKind;
    long groupIdx = NOT_INT;
    boolean variant; // extra keys other than an adapter name and a salt, or an unnamed adapter
    boolean loraId; // lora_id set (an adapter; named only by lora_name)
    @Nullable String lora; // lora_name
    @Nullable List<Key> first; // block 0's extra keys when all are keys (null: none)
    @Nullable Key later; // the one key every later block's extra keys hold (null: none)
    boolean wrongType;
    @Nullable String metaSalt; // SGLang's metadata.cache_salt

    void reset() {
      metaSalt = null;
      tag = null;
      hashes = null;
      hasParent = false;
      parent = 0;
      tokens = null;
      blockSize = -1;
      medium = null;
      groupKind = null;
      groupIdx = NOT_INT;
      variant = false;
      loraId = false;
      lora = null;
      first = null;
      later = null;
      wrongType = false;
    }

    void read(String name, In in) throws IOException {
      MessageUnpacker u = in.u;
      MessageFormat format = u.getNextFormat();
      if (format.getValueType() == ValueType.NIL) {
        u.unpackNil();
        return;
      }
      boolean ok =
          switch (name) {
            case "block_hashes" -> (hashes = in.hashes()) != null;
            case "parent_block_hash" -> {
              hasParent = in.hash();
              parent = in.hash;
              yield hasParent;
            }
            case "token_ids" -> (tokens = in.tokenIds()) != null;
            case "block_size" -> {
              long v = in.intValue();
              blockSize = v == NOT_INT ? -1 : (int) v;
              yield v != NOT_INT;
            }
            case "group_idx" -> (groupIdx = in.intValue()) != NOT_INT;
            case "kv_cache_spec_sliding_window" -> in.intValue() != NOT_INT;
            case "lora_id" -> {
              loraId = true; // nil returned above: a value names an adapter
              yield in.intValue() != NOT_INT;
            }
            case "medium" -> (medium = in.string()) != null;
            case "lora_name" -> {
              if (format.getValueType() == ValueType.MAP) {
                // SGLang's BlockStoredWithMetadata, array form: its metadata in vLLM's lora_name
                // slot ([tag, hashes, parent, tokens, block_size, lora_id, medium, metadata])
                yield metadata(in);
              }
              lora = in.string();
              yield lora != null && !lora.isEmpty();
            }
            case METADATA -> metadata(in);
            case "kv_cache_spec_kind" -> (groupKind = in.string()) != null;
            case "extra_keys" -> extraKeys(in);
            default -> {
              u.skipValue();
              yield true;
            }
          };
      wrongType |= !ok;
    }

    /**
     * Reads SGLang's {@code metadata} map: {@code cache_salt} (a string, or nil for none) is the
     * store's salt; a non-string salt is a wrong type (the event is malformed), an empty one or any
     * other non-nil entry makes the event a variant (whether the engine hashed it is not known: the
     * store is skipped rather than applied without it).
     */
    private boolean metadata(In in) throws IOException {
      MessageUnpacker u = in.u;
      if (u.getNextFormat().getValueType() != ValueType.MAP) {
        u.skipValue();
        return false;
      }
      int n = in.length(u.unpackMapHeader(), METADATA);
      boolean ok = true;
      for (int i = 0; i < n; i++) {
        String key = u.getNextFormat().getValueType() == ValueType.STRING ? in.text() : skip(u);
        ValueType type = u.getNextFormat().getValueType();
        if (type == ValueType.NIL) {
          u.unpackNil();
        } else if (!Key.SALT.equals(key)) {
          u.skipValue();
          variant = true;
        } else if (type != ValueType.STRING) {
          u.skipValue();
          ok = false;
        } else {
          String v = in.text();
          if (v.isEmpty()) {
            variant = true;
          } else {
            metaSalt = v;
          }
        }
      }
      return ok;
    }

    /**
     * Reads {@code extra_keys}: one entry per block, nil or a tuple (LoRA name, multimodal hashes,
     * cache salt...). Entries made of keys only ({@link Key}: strings, or pairs tagged {@code
     * "lora"} / {@code "cache_salt"}) are kept ({@link #first}, and {@link #later} when every later
     * entry is the same single key), to be checked against the adapter name in {@link #toEvent};
     * any other non-nil entry makes the event a variant.
     */
    private boolean extraKeys(In in) throws IOException {
      MessageUnpacker u = in.u;
      if (u.getNextFormat().getValueType() != ValueType.ARRAY) {
        u.skipValue();
        return false;
      }
      int n = in.length(u.unpackArrayHeader(), "extra_keys");
      for (int i = 0; i < n; i++) {
        ValueType type = u.getNextFormat().getValueType();
        if (type == ValueType.NIL) {
          u.unpackNil();
          continue;
        }
        List<Key> keys = type == ValueType.ARRAY ? keys(in) : null;
        if (keys == null) {
          if (type != ValueType.ARRAY) {
            u.skipValue();
          }
          variant = true;
        } else if (i == 0) {
          first = keys;
        } else if (keys.size() != 1 || (later != null && !later.equals(keys.get(0)))) {
          variant = true;
        } else {
          later = keys.get(0);
        }
      }
      return true;
    }

    /**
     * Reads one block's extra keys and returns them if each is a key ({@link Key}: a non-empty
     * string, or a {@code (tag, string)} pair tagged {@code "lora"} or {@code "cache_salt"}, as a
     * vLLM that tags its keys sends them); else skips the rest of it and returns null.
     */
    private static @Nullable List<Key> keys(In in) throws IOException {
      MessageUnpacker u = in.u;
      int n = in.length(u.unpackArrayHeader(), "extra_keys entry");
      List<Key> out = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        ValueType type = u.getNextFormat().getValueType();
        Key k = null;
        if (out != null && type == ValueType.STRING) {
          String v = in.text();
          k = v.isEmpty() ? null : new Key(null, v);
        } else if (out != null && type == ValueType.ARRAY) {
          k = taggedKey(in);
        } else {
          u.skipValue();
        }
        if (k == null) {
          out = null;
        } else if (out != null) {
          out.add(k);
        }
      }
      return out;
    }

    /** Reads an array: a {@code ("lora" | "cache_salt", non-empty string)} pair, else null. */
    private static @Nullable Key taggedKey(In in) throws IOException {
      MessageUnpacker u = in.u;
      int n = in.length(u.unpackArrayHeader(), "extra_keys element");
      String tag = null;
      String value = null;
      for (int i = 0; i < n; i++) {
        if (n == 2 && u.getNextFormat().getValueType() == ValueType.STRING) {
          String v = in.text();
          if (i == 0) {
            tag = v;
          } else {
            value = v;
          }
        } else {
          u.skipValue();
        }
      }
      boolean known = Key.LORA.equals(tag) || Key.SALT.equals(tag);
      return known && value != null && !value.isEmpty() ? new Key(tag, value) : null;
    }

    /**
     * The cache salt of a {@code BlockStored}, from block 0's extra keys after the adapter name
     * (vLLM orders them LoRA name, multimodal keys, salt): exactly one string left is the salt.
     * Sets {@link #variant} when the extra keys hold anything else: an adapter name other than
     * {@code lora_name} (or one without it), more keys, or later blocks keyed by something other
     * than the adapter name; an adapter with {@code lora_id} but no {@code lora_name} (an older
     * vLLM, which hashed the id) is a variant too.
     */
    private @Nullable String salt() {
      String fromKeys = extraKeysSalt();
      if (metaSalt == null) {
        return fromKeys;
      }
      if (fromKeys != null && !fromKeys.equals(metaSalt)) {
        variant = true; // two different salts: which one the engine hashed is not known
        return null;
      }
      return metaSalt;
    }

    private @Nullable String extraKeysSalt() {
      if (loraId && lora == null) {
        variant = true;
      }
      if (later != null && !later.names(Key.LORA, lora)) {
        variant = true;
      }
      List<Key> keys = first;
      if (keys == null || keys.isEmpty()) {
        return null;
      }
      if (lora != null) {
        if (!keys.get(0).names(Key.LORA, lora)) {
          variant = true;
          return null;
        }
        keys = keys.subList(1, keys.size());
      }
      if (keys.size() > 1 || (keys.size() == 1 && !keys.get(0).may(Key.SALT))) {
        variant = true;
        return null;
      }
      return keys.isEmpty() ? null : keys.get(0).value();
    }

    @Nullable KvEvent toEvent(Counts counts) {
      if (tag == null) {
        counts.malformed++;
        return null;
      }
      if (fieldsOf(tag) == null) {
        counts.unknownTypes++;
        return null;
      }
      if (wrongType) {
        counts.malformed++;
        return null;
      }
      if (groupKind != null) {
        boolean full = FULL_ATTENTION.contains(groupKind);
        if (groupIdx != NOT_INT) {
          counts.groups.learn(groupIdx, full);
        }
        if (!full) {
          counts.skippedGroups++;
          return null;
        }
      }
      if (tag.equals(REMOVED) && groupIdx != NOT_INT && counts.groups.partial(groupIdx)) {
        counts.skippedGroups++; // a sliding-window group's copy of the hash
        return null;
      }
      String salt = tag.equals(STORED) ? salt() : null;
      if ((variant || (salt != null && hasParent)) && tag.equals(STORED)) {
        counts.skippedVariants++;
        return null;
      }
      try {
        return switch (tag) {
          case STORED ->
              new BlockStored(
                  required(hashes),
                  hasParent ? Long.valueOf(parent) : null,
                  tokens == null ? new int[0] : tokens,
                  blockSize,
                  medium,
                  salt,
                  lora);
          case REMOVED -> new BlockRemoved(required(hashes), medium);
          default -> AllBlocksCleared.INSTANCE;
        };
      } catch (IllegalArgumentException e) { // empty hashes, bad block size, length mismatch
        counts.malformed++;
        return null;
      }
    }

    private static long[] required(long @Nullable [] hashes) {
      if (hashes == null) {
        throw new IllegalArgumentException("no block_hashes");
      }
      return hashes;
    }
  }

  // ---- values

  private static double number(MessageUnpacker u) throws IOException, DecodeException {
    ValueType t = u.getNextFormat().getValueType();
    if (t == ValueType.FLOAT) {
      return u.unpackDouble();
    }
    if (t == ValueType.INTEGER) {
      return u.unpackBigInteger().doubleValue();
    }
    throw new DecodeException("ts is not a number", null);
  }

  private static @Nullable Integer nullableInt(In in) throws IOException, DecodeException {
    if (in.u.tryUnpackNil()) {
      return null;
    }
    long v = in.intValue();
    if (v == NOT_INT) {
      throw new DecodeException("data_parallel_rank is not an int", null);
    }
    return (int) v;
  }

  /**
   * The unpacker of one payload with its size and a scratch array: reads ints and hashes as
   * primitives and strings without msgpack-core's string decoder (see the class comment).
   */
  private static final class In {
    private static final int SCRATCH = 64;
    final MessageUnpacker u;
    final int size;
    private final byte[] scratch = new byte[SCRATCH];

    /** The value of the last {@link #hash()} that returned true. */
    long hash;

    In(MessageUnpacker u, int size) {
      this.u = u;
      this.size = size;
    }

    /** Checks a header's element count against the bytes left: each element takes at least one. */
    int header(int n) throws DecodeException {
      if (n < 0 || n > left()) {
        throw new DecodeException(
            "a header claims " + n + " elements at offset " + u.getTotalReadBytes(), null);
      }
      return n;
    }

    /** The same check inside an event, where it fails the whole payload as an IOException. */
    int length(int n, String what) throws IOException {
      if (n < 0 || n > left()) {
        throw new IOException(what + " claims " + n + " elements");
      }
      return n;
    }

    private long left() {
      return size - u.getTotalReadBytes();
    }

    String key() throws IOException, DecodeException {
      if (u.getNextFormat().getValueType() != ValueType.STRING) {
        throw new DecodeException("a map key is not a string", null);
      }
      return text();
    }

    /** A string, or null (value skipped) if it is not one. */
    @Nullable String string() throws IOException {
      if (u.getNextFormat().getValueType() != ValueType.STRING) {
        u.skipValue();
        return null;
      }
      return text();
    }

    /**
     * The string that comes next (its type checked by the caller): one of {@link #KNOWN} if it
     * equals it, else a new string (malformed UTF-8 replaced, as msgpack-core does by default).
     */
    String text() throws IOException {
      int n = length(u.unpackRawStringHeader(), "a string");
      if (n > SCRATCH) {
        return new String(u.readPayload(n), StandardCharsets.UTF_8);
      }
      u.readPayload(scratch, 0, n);
      for (int i = 0; i < KNOWN_UTF8.length; i++) {
        byte[] k = KNOWN_UTF8[i];
        if (k.length == n && Arrays.equals(k, 0, n, scratch, 0, n)) {
          return KNOWN[i];
        }
      }
      return new String(scratch, 0, n, StandardCharsets.UTF_8);
    }

    /** An int, or {@link #NOT_INT} (value skipped) if it is not an integer in int range. */
    long intValue() throws IOException {
      MessageFormat f = u.getNextFormat();
      if (f.getValueType() != ValueType.INTEGER) {
        u.skipValue();
        return NOT_INT;
      }
      long v = f == MessageFormat.UINT64 ? uint64() : u.unpackLong(); // no other format exceeds
      return v == (int) v && (f != MessageFormat.UINT64 || v >= 0) ? v : NOT_INT;
    }

    /** A uint64 (format checked by the caller) as its bit pattern, 0xcf and 8 bytes big-endian. */
    private long uint64() throws IOException {
      u.readPayload(scratch, 0, 9); // unpackLong refuses values above Long.MAX_VALUE
      return bigEndian(scratch, 1, 8);
    }

    /**
     * Reads a hash into {@link #hash}: int, uint64 (bit pattern kept) or bytes (last 8, big-endian,
     * as {@link EngineHashes#fromBytes}); false (value skipped) if neither.
     */
    boolean hash() throws IOException {
      MessageFormat f = u.getNextFormat();
      if (f == MessageFormat.UINT64) {
        hash = uint64();
        return true;
      }
      if (f.getValueType() == ValueType.INTEGER) {
        hash = u.unpackLong();
        return true;
      }
      if (f.getValueType() == ValueType.BINARY) {
        int n = length(u.unpackBinaryHeader(), "a binary hash");
        if (n > SCRATCH) {
          hash = EngineHashes.fromBytes(u.readPayload(n));
        } else {
          u.readPayload(scratch, 0, n);
          int from = Math.max(0, n - 8);
          hash = bigEndian(scratch, from, n - from);
        }
        return true;
      }
      u.skipValue();
      return false;
    }

    private static long bigEndian(byte[] b, int from, int count) {
      long v = 0;
      for (int i = from; i < from + count; i++) {
        v = (v << 8) | (b[i] & 0xFF);
      }
      return v;
    }

    /**
     * The length of the array that comes next, checked against the bytes left; -1 (and the value
     * skipped) if it is not an array.
     */
    private int arrayLength(String field) throws IOException {
      if (u.getNextFormat().getValueType() != ValueType.ARRAY) {
        u.skipValue();
        return -1;
      }
      return length(u.unpackArrayHeader(), field);
    }

    long @Nullable [] hashes() throws IOException {
      int n = arrayLength("block_hashes");
      if (n < 0) {
        return null;
      }
      long[] out = new long[n];
      boolean ok = true;
      for (int i = 0; i < n; i++) {
        boolean read = hash();
        ok &= read;
        out[i] = read ? hash : 0;
      }
      return ok ? out : null;
    }

    int @Nullable [] tokenIds() throws IOException {
      int n = arrayLength("token_ids");
      if (n < 0) {
        return null;
      }
      int[] out = new int[n];
      boolean ok = true;
      for (int i = 0; i < n; i++) {
        long v = intValue();
        ok &= v != NOT_INT && v >= 0;
        out[i] = v == NOT_INT ? 0 : (int) v;
      }
      return ok ? out : null;
    }
  }
}
