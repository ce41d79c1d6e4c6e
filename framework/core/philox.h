#pragma once
// Philox4x32-10 (Salmon et al. 2011, as in Random123, TensorFlow and cuRAND) and the conversions of its
// 32-bit words into uniform and normal samples exactly as TensorFlow's random_distributions.h does.
// A block of four words is a pure function of (counter, key), so every element of a random tensor can be
// computed on its own, on any thread or device. C++17 and EMBER_HOST_DEVICE: CUDA kernels include it.
#include <cmath>
#include <cstdint>

#include "framework/core/host_device.h"

namespace ember::philox {

// Four 32-bit words: a counter going in, a block of random bits coming out.
struct Uint4 {
  uint32_t v[4];
};
// The two 32-bit words of a key.
struct Key2 {
  uint32_t v[2];
};

// The 128-bit counter (lo, hi) as four words, least significant first (TF's layout).
EMBER_HOST_DEVICE Uint4 make_counter(uint64_t lo, uint64_t hi) {
  return Uint4{{static_cast<uint32_t>(lo), static_cast<uint32_t>(lo >> 32), static_cast<uint32_t>(hi),
                static_cast<uint32_t>(hi >> 32)}};
}
// A 64-bit key as two words, least significant first.
EMBER_HOST_DEVICE Key2 make_key(uint64_t key) {
  return Key2{{static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)}};
}

// The high and low halves of the 64-bit product a * b.
EMBER_HOST_DEVICE void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
#if defined(__CUDA_ARCH__)
  lo = a * b;
  hi = __umulhi(a, b);
#else
  const uint64_t p = static_cast<uint64_t>(a) * b;
  lo = static_cast<uint32_t>(p);
  hi = static_cast<uint32_t>(p >> 32);
#endif
}

// One Philox round: two multiplications, the key folded into the swapped high halves.
EMBER_HOST_DEVICE Uint4 single_round(const Uint4& c, const Key2& k) {
  uint32_t hi0, lo0, hi1, lo1;
  mulhilo(0xD2511F53u, c.v[0], hi0, lo0);
  mulhilo(0xCD9E8D57u, c.v[2], hi1, lo1);
  return Uint4{{hi1 ^ c.v[1] ^ k.v[0], lo1, hi0 ^ c.v[3] ^ k.v[1], lo0}};
}

// Philox4x32-10: ten rounds, the key bumped by the Weyl constants between rounds.
EMBER_HOST_DEVICE Uint4 philox4x32_10(Uint4 counter, Key2 key) {
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      key.v[0] += 0x9E3779B9u;
      key.v[1] += 0xBB67AE85u;
    }
    counter = single_round(counter, key);
  }
  return counter;
}

// The block at 128-bit counter (lo, hi) under a 64-bit key.
EMBER_HOST_DEVICE Uint4 block(uint64_t key, uint64_t counter_lo, uint64_t counter_hi = 0) {
  return philox4x32_10(make_counter(counter_lo, counter_hi), make_key(key));
}

// The blocks at counters (first + i, 0) for i in [0, n), n <= kBatchBlocks, under a 64-bit key: block()'s words,
// block i's at words[4 i .. 4 i + 3], computed a round at a time for all of them (the host's batch form: the
// compiler vectorises each round's loop, its 32x32->64-bit products included, where block() by block runs one
// chain at a time).
constexpr int kBatchBlocks = 64;
inline void blocks(uint64_t key, uint64_t first, int n, uint32_t* words) {
  uint32_t c0[kBatchBlocks], c1[kBatchBlocks], c2[kBatchBlocks], c3[kBatchBlocks];
  for (int i = 0; i < n; ++i) {
    const uint64_t lo = first + static_cast<uint64_t>(i);
    c0[i] = static_cast<uint32_t>(lo);
    c1[i] = static_cast<uint32_t>(lo >> 32);
    c2[i] = 0;
    c3[i] = 0;
  }
  Key2 k = make_key(key);
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k.v[0] += 0x9E3779B9u;
      k.v[1] += 0xBB67AE85u;
    }
    const uint32_t k0 = k.v[0], k1 = k.v[1];
    for (int i = 0; i < n; ++i) {  // single_round, lane by lane
      const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0[i];
      const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2[i];
      const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1[i] ^ k0;
      const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3[i] ^ k1;
      c1[i] = static_cast<uint32_t>(p1);
      c3[i] = static_cast<uint32_t>(p0);
      c0[i] = n0;
      c2[i] = n2;
    }
  }
  for (int i = 0; i < n; ++i) {
    words[4 * i] = c0[i];
    words[4 * i + 1] = c1[i];
    words[4 * i + 2] = c2[i];
    words[4 * i + 3] = c3[i];
  }
}

// TF's Uint32ToFloat: 23 random mantissa bits under exponent 0 give [1, 2); minus 1 gives [0, 1).
// (1 + m 2^-23) - 1 is exact, so it equals m 2^-23.
EMBER_HOST_DEVICE float uint32_to_float(uint32_t x) { return static_cast<float>(x & 0x7fffffu) * (1.0f / 8388608.0f); }

// TF's Uint64ToDouble: 20 bits of x0 and 32 of x1 as the mantissa of a double in [0, 1).
EMBER_HOST_DEVICE double uint64_to_double(uint32_t x0, uint32_t x1) {
  const uint64_t man = (static_cast<uint64_t>(x0 & 0xfffffu) << 32) | x1;
  return static_cast<double>(man) * (1.0 / 4503599627370496.0);
}

// TF's Uint16ToHalf / Uint16ToGfloat16: 10 (float16) or 7 (bfloat16) mantissa bits, as an exact float.
EMBER_HOST_DEVICE float uint32_to_half_uniform(uint32_t x) { return static_cast<float>(x & 0x3ffu) * (1.0f / 1024.0f); }
EMBER_HOST_DEVICE float uint32_to_bfloat16_uniform(uint32_t x) {
  return static_cast<float>(x & 0x7fu) * (1.0f / 128.0f);
}

// TF's BoxMullerFloat: two words to two standard normal floats (2*pi*u is formed in double, as TF's
// `2.0f * M_PI * u` promotes).
EMBER_HOST_DEVICE void box_muller_float(uint32_t x0, uint32_t x1, float& f0, float& f1) {
  const float epsilon = 1.0e-7f;
  float u1 = uint32_to_float(x0);
  if (u1 < epsilon) u1 = epsilon;
  const float v1 = static_cast<float>(2.0 * 3.14159265358979323846 * static_cast<double>(uint32_to_float(x1)));
  const float u2 = std::sqrt(-2.0f * std::log(u1));
  f0 = std::sin(v1) * u2;
  f1 = std::cos(v1) * u2;
}

// TF's BoxMullerDouble: four words to two standard normal doubles.
EMBER_HOST_DEVICE void box_muller_double(uint32_t x0, uint32_t x1, uint32_t x2, uint32_t x3, double& d0,
                                         double& d1) {
  const double epsilon = 1.0e-7;
  double u1 = uint64_to_double(x0, x1);
  if (u1 < epsilon) u1 = epsilon;
  const double v1 = 2 * 3.14159265358979323846 * uint64_to_double(x2, x3);
  const double u2 = std::sqrt(-2.0 * std::log(u1));
  d0 = std::sin(v1) * u2;
  d1 = std::cos(v1) * u2;
}

}  // namespace ember::philox
