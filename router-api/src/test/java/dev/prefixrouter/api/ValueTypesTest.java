package dev.prefixrouter.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.prefixrouter.api.spi.Admission;
import dev.prefixrouter.api.spi.BlockHasher;
import dev.prefixrouter.api.spi.HealthPolicy;
import dev.prefixrouter.api.spi.PrefixIndex;
import dev.prefixrouter.api.spi.TenantLimiter;
import java.math.BigInteger;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ValueTypesTest {

  @Test
  void tokenPromptIsCopiedAndComparedByContent() {
    int[] ids = {1, 2, 3};
    Prompt.Tokens p = (Prompt.Tokens) Prompt.ofTokens(ids);
    ids[0] = 99;
    assertThat(p.token(0)).isEqualTo(1);
    p.toArray()[1] = 42;
    assertThat(p.token(1)).isEqualTo(2);
    assertThat(p).isEqualTo(Prompt.ofTokens(1, 2, 3)).hasSameHashCodeAs(Prompt.ofTokens(1, 2, 3));
    assertThat(p.estimatedTokens()).isEqualTo(3);
    int[] dst = new int[2];
    p.copyTo(1, dst, 0, 2);
    assertThat(dst).containsExactly(2, 3);
  }

  @Test
  void tokenPromptPutsIdsIntoABufferAsLittleEndianBytes() {
    Prompt.Tokens p = (Prompt.Tokens) Prompt.ofTokens(1, 0x0A0B0C0D, -1);
    byte[] bytes = new byte[12];
    java.nio.IntBuffer ints =
        java.nio.ByteBuffer.wrap(bytes).order(java.nio.ByteOrder.LITTLE_ENDIAN).asIntBuffer();
    ints.position(1);
    p.copyTo(1, ints, 2);
    assertThat(ints.position()).isEqualTo(3);
    assertThat(bytes).containsExactly(0, 0, 0, 0, 0x0D, 0x0C, 0x0B, 0x0A, 0xFF, 0xFF, 0xFF, 0xFF);
    assertThatThrownBy(() -> p.copyTo(2, ints.clear(), 2))
        .isInstanceOf(IndexOutOfBoundsException.class);
    assertThatThrownBy(() -> p.copyTo(0, ints.clear().position(2), 2))
        .isInstanceOf(java.nio.BufferOverflowException.class);
  }

  @Test
  void textAndChatPromptsEstimateTokens() {
    assertThat(Prompt.ofText("").estimatedTokens()).isZero();
    assertThat(Prompt.ofText("abcde").estimatedTokens()).isEqualTo(2);
    Prompt chat = Prompt.ofChat(ChatMessage.of("user", "abcd"), ChatMessage.of("assistant", ""));
    // (4 + 4 + 9) chars -> 5 tokens, + 4 per message
    assertThat(chat.estimatedTokens()).isEqualTo(5 + 8);
    assertThatThrownBy(() -> ChatMessage.of(" ", "x")).hasMessageContaining("role");
  }

  @Test
  void routeRequestValidatesAndCopies() {
    assertThatThrownBy(() -> RouteRequest.builder(" ", "m").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("tenant");
    assertThatThrownBy(() -> RouteRequest.builder(null, "m"))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("tenant");
    assertThatThrownBy(() -> RouteRequest.builder("t", "m").maxOutputTokens(-1))
        .hasMessageContaining("maxOutputTokens");
    assertThatThrownBy(() -> RouteRequest.builder("t", "m").ttftBudget(Duration.ZERO).build())
        .hasMessageContaining("ttftBudget");
    assertThatThrownBy(() -> RouteRequest.builder("t", "m").session("").build())
        .hasMessageContaining("sessionId");
    // every per-tenant and per-session structure holds these strings: their length is bounded
    assertThatThrownBy(() -> RouteRequest.builder("t".repeat(257), "m").build())
        .hasMessageContaining("tenant must be at most 256");
    assertThatThrownBy(() -> RouteRequest.builder("t", "m".repeat(257)).build())
        .hasMessageContaining("model must be at most 256");
    assertThatThrownBy(() -> RouteRequest.builder("t", "m").session("s".repeat(1025)).build())
        .hasMessageContaining("sessionId must be at most 1024");
    assertThat(
            RouteRequest.builder("t".repeat(256), "m").session("s".repeat(1024)).build().tenant())
        .hasSize(256);
    RouteRequest r =
        RouteRequest.builder("t", "m")
            .requireCapability("vision")
            .requireLabel("zone", "eu")
            .session("s")
            .requestId("r1")
            .build();
    assertThat(r.toBuilder().build()).isEqualTo(r);
    assertThatThrownBy(() -> r.requiredCapabilities().add("x"))
        .isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void backendValidatesEveryField() {
    assertThatThrownBy(() -> Backend.of("", "m")).hasMessageContaining("id");
    assertThatThrownBy(() -> Backend.of("a b", "m")).hasMessageContaining("whitespace");
    assertThatThrownBy(() -> Backend.of("a")).hasMessageContaining("at least one model");
    assertThatThrownBy(() -> Backend.of("a", "m").withCapacityBlocks(-1))
        .hasMessageContaining("capacityBlocks");
    assertThatThrownBy(() -> Backend.of("a", "m").withWeight(0)).hasMessageContaining("weight");
    assertThatThrownBy(() -> Backend.of("a", "m").withWeight(Double.NaN))
        .hasMessageContaining("weight");
    Backend b =
        Backend.of("a", "m").withModel("n").withCapability("vision").withLabel("zone", "eu");
    assertThat(b.models()).containsExactlyInAnyOrder("m", "n");
    assertThat(b.serves("n")).isTrue();
    assertThat(b.capabilities()).containsExactly("vision");
    assertThat(b.labels()).containsEntry("zone", "eu");
  }

  @Test
  void loadReportUsageAndFailureValidate() {
    assertThatThrownBy(() -> LoadReport.of(-1, 0, 0)).hasMessageContaining("running");
    assertThatThrownBy(() -> LoadReport.of(0, -1, 0)).hasMessageContaining("waiting");
    assertThatThrownBy(() -> LoadReport.of(0, 0, 1.5)).hasMessageContaining("kvUsage");
    assertThatThrownBy(() -> LoadReport.of(0, 0, Double.NaN)).hasMessageContaining("kvUsage");
    assertThatThrownBy(() -> LoadReport.of(0, 0, 0).withAge(Duration.ofSeconds(-1)))
        .hasMessageContaining("age");
    assertThatThrownBy(() -> new Usage(1, 0, 2)).hasMessageContaining("cachedTokens");
    assertThatThrownBy(() -> new Usage(4, 0, 2, false)).hasMessageContaining("not reported");
    assertThat(Usage.of(3, 4).cachedReported()).isFalse();
    assertThat(new Usage(3, 4, 0).cachedReported()).isTrue();
    assertThatThrownBy(() -> Usage.of(-1, 0)).hasMessageContaining("token counts");
    assertThat(Usage.of(3, 4).totalTokens()).isEqualTo(7);
    assertThat(Failure.httpStatus(503).kind()).isEqualTo(Failure.Kind.SERVER_ERROR);
    assertThat(Failure.httpStatus(429).countsAgainstBackend()).isFalse();
    assertThat(Failure.of(Failure.Kind.TIMEOUT).countsAgainstBackend()).isTrue();
    assertThatThrownBy(() -> Failure.httpStatus(200)).hasMessageContaining("200");
  }

  @Test
  void rejectedSaysWhetherRetryHelps() {
    RouteRequest r = RouteRequest.builder("t", "m").build();
    assertThat(new Rejected(r, RejectReason.RATE_LIMITED, Duration.ZERO, "x", null).retryable())
        .isTrue();
    assertThat(
            new Rejected(r, RejectReason.REQUEST_TOO_LARGE, Duration.ZERO, "x", null).retryable())
        .isFalse();
    assertThatThrownBy(
            () -> new Rejected(r, RejectReason.OVERLOADED, Duration.ofSeconds(-1), "x", null))
        .hasMessageContaining("retryAfter");
  }

  @Test
  void kvEventsValidateAndCopy() {
    long[] hashes = {1L, -2L};
    int[] tokens = new int[32];
    BlockStored s = new BlockStored(hashes, null, tokens, 16, "GPU");
    hashes[0] = 7;
    assertThat(s.blockHash(0)).isEqualTo(1L);
    assertThat(s.blockCount()).isEqualTo(2);
    assertThat(s).isEqualTo(new BlockStored(new long[] {1L, -2L}, null, new int[32], 16, "GPU"));
    assertThat(new BlockStored(new long[] {1}, 5L, new int[0], 16, "CPU").tokenCount()).isZero();
    assertThatThrownBy(() -> new BlockStored(new long[] {1}, null, new int[15], 16, null))
        .hasMessageContaining("tokenIds length 15");
    assertThatThrownBy(() -> new BlockStored(new long[0], null, new int[0], 16, null))
        .hasMessageContaining("blockHashes");
    assertThatThrownBy(() -> new BlockStored(new long[] {1}, null, new int[0], 0, null))
        .hasMessageContaining("blockSize");
    assertThat(BlockRemoved.of(1, 2)).isEqualTo(BlockRemoved.of(1, 2));
    assertThatThrownBy(BlockRemoved::of).hasMessageContaining("blockHashes");
  }

  @Test
  void storedTokensAsAPromptAreTheEventsOwnCopy() {
    int[] tokens = new int[32];
    tokens[3] = 42;
    BlockStored s = new BlockStored(new long[] {1L, -2L}, null, tokens, 16, "GPU");
    tokens[3] = 7; // the caller's array: neither the event nor its prompt follows it
    assertThat(s.tokens()).isEqualTo(Prompt.ofTokens(s.tokenIds()));
    Prompt.Tokens p = (Prompt.Tokens) s.tokens();
    assertThat(p.length()).isEqualTo(32);
    assertThat(p.token(3)).isEqualTo(42);
    p.toArray()[3] = 9; // a copy: the event keeps its ids
    assertThat(s.tokenId(3)).isEqualTo(42);
    assertThat(
            new BlockStored(new long[] {1}, 5L, new int[0], 16, "CPU").tokens().estimatedTokens())
        .isZero();
  }

  @Test
  void engineHashesKeepTheUnsignedBitPattern() {
    long h = EngineHashes.fromUnsignedString("15760518052499183552");
    assertThat(h).isEqualTo(-2686226021210368064L);
    assertThat(EngineHashes.toUnsignedString(h)).isEqualTo("15760518052499183552");
    assertThat(EngineHashes.fromBigInteger(new BigInteger("15760518052499183552"))).isEqualTo(h);
    assertThat(EngineHashes.fromBigInteger(BigInteger.valueOf(-5))).isEqualTo(-5L);
    assertThatThrownBy(() -> EngineHashes.fromBigInteger(BigInteger.ONE.shiftLeft(64)))
        .hasMessageContaining("range");
    assertThatThrownBy(() -> EngineHashes.fromUnsignedString("-1"))
        .hasMessageContaining("unsigned");
    byte[] digest = new byte[32];
    digest[24] = (byte) 0xda;
    digest[31] = (byte) 0xc0;
    assertThat(EngineHashes.fromBytes(digest)).isEqualTo(0xda000000000000c0L);
    assertThat(EngineHashes.fromBytes(new byte[] {1, 2})).isEqualTo(0x0102L);
  }

  @Test
  void admissionAndBuiltInsBehave() {
    assertThat(Admission.GRANTED.granted()).isTrue();
    assertThat(Admission.denied(5, "x").granted()).isFalse();
    assertThatThrownBy(() -> Admission.denied(-1, "x")).hasMessageContaining("retryAfterNanos");
    assertThat(TenantLimiter.unlimited().tryAcquire("t", Long.MAX_VALUE, 0).granted()).isTrue();
    assertThat(HealthPolicy.alwaysHealthy().state(0, 0)).isEqualTo(HealthState.CLOSED);
    assertThat(BlockHasher.keysOf(BlockHasher.none(), Prompt.ofTokens(new int[64]), 0)).isEmpty();
    int[] out = {9, 9};
    PrefixIndex.none().match(new long[] {1}, 1, new int[] {0, 1}, 2, out);
    assertThat(out).containsExactly(0, 0);
    assertThat(BlockHasher.none().seed("a")).isNotEqualTo(BlockHasher.none().seed("b"));
    assertThat(BlockHasher.none().seed("tenant")).isEqualTo(BlockHasher.none().seed("tenant"));
  }

  @Test
  void snapshotsAreImmutableAndDerived() {
    BackendSnapshot b =
        new BackendSnapshot(
            Backend.of("a", "m"),
            false,
            HealthState.CLOSED,
            1,
            0,
            0,
            null,
            null,
            Map.of(),
            4,
            100,
            25,
            Map.of("beta", 1.0),
            CacheAccuracy.NONE);
    assertThat(b.predictedHitRatio()).isEqualTo(0.25);
    assertThat(b.lruAgeNanos()).isEmpty();
    RouterSnapshot s =
        new RouterSnapshot(0, List.of(b), List.of(), IndexStats.EMPTY, 4, 0, Map.of());
    assertThat(s.backend("a")).contains(b);
    assertThat(s.backend("z")).isEmpty();
    assertThat(s.inFlight()).isEqualTo(1);
    assertThatThrownBy(() -> s.backends().clear())
        .isInstanceOf(UnsupportedOperationException.class);
    assertThat(new TenantSnapshot("t", 5, 10, 0).tenant()).isEqualTo("t");
    assertThat(new IndexStats(1, 2, 3, 4, Map.of("a", 2L), Map.of()).blocksPerBackend())
        .containsEntry("a", 2L);
  }

  @Test
  void mediaDigestsAreBoundedAndKeptByToBuilder() {
    RouteRequest r = RouteRequest.builder("t", "m").media("d1").media("d2").media("d1").build();
    assertThat(r.media()).containsExactlyInAnyOrder("d1", "d2");
    assertThat(r.toBuilder().build()).isEqualTo(r);
    assertThat(RouteRequest.builder("t", "m").build().media()).isEmpty();
    org.assertj.core.api.Assertions.assertThatThrownBy(
            () -> RouteRequest.builder("t", "m").media("").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("media digest must be 1..128");
    RouteRequest.Builder many = RouteRequest.builder("t", "m");
    for (int i = 0; i <= RouteRequest.MAX_MEDIA; i++) {
      many.media("d" + i);
    }
    org.assertj.core.api.Assertions.assertThatThrownBy(many::build)
        .hasMessageContaining("at most 64 media digests");
  }
}
