package dev.prefixrouter.vllm;

/**
 * Strict UTF-8 validation (RFC 3629): no overlong forms ({@code C0 AF} for {@code /}), no encoded
 * surrogates ({@code ED A0 80}), nothing above U+10FFFF, no truncated sequence. Linear, no
 * allocation.
 */
final class Utf8 {
  private Utf8() {}

  /** The offset of the first byte that starts an invalid sequence, or -1 if all is valid. */
  static int firstInvalid(byte[] b) {
    int i = 0;
    int n = b.length;
    while (i < n) {
      int c = b[i];
      if (c >= 0) {
        i++;
        continue;
      }
      c &= 0xFF;
      int len;
      int min2; // the allowed range of the second byte (narrower than 80..BF for some leads)
      int max2;
      if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        min2 = 0x80;
        max2 = 0xBF;
      } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        min2 = c == 0xE0 ? 0xA0 : 0x80; // E0 80..9F would be overlong
        max2 = c == 0xED ? 0x9F : 0xBF; // ED A0..BF would be a surrogate
      } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        min2 = c == 0xF0 ? 0x90 : 0x80; // F0 80..8F would be overlong
        max2 = c == 0xF4 ? 0x8F : 0xBF; // F4 90.. would be above U+10FFFF
      } else {
        return i; // 80..C1 (continuation or overlong lead) and F5..FF never start a sequence
      }
      if (i + len > n) {
        return i;
      }
      int second = b[i + 1] & 0xFF;
      if (second < min2 || second > max2) {
        return i;
      }
      for (int k = 2; k < len; k++) {
        if ((b[i + k] & 0xC0) != 0x80) {
          return i;
        }
      }
      i += len;
    }
    return -1;
  }
}
