package dev.prefixrouter.api;

import java.math.BigInteger;
import java.util.Objects;

/**
 * Conversions for engine block hashes, which are unsigned 64-bit values on the wire (vLLM's default
 * {@code int.from_bytes(digest, "big") & (2**64 - 1)}) or raw digests. Java keeps the bit pattern
 * in a {@code long}.
 */
public final class EngineHashes {
  private static final BigInteger TWO_64 = BigInteger.ONE.shiftLeft(64);

  private EngineHashes() {}

  /** Parses a decimal unsigned 64-bit value, e.g. {@code "15760518052499183552"}. */
  public static long fromUnsignedString(String decimal) {
    Objects.requireNonNull(decimal, "decimal");
    try {
      return Long.parseUnsignedLong(decimal);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "not an unsigned 64-bit decimal hash: '" + decimal + "'", e);
    }
  }

  /** Accepts any value in {@code [-2^63, 2^64)} (signed or unsigned reading of the same bits). */
  public static long fromBigInteger(BigInteger value) {
    Objects.requireNonNull(value, "value");
    if (value.compareTo(TWO_64) >= 0 || value.compareTo(BigInteger.valueOf(Long.MIN_VALUE)) < 0) {
      throw new IllegalArgumentException("hash out of 64-bit range: " + value);
    }
    return value.longValue();
  }

  /**
   * A raw digest (e.g. 32-byte SHA-256) reduced as vLLM does for its integer form: the last 8 bytes
   * read big-endian, left-padded with zeros when shorter.
   */
  public static long fromBytes(byte[] digest) {
    Objects.requireNonNull(digest, "digest");
    long v = 0;
    int from = Math.max(0, digest.length - 8);
    for (int i = from; i < digest.length; i++) {
      v = (v << 8) | (digest[i] & 0xFF);
    }
    return v;
  }

  /** The unsigned decimal form, as the engine prints it. */
  public static String toUnsignedString(long hash) {
    return Long.toUnsignedString(hash);
  }
}
