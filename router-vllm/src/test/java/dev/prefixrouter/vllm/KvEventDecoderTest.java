package dev.prefixrouter.vllm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.AllBlocksCleared;
import dev.prefixrouter.api.BlockRemoved;
import dev.prefixrouter.api.BlockStored;
import dev.prefixrouter.api.EngineHashes;
import java.io.IOException;
import java.math.BigInteger;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

class KvEventDecoderTest {
  private static final BigInteger BIG = new BigInteger("15760518052499183552"); // > Long.MAX_VALUE
  private static final long BIG_BITS = -2686226021210368064L;

  /**
   * Written by hand from vLLM's msgspec definitions (array_like, tagged), the reference doc's
   * example batch: {@code [1.5, [["BlockStored", [15760518052499183552], nil, [0..15], 16, nil,
   * "GPU", nil, [nil], 0, "full_attention", nil]], 0]}.
   */
  private static final String GOLDEN_ARRAY =
      "93" // batch: array of 3
          + "cb3ff8000000000000" // ts 1.5
          + "91" // events: array of 1
          + "9c" // event: array of 12
          + "ab426c6f636b53746f726564" // "BlockStored"
          + "91cfdab89baa7b5857c0" // block_hashes: [uint64 0xdab89baa7b5857c0]
          + "c0" // parent: nil
          + "dc0010000102030405060708090a0b0c0d0e0f" // token_ids: 16 ids
          + "10" // block_size 16
          + "c0" // lora_id
          + "a3475055" // medium "GPU"
          + "c0" // lora_name
          + "91c0" // extra_keys [nil]
          + "00" // group_idx 0
          + "ae66756c6c5f617474656e74696f6e" // "full_attention"
          + "c0" // sliding window
          + "00"; // data_parallel_rank 0

  private static final BlockStored EXPECTED =
      new BlockStored(new long[] {BIG_BITS}, null, Batches.tokens(0, 16), 16, "GPU");

  @Test
  void decodesTheHandWrittenArrayGolden() throws Exception {
    KvEventDecoder.Batch b = KvEventDecoder.decode(HexFormat.of().parseHex(GOLDEN_ARRAY));
    assertThat(b.timestamp()).isEqualTo(1.5);
    assertThat(b.dataParallelRank()).isZero();
    assertThat(b.events()).containsExactly(EXPECTED);
    assertThat(EngineHashes.toUnsignedString(((BlockStored) b.events().get(0)).blockHash(0)))
        .isEqualTo("15760518052499183552");
    assertThat(b.unknownFields() + b.malformedEvents() + b.unknownEventTypes()).isZero();
  }

  @Test
  void mapFormDecodesToTheSameEvents() throws Exception {
    byte[] map =
        Batches.batch(
            1.5,
            p -> Batches.storedMap(p, new Object[] {BIG}, null, Batches.tokens(0, 16)),
            p -> Batches.removedMap(p, BIG),
            p -> p.packMapHeader(1).packString("type").packString("AllBlocksCleared"));
    byte[] array =
        Batches.batch(
            1.5,
            p -> Batches.storedArray(p, new Object[] {BIG}, null, Batches.tokens(0, 16)),
            p -> Batches.removedArray(p, BIG),
            p -> p.packArrayHeader(1).packString("AllBlocksCleared"));
    var expected =
        java.util.List.of(
            EXPECTED, new BlockRemoved(new long[] {BIG_BITS}, "GPU"), AllBlocksCleared.INSTANCE);
    assertThat(KvEventDecoder.decode(map).events()).isEqualTo(expected);
    assertThat(KvEventDecoder.decode(array).events()).isEqualTo(expected);
  }

  @Test
  void hashesMayBeSignedIntsOrDigestBytes() throws Exception {
    byte[] digest = new byte[32];
    for (int i = 0; i < 32; i++) {
      digest[i] = (byte) i;
    }
    byte[] payload =
        Batches.batch(
            0, p -> Batches.storedArray(p, new Object[] {digest, 7L}, -5L, Batches.tokens(0, 8)));
    BlockStored s = (BlockStored) KvEventDecoder.decode(payload).events().get(0);
    assertThat(s.blockHash(0))
        .isEqualTo(EngineHashes.fromBytes(digest))
        .isEqualTo(0x18191a1b1c1d1e1fL);
    assertThat(s.blockHash(1)).isEqualTo(7L);
    assertThat(s.parentBlockHash()).isEqualTo(-5L);
    assertThat(s.blockSize()).isEqualTo(4);
  }

  @Test
  void olderShorterLayoutsDecodeWithMissingFieldsAbsent() throws Exception {
    // the initial schema: tag + 5 fields, and a batch without the dp rank
    try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
      p.packArrayHeader(2).packDouble(2.0).packArrayHeader(2);
      p.packArrayHeader(6).packString("BlockStored").packArrayHeader(1).packLong(9);
      p.packLong(8).packArrayHeader(2).packInt(1).packInt(2).packInt(2).packNil();
      p.packArrayHeader(2).packString("BlockRemoved").packArrayHeader(1).packLong(9);
      KvEventDecoder.Batch b = KvEventDecoder.decode(p.toByteArray());
      assertThat(b.dataParallelRank()).isNull();
      assertThat(b.events())
          .containsExactly(
              new BlockStored(new long[] {9}, 8L, new int[] {1, 2}, 2, null), BlockRemoved.of(9));
    }
  }

  @Test
  void unknownFieldsAndTypesAreSkippedAndCounted() throws Exception {
    byte[] payload =
        Batches.batch(
            0,
            p -> {
              p.packArrayHeader(14); // two trailing fields from a newer version
              p.packString("BlockRemoved").packArrayHeader(1).packLong(1).packString("GPU");
              p.packInt(0);
              for (int i = 0; i < 10; i++) {
                p.packNil();
              }
            },
            p ->
                p.packMapHeader(3)
                    .packString("type")
                    .packString("BlockRemoved")
                    .packString("event_version")
                    .packInt(2)
                    .packString("block_hashes")
                    .packArrayHeader(1)
                    .packLong(2),
            p -> p.packArrayHeader(2).packString("BlockMoved").packInt(1),
            p -> p.packMapHeader(1).packString("type").packString("Snapshot"));
    KvEventDecoder.Batch b = KvEventDecoder.decode(payload);
    assertThat(b.events())
        .containsExactly(new BlockRemoved(new long[] {1}, "GPU"), BlockRemoved.of(2));
    assertThat(b.unknownFields()).isEqualTo(11);
    assertThat(b.unknownEventTypes()).isEqualTo(2);
  }

  @Test
  void slidingWindowGroupsAndMalformedEventsAreSkipped() throws Exception {
    byte[] payload =
        Batches.batch(
            0,
            p ->
                p.packMapHeader(3)
                    .packString("type")
                    .packString("BlockRemoved")
                    .packString("block_hashes")
                    .packArrayHeader(1)
                    .packLong(1)
                    .packString("kv_cache_spec_kind")
                    .packString("sliding_window"),
            p -> p.packArrayHeader(2).packString("BlockRemoved").packString("not a list"),
            p -> Batches.storedArray(p, new Object[] {1L, 2L}, null, Batches.tokens(0, 3)),
            p -> Batches.removedArray(p, 3L));
    KvEventDecoder.Batch b = KvEventDecoder.decode(payload);
    assertThat(b.skippedGroups()).isEqualTo(1);
    assertThat(b.malformedEvents()).as("a wrong type, then 3 tokens for 2 blocks").isEqualTo(2);
    assertThat(b.events()).containsExactly(new BlockRemoved(new long[] {3}, "GPU"));
  }

  private static void groupStore(MessageBufferPacker p, long hash, int group, String kind)
      throws IOException {
    p.packMapHeader(6).packString("type").packString("BlockStored");
    p.packString("block_hashes").packArrayHeader(1).packLong(hash);
    p.packString("token_ids").packArrayHeader(2).packInt(1).packInt(2);
    p.packString("block_size").packInt(2);
    p.packString("group_idx").packInt(group);
    p.packString("kv_cache_spec_kind").packString(kind);
  }

  private static void groupRemoval(MessageBufferPacker p, long hash, int group) throws IOException {
    p.packMapHeader(3).packString("type").packString("BlockRemoved");
    p.packString("block_hashes").packArrayHeader(1).packLong(hash);
    p.packString("group_idx").packInt(group);
  }

  /**
   * A hybrid model reports the same block hash in its full-attention and its sliding-window group;
   * the sliding-window copy goes long before the other. Its removal (which carries the group but
   * not the kind) used to take the full-attention block out of the index.
   */
  @Test
  void aRemovalInASlidingWindowGroupLearntFromItsStoresIsSkipped() throws Exception {
    KvEventDecoder.Groups groups = new KvEventDecoder.Groups();
    KvEventDecoder.Batch stores =
        KvEventDecoder.decode(
            Batches.batch(
                0,
                p -> groupStore(p, 7, 0, "full_attention"),
                p -> groupStore(p, 7, 1, "sliding_window")),
            groups);
    assertThat(stores.events()).hasSize(1);
    assertThat(stores.skippedGroups()).isEqualTo(1);
    KvEventDecoder.Batch removals =
        KvEventDecoder.decode(
            Batches.batch(1, p -> groupRemoval(p, 7, 1), p -> groupRemoval(p, 7, 0)), groups);
    assertThat(removals.skippedGroups()).isEqualTo(1);
    assertThat(removals.events()).containsExactly(BlockRemoved.of(7));
    // a group later reported as full attention (a new engine behind the endpoint) counts again
    KvEventDecoder.decode(Batches.batch(2, p -> groupStore(p, 8, 1, "full_attention")), groups);
    assertThat(KvEventDecoder.decode(Batches.batch(3, p -> groupRemoval(p, 8, 1)), groups).events())
        .containsExactly(BlockRemoved.of(8));
  }

  @Test
  void unnamedAdaptersAndExtraKeyBlocksAreSkippedNotConfirmedAsBaseBlocks() throws Exception {
    int[] tokens = Batches.tokens(0, 16);
    byte[] payload =
        Batches.batch(
            0,
            p -> stored(p, "lora_id", q -> q.packInt(3), tokens), // an adapter with no name
            p -> stored(p, "lora_name", q -> q.packString("sql-adapter"), tokens),
            p ->
                stored(
                    p,
                    "extra_keys",
                    q -> q.packArrayHeader(1).packArrayHeader(2).packString("mm-hash").packInt(0),
                    tokens),
            p -> stored(p, "extra_keys", q -> q.packArrayHeader(1).packNil(), tokens),
            p -> stored(p, "lora_id", MessageBufferPacker::packNil, tokens));
    KvEventDecoder.Batch b = KvEventDecoder.decode(payload);
    assertThat(b.skippedVariants()).isEqualTo(2);
    assertThat(b.events())
        .hasSize(3)
        .allMatch(e -> e instanceof BlockStored s && s.cacheSalt() == null);
    assertThat(b.events())
        .extracting(e -> ((BlockStored) e).loraName())
        .containsExactly("sql-adapter", null, null);
  }

  @Test
  void anAdaptersBlocksCarryItsNameAndASaltAfterIt() throws Exception {
    int[] tokens = Batches.tokens(0, 32); // two blocks of 16
    byte[] payload =
        Batches.batch(
            0,
            // vLLM: every block keyed by the adapter name, block 0 also by the salt
            p ->
                storedAdapter(
                    p,
                    "sql",
                    q ->
                        q.packArrayHeader(2)
                            .packArrayHeader(2)
                            .packString("sql")
                            .packString("salt-1")
                            .packArrayHeader(1)
                            .packString("sql"),
                    tokens),
            p -> // lora_id next to lora_name; no salt
            storedAdapter(
                    p,
                    "sql",
                    q -> {
                      q.packArrayHeader(2).packArrayHeader(1).packString("sql");
                      q.packArrayHeader(1).packString("sql");
                    },
                    tokens),
            p -> // another adapter's name hashed: not what lora_name says
            storedAdapter(
                    p,
                    "sql",
                    q -> q.packArrayHeader(2).packArrayHeader(1).packString("chat").packNil(),
                    tokens),
            p -> // a later block keyed by something else than the adapter name
            storedAdapter(
                    p,
                    "sql",
                    q -> {
                      q.packArrayHeader(2).packArrayHeader(1).packString("sql");
                      q.packArrayHeader(1).packString("img-7");
                    },
                    tokens),
            p -> // adapter name, then two more keys (a multimodal id and a salt)
            storedAdapter(
                    p,
                    "sql",
                    q ->
                        q.packArrayHeader(2)
                            .packArrayHeader(3)
                            .packString("sql")
                            .packString("img-7")
                            .packString("salt-1")
                            .packNil(),
                    tokens));
    KvEventDecoder.Batch b = KvEventDecoder.decode(payload);
    assertThat(b.skippedVariants()).isEqualTo(3);
    assertThat(b.events())
        .containsExactly(
            new BlockStored(new long[] {7, 8}, null, tokens, 16, null, "salt-1", "sql"),
            new BlockStored(new long[] {7, 8}, null, tokens, 16, null, null, "sql"));
  }

  @Test
  void taggedAdapterAndSaltKeysAreReadToo() throws Exception {
    int[] tokens = Batches.tokens(0, 32);
    byte[] payload =
        Batches.batch(
            0,
            p ->
                storedAdapter(
                    p,
                    "sql",
                    q -> {
                      q.packArrayHeader(2).packArrayHeader(2);
                      q.packArrayHeader(2).packString("lora").packString("sql");
                      q.packArrayHeader(2).packString("cache_salt").packString("salt-1");
                      q.packArrayHeader(1).packArrayHeader(2).packString("lora").packString("sql");
                    },
                    tokens),
            p -> // the adapter's name tagged as a salt: not an adapter key
            storedAdapter(
                    p,
                    "sql",
                    q -> {
                      q.packArrayHeader(2).packArrayHeader(1);
                      q.packArrayHeader(2).packString("cache_salt").packString("sql");
                      q.packNil();
                    },
                    tokens),
            p -> // an unknown tag after the adapter name
            storedAdapter(
                    p,
                    "sql",
                    q -> {
                      q.packArrayHeader(2).packArrayHeader(2).packString("sql");
                      q.packArrayHeader(2).packString("mm").packString("x");
                      q.packNil();
                    },
                    tokens),
            p -> // a tagged salt alone, no adapter
            stored(
                    p,
                    "extra_keys",
                    q -> {
                      q.packArrayHeader(1).packArrayHeader(1);
                      q.packArrayHeader(2).packString("cache_salt").packString("salt-2");
                    },
                    Batches.tokens(0, 16)));
    KvEventDecoder.Batch b = KvEventDecoder.decode(payload);
    assertThat(b.skippedVariants()).isEqualTo(2);
    assertThat(b.events())
        .containsExactly(
            new BlockStored(new long[] {7, 8}, null, tokens, 16, null, "salt-1", "sql"),
            new BlockStored(new long[] {7}, null, Batches.tokens(0, 16), 16, null, "salt-2"));
  }

  /** A map-form BlockStored of two blocks of an adapter (lora_id 3, lora_name) with extra keys. */
  private static void storedAdapter(MessageBufferPacker p, String lora, Value extra, int[] tokens)
      throws IOException {
    p.packMapHeader(7).packString("type").packString("BlockStored");
    p.packString("block_hashes").packArrayHeader(2).packLong(7).packLong(8);
    p.packString("token_ids").packArrayHeader(tokens.length);
    for (int t : tokens) {
      p.packInt(t);
    }
    p.packString("block_size").packInt(tokens.length / 2);
    p.packString("lora_id").packInt(3);
    p.packString("lora_name").packString(lora);
    p.packString("extra_keys");
    extra.pack(p);
  }

  @Test
  void aCacheSaltAloneInTheFirstBlocksExtraKeysIsCarriedToTheIndex() throws Exception {
    int[] tokens = Batches.tokens(0, 16);
    byte[] payload =
        Batches.batch(
            0,
            p ->
                stored(
                    p,
                    "extra_keys",
                    q -> q.packArrayHeader(2).packArrayHeader(1).packString("salt-1").packNil(),
                    tokens),
            p -> // a salt on a later block: vLLM never sends it, so it is not guessed at
            stored(
                    p,
                    "extra_keys",
                    q -> q.packArrayHeader(2).packNil().packArrayHeader(1).packString("salt-1"),
                    tokens),
            p -> // a salt and a multimodal hash: more than the salt was hashed
            stored(
                    p,
                    "extra_keys",
                    q ->
                        q.packArrayHeader(1)
                            .packArrayHeader(2)
                            .packString("salt-1")
                            .packString("x"),
                    tokens));
    KvEventDecoder.Batch b = KvEventDecoder.decode(payload);
    assertThat(b.skippedVariants()).isEqualTo(2);
    assertThat(b.events())
        .singleElement()
        .isInstanceOfSatisfying(
            BlockStored.class, s -> assertThat(s.cacheSalt()).isEqualTo("salt-1"));
  }

  interface Value {
    void pack(MessageBufferPacker p) throws IOException;
  }

  /** A map-form BlockStored of one block with one more field. */
  private static void stored(MessageBufferPacker p, String field, Value value, int[] tokens)
      throws IOException {
    p.packMapHeader(5).packString("type").packString("BlockStored");
    p.packString("block_hashes").packArrayHeader(1).packLong(7);
    p.packString("token_ids").packArrayHeader(tokens.length);
    for (int t : tokens) {
      p.packInt(t);
    }
    p.packString("block_size").packInt(tokens.length);
    p.packString(field);
    value.pack(p);
  }

  @Test
  void anOuterMapIsReadToo() throws Exception {
    try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
      p.packMapHeader(3).packString("events").packArrayHeader(1);
      p.packArrayHeader(1).packString("AllBlocksCleared");
      p.packString("ts").packDouble(3.0).packString("attn_dp_rank").packInt(2);
      KvEventDecoder.Batch b = KvEventDecoder.decode(p.toByteArray());
      assertThat(b.events()).containsExactly(AllBlocksCleared.INSTANCE);
      assertThat(b.dataParallelRank()).isEqualTo(2);
      assertThat(b.timestamp()).isEqualTo(3.0);
    }
  }

  @Test
  void garbageIsADecodeExceptionWithoutAllocatingWhatHeadersClaim() throws IOException {
    assertThatThrownBy(() -> KvEventDecoder.decode(new byte[0]))
        .isInstanceOf(KvEventDecoder.DecodeException.class);
    assertThatThrownBy(() -> KvEventDecoder.decode("hello".getBytes()))
        .isInstanceOf(KvEventDecoder.DecodeException.class);
    // an array header claiming 2^32-1 elements in a 10-byte payload
    assertThatThrownBy(
            () -> KvEventDecoder.decode(HexFormat.of().parseHex("93cb3ff8000000000000dd")))
        .isInstanceOf(KvEventDecoder.DecodeException.class);
    assertThatThrownBy(
            () -> KvEventDecoder.decode(HexFormat.of().parseHex("92cb3ff800000000000091dcffff")))
        .isInstanceOf(KvEventDecoder.DecodeException.class);
    byte[] truncated =
        HexFormat.of().parseHex(GOLDEN_ARRAY.substring(0, GOLDEN_ARRAY.length() - 20));
    assertThatThrownBy(() -> KvEventDecoder.decode(truncated))
        .isInstanceOf(KvEventDecoder.DecodeException.class);
  }

  @Test
  void stringsOutsideTheFormatsOwnAndLongOnesDecodeAsSent() throws Exception {
    String medium = "disk-tier-" + "x".repeat(80); // longer than the decoder's scratch array
    String lora = "adapter-\u00e9\u4e2d"; // not one of the format's strings, multi-byte UTF-8
    try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
      p.packArrayHeader(2).packDouble(0).packArrayHeader(3);
      p.packMapHeader(5).packString("type").packString("BlockStored");
      p.packString("block_hashes").packArrayHeader(1).packLong(1);
      p.packString("token_ids").packArrayHeader(2).packInt(200_000).packInt(0);
      p.packString("block_size").packInt(2).packString("medium").packString(medium);
      p.packArrayHeader(3).packString("BlockRemoved").packArrayHeader(1).packLong(1);
      p.packString(lora);
      // a uint64 that fits an int is an int; one above Long.MAX_VALUE is not (block_size)
      p.packArrayHeader(5).packString("BlockStored").packArrayHeader(1).packLong(2).packNil();
      p.packArrayHeader(0).writePayload(HexFormat.of().parseHex("cf0000000000000007"));
      KvEventDecoder.Batch b = KvEventDecoder.decode(p.toByteArray());
      assertThat(b.events())
          .containsExactly(
              new BlockStored(new long[] {1}, null, new int[] {200_000, 0}, 2, medium),
              new BlockRemoved(new long[] {1}, lora),
              new BlockStored(new long[] {2}, null, new int[0], 7, null));
    }
    byte[] bigBlockSize;
    try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
      p.packArrayHeader(2).packDouble(0).packArrayHeader(1);
      p.packArrayHeader(5).packString("BlockStored").packArrayHeader(1).packLong(2).packNil();
      p.packArrayHeader(0).packBigInteger(BIG);
      bigBlockSize = p.toByteArray();
    }
    KvEventDecoder.Batch b = KvEventDecoder.decode(bigBlockSize);
    assertThat(b.events()).isEmpty();
    assertThat(b.malformedEvents()).isEqualTo(1);
  }

  @Test
  void stringAndBinaryHeadersClaimingMoreThanIsLeftFailWithoutAllocatingIt() {
    // events: [["BlockStored", [bin32 of 2^31-1 bytes]]] and [[str32 of 2^31-1 bytes]]
    String bin = "92cb000000000000000091" + "92ab426c6f636b53746f726564" + "91c67fffffff00";
    String str = "92cb00000000000000009191db7fffffff00";
    assertThatThrownBy(() -> KvEventDecoder.decode(HexFormat.of().parseHex(bin)))
        .isInstanceOf(KvEventDecoder.DecodeException.class);
    assertThatThrownBy(() -> KvEventDecoder.decode(HexFormat.of().parseHex(str)))
        .isInstanceOf(KvEventDecoder.DecodeException.class);
  }

  /** SGLang's BlockStoredWithMetadata in the array form: the metadata map in slot 7. */
  private static byte[] sglangArray(boolean withOther) throws IOException {
    MessageBufferPacker p = MessagePack.newDefaultBufferPacker();
    p.packArrayHeader(3).packDouble(1.0).packArrayHeader(1);
    p.packArrayHeader(8).packString("BlockStored").packArrayHeader(1).packLong(7).packNil();
    p.packArrayHeader(16);
    for (int i = 0; i < 16; i++) {
      p.packInt(i);
    }
    p.packInt(16).packNil().packString("GPU");
    p.packMapHeader(withOther ? 2 : 1).packString("cache_salt").packString("tenant-a");
    if (withOther) {
      p.packString("mm_hash").packString("abc");
    }
    p.packInt(0);
    return p.toByteArray();
  }

  /** The same event as a map, with a {@code metadata} key. */
  private static byte[] sglangMap(String salt) throws IOException {
    MessageBufferPacker q = MessagePack.newDefaultBufferPacker();
    q.packArrayHeader(3).packDouble(1.0).packArrayHeader(1);
    q.packMapHeader(8)
        .packString("type")
        .packString("BlockStored")
        .packString("block_hashes")
        .packArrayHeader(1)
        .packLong(7)
        .packString("parent_block_hash")
        .packNil()
        .packString("token_ids")
        .packArrayHeader(16);
    for (int i = 0; i < 16; i++) {
      q.packInt(i);
    }
    q.packString("block_size").packInt(16).packString("lora_id").packNil();
    q.packString("medium").packString("GPU");
    q.packString("metadata").packMapHeader(1).packString("cache_salt");
    if (salt == null) {
      q.packNil();
    } else {
      q.packString(salt);
    }
    q.packInt(0);
    return q.toByteArray();
  }

  /**
   * SGLang's salted store was dropped as malformed in the array form (its metadata read as
   * lora_name) and applied unsalted in the map form (metadata skipped): false hits for unsalted
   * requests.
   */
  @Test
  void sglangMetadataCarriesTheCacheSaltInBothForms() throws Exception {
    KvEventDecoder.Batch array = KvEventDecoder.decode(sglangArray(false));
    assertThat(array.malformedEvents()).isZero();
    assertThat(array.events()).hasSize(1);
    assertThat(((BlockStored) array.events().get(0)).cacheSalt()).isEqualTo("tenant-a");
    assertThat(((BlockStored) array.events().get(0)).loraName()).isNull();
    KvEventDecoder.Batch map = KvEventDecoder.decode(sglangMap("tenant-a"));
    assertThat(map.events()).hasSize(1);
    assertThat(((BlockStored) map.events().get(0)).cacheSalt()).isEqualTo("tenant-a");
    assertThat(map.unknownFields()).isZero();
    KvEventDecoder.Batch none = KvEventDecoder.decode(sglangMap(null));
    assertThat(((BlockStored) none.events().get(0)).cacheSalt()).as("a nil salt").isNull();
  }

  /** Metadata this decoder does not know may have been hashed: skipped, never applied without. */
  @Test
  void sglangMetadataWithAnUnknownEntryIsSkippedAsAVariant() throws Exception {
    KvEventDecoder.Batch b = KvEventDecoder.decode(sglangArray(true));
    assertThat(b.events()).isEmpty();
    assertThat(b.skippedVariants()).isEqualTo(1);
  }
}
