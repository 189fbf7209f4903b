package dev.prefixrouter.bench.sim;

/**
 * CPython's {@code random.Random(seed)} for small non-negative integer seeds: MT19937 seeded with
 * {@code init_by_array([seed])}, {@code random()} built from two 32-bit outputs, and {@code
 * choices(population, weights, k=1)} as {@code bisect_right(cumsum(w), random() * total)}. Used to
 * replay the published gateway's simulation draw for draw.
 */
final class PyRandom {
  private final int[] mt = new int[624];
  private int index = 624;

  PyRandom(long seed) {
    if (seed < 0 || seed > 0xFFFFFFFFL) {
      throw new IllegalArgumentException("seed must be a 32-bit non-negative integer: " + seed);
    }
    initByArray(new int[] {(int) seed});
  }

  private void initGenrand(int s) {
    mt[0] = s;
    for (int i = 1; i < 624; i++) {
      mt[i] = 1812433253 * (mt[i - 1] ^ (mt[i - 1] >>> 30)) + i;
    }
    index = 624;
  }

  private void initByArray(int[] key) {
    initGenrand(19650218);
    int i = 1;
    int j = 0;
    for (int k = Math.max(624, key.length); k > 0; k--) {
      mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >>> 30)) * 1664525)) + key[j] + j;
      i++;
      j++;
      if (i >= 624) {
        mt[0] = mt[623];
        i = 1;
      }
      if (j >= key.length) {
        j = 0;
      }
    }
    for (int k = 623; k > 0; k--) {
      mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >>> 30)) * 1566083941)) - i;
      i++;
      if (i >= 624) {
        mt[0] = mt[623];
        i = 1;
      }
    }
    mt[0] = 0x80000000;
  }

  private int next32() {
    if (index >= 624) {
      for (int k = 0; k < 624; k++) {
        int y = (mt[k] & 0x80000000) | (mt[(k + 1) % 624] & 0x7fffffff);
        mt[k] = mt[(k + 397) % 624] ^ (y >>> 1) ^ ((y & 1) != 0 ? 0x9908b0df : 0);
      }
      index = 0;
    }
    int y = mt[index++];
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y;
  }

  /** A double in [0, 1) with 53 random bits, as CPython's {@code random()}. */
  double random() {
    long a = (next32() & 0xFFFFFFFFL) >>> 5;
    long b = (next32() & 0xFFFFFFFFL) >>> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
  }

  /** {@code choices(range(len(weights)), weights=weights, k=1)[0]}. */
  int choice(double[] weights) {
    double[] cum = new double[weights.length];
    double total = 0;
    for (int i = 0; i < weights.length; i++) {
      total += weights[i];
      cum[i] = total;
    }
    double x = random() * total;
    int lo = 0;
    int hi = weights.length - 1;
    while (lo < hi) { // bisect_right over cum[0..n-1) with hi = n - 1
      int mid = (lo + hi) >>> 1;
      if (x < cum[mid]) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo;
  }

  /** {@code randrange(n)} for small n (CPython's {@code _randbelow} with getrandbits). */
  int randrange(int n) {
    int k = 32 - Integer.numberOfLeadingZeros(n); // n.bit_length()
    while (true) {
      int r = next32() >>> (32 - k);
      if (r < n) {
        return r;
      }
    }
  }
}
