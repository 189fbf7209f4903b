package dev.prefixrouter.radix;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * CityHash64, version 1.1 (Geoff Pike and Jyrki Alakuijala, Google, 2011), of a run of bytes read
 * as little-endian words: the values zero-allocation-hashing's {@code
 * LongHashFunction.city_1_1().hashBytes(b, off, len)} returns, and so, over ids written
 * little-endian, the token keys used since session 5 (keys shared through Redis must not change
 * between versions; {@code CityHash64Test} pins this class to that library on every path).
 *
 * <p>Written here because the library reads through {@code sun.misc.Unsafe}, whose memory-access
 * methods Java 24+ warn about in every application that embeds the router and later releases remove
 * (JEP 471/498), while hash4j, the maintained library without {@code Unsafe}, has no CityHash and
 * its functions hash a 16-token block 2.2× slower ({@code benchmarks/README.md}, "Hashing"). Words
 * are read with a little-endian {@link VarHandle} view of the array (one bounds-checked load each).
 *
 * <p>Stateless; thread-safe; no allocation.
 */
final class CityHash64 {
  private static final long K0 = 0xc3a5c85c97cb3127L;
  private static final long K1 = 0xb492b66fbe98f273L;
  private static final long K2 = 0x9ae16a3b2f90404fL;
  private static final long KMUL = 0x9ddfea08eb382d69L;
  private static final VarHandle LONG_LE =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle INT_LE =
      MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

  private CityHash64() {}

  /**
   * The hash of {@code b[off, off + len)}.
   *
   * @throws IndexOutOfBoundsException if the range is not within {@code b}
   */
  static long hash(byte[] b, int off, int len) {
    if (off < 0 || len < 0 || off > b.length - len) {
      throw new IndexOutOfBoundsException(
          "bytes [" + off + ", " + off + " + " + len + ") of " + b.length);
    }
    if (len <= 32) {
      if (len <= 16) {
        return len0to16(b, off, len);
      }
      return len17to32(b, off, len);
    }
    if (len <= 64) {
      return len33to64(b, off, len);
    }
    return longer(b, off, len);
  }

  /** The 8 bytes at {@code b[off + at]}, little-endian. */
  private static long fetch64(byte[] b, int off, int at) {
    return (long) LONG_LE.get(b, off + at);
  }

  private static long fetch32(byte[] b, int off, int at) {
    return (int) INT_LE.get(b, off + at) & 0xFFFF_FFFFL;
  }

  private static long shiftMix(long v) {
    return v ^ (v >>> 47);
  }

  private static long hashLen16(long u, long v, long mul) {
    long x = (u ^ v) * mul;
    x ^= x >>> 47;
    long y = (v ^ x) * mul;
    y ^= y >>> 47;
    return y * mul;
  }

  private static long hashLen16(long u, long v) {
    return hashLen16(u, v, KMUL);
  }

  private static long len0to16(byte[] a, int off, int len) {
    if (len >= 8) {
      long mul = K2 + len * 2L;
      long x = fetch64(a, off, 0) + K2;
      long y = fetch64(a, off, len - 8);
      long c = Long.rotateRight(y, 37) * mul + x;
      long d = (Long.rotateRight(x, 25) + y) * mul;
      return hashLen16(c, d, mul);
    }
    if (len >= 4) {
      long mul = K2 + len * 2L;
      long x = fetch32(a, off, 0);
      return hashLen16(len + (x << 3), fetch32(a, off, len - 4), mul);
    }
    if (len > 0) {
      int x = a[off] & 0xFF;
      int y = a[off + (len >>> 1)] & 0xFF;
      int z = a[off + len - 1] & 0xFF;
      long lo = (x + (y << 8)) & 0xFFFF_FFFFL;
      long hi = (len + (z << 2)) & 0xFFFF_FFFFL;
      return shiftMix(lo * K2 ^ hi * K0) * K2;
    }
    return K2;
  }

  private static long len17to32(byte[] a, int off, int len) {
    long mul = K2 + len * 2L;
    long x = fetch64(a, off, 0) * K1;
    long y = fetch64(a, off, 8);
    long c = fetch64(a, off, len - 8) * mul;
    long d = fetch64(a, off, len - 16) * K2;
    return hashLen16(
        Long.rotateRight(x + y, 43) + Long.rotateRight(c, 30) + d,
        x + Long.rotateRight(y + K2, 18) + c,
        mul);
  }

  private static long len33to64(byte[] a, int off, int len) {
    long mul = K2 + len * 2L;
    long p = fetch64(a, off, 0) * K2;
    long q = fetch64(a, off, 8);
    long c = fetch64(a, off, len - 24);
    long d = fetch64(a, off, len - 32);
    long e = fetch64(a, off, 16) * K2;
    long f = fetch64(a, off, 24) * 9;
    long g = fetch64(a, off, len - 8);
    long h = fetch64(a, off, len - 16) * mul;
    long u = Long.rotateRight(p + g, 43) + (Long.rotateRight(q, 30) + c) * 9;
    long v = ((p + g) ^ d) + f + 1;
    long w = Long.reverseBytes((u + v) * mul) + h;
    long x = Long.rotateRight(e + f, 42) + c;
    long y = (Long.reverseBytes((v + w) * mul) + g) * mul;
    long z = e + f + c;
    p = Long.reverseBytes((x + z) * mul + y) + q;
    q = shiftMix((z + p) * mul + d + h) * mul;
    return q + x;
  }

  /**
   * First half of the weak hash of the 32 bytes at {@code b[off + at]} with seeds {@code a} and
   * {@code b} (CityHash's {@code WeakHashLen32WithSeeds}; wrapping sums, so the grouping is free).
   */
  private static long weakFirst(byte[] b, int off, int at, long a) {
    return a
        + fetch64(b, off, at)
        + fetch64(b, off, at + 8)
        + fetch64(b, off, at + 16)
        + fetch64(b, off, at + 24);
  }

  /** Second half of the weak hash {@link #weakFirst} starts. */
  private static long weakSecond(byte[] b, int off, int at, long a, long seed) {
    long w = a + fetch64(b, off, at);
    return Long.rotateRight(seed + w + fetch64(b, off, at + 24), 21)
        + Long.rotateRight(w + fetch64(b, off, at + 8) + fetch64(b, off, at + 16), 44)
        + w;
  }

  /** More than 64 bytes: the tail first, then 64-byte chunks with 56 bytes of state. */
  private static long longer(byte[] a, int off, int end) {
    long len = end;
    long x = fetch64(a, off, end - 40);
    long y = fetch64(a, off, end - 16) + fetch64(a, off, end - 56);
    long z = hashLen16(fetch64(a, off, end - 48) + len, fetch64(a, off, end - 24));
    // v and w: the pairs (first, second) of the weak 32-byte hashes
    long v1 = weakFirst(a, off, end - 64, len);
    long v2 = weakSecond(a, off, end - 64, len, z);
    long w1 = weakFirst(a, off, end - 32, y + K1);
    long w2 = weakSecond(a, off, end - 32, y + K1, x);
    x = x * K1 + fetch64(a, off, 0);
    int chunks = (end - 1) >>> 6; // the whole 64-byte chunks before the tail
    for (int k = 0, s = 0; k < chunks; k++, s += 64) {
      x = Long.rotateRight(x + y + v1 + fetch64(a, off, s + 8), 37) * K1;
      y = Long.rotateRight(y + v2 + fetch64(a, off, s + 48), 42) * K1;
      x ^= w2;
      y += v1 + fetch64(a, off, s + 40);
      z = Long.rotateRight(z + w1, 33) * K1;
      long nv1 = weakFirst(a, off, s, v2 * K1);
      long nv2 = weakSecond(a, off, s, v2 * K1, x + w1);
      long nw1 = weakFirst(a, off, s + 32, z + w2);
      long nw2 = weakSecond(a, off, s + 32, z + w2, y + fetch64(a, off, s + 16));
      v1 = nv1;
      v2 = nv2;
      w1 = nw1;
      w2 = nw2;
      long t = z;
      z = x;
      x = t;
    }
    return hashLen16(hashLen16(v1, w1) + shiftMix(y) * K1 + z, hashLen16(v2, w2) + x);
  }
}
