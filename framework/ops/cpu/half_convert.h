#pragma once
// Internal: conversions between float32 and the half types, all with static_cast's results (Eigen's
// round-to-nearest-even; NaN stays NaN):
// - whole buffers, vectorised with AVX-512 or AVX2 + F16C when the running CPU has them (chosen at run
//   time, so the library still runs on any x86-64) and split over the intra-op pool;
// - single elements, written so that the compiler vectorises the loops that use them.
#include <bit>
#include <cstdint>
#include <type_traits>

#include "framework/core/dtype.h"

namespace ember::cpu {

void widen(const half* src, float* dst, int64_t n);
void widen(const bfloat16* src, float* dst, int64_t n);
void narrow(const float* src, half* dst, int64_t n);
void narrow(const float* src, bfloat16* dst, int64_t n);
// The same on the calling thread, for loops that convert blocks inside their own split.
void widen_serial(const half* src, float* dst, int64_t n);
void widen_serial(const bfloat16* src, float* dst, int64_t n);
void narrow_serial(const float* src, half* dst, int64_t n);
void narrow_serial(const float* src, bfloat16* dst, int64_t n);

// The instruction set the buffer conversions use on this CPU: "avx512", "avx2" or "scalar".
const char* half_convert_isa();

// Element conversions, taking the element by reference: a loop that copies the 2-byte struct by value is one
// GCC's vectoriser rejects. Eigen's bfloat16 rounding also branches on NaN, which keeps loops scalar, so
// bfloat16 reads and writes the bits in place and selects instead. Float16 keeps Eigen's conversion (F16C's
// vcvtph2ps / vcvtps2ph where the build targets it): GCC turns the _Float16 and bit-twiddling alternatives
// into branches around functors such as relu's select, which is slower still.
namespace detail {
#if defined(__GNUC__)
typedef uint16_t __attribute__((may_alias)) bits16_alias;
#endif
}  // namespace detail

// x in its compute type (float for the half types).
template <class T>
inline compute_t<T> to_compute(const T& x) {
#if defined(__GNUC__)
  if constexpr (std::is_same_v<T, bfloat16>) {
    return std::bit_cast<float>(static_cast<uint32_t>(*reinterpret_cast<const detail::bits16_alias*>(&x)) << 16);
  }
#endif
  return static_cast<compute_t<T>>(x);
}

// v rounded to the storage type Out.
template <class Out, class V>
inline Out from_compute(V v) {
  if constexpr (std::is_same_v<Out, bfloat16> && std::is_same_v<V, float>) {
    const uint32_t u = std::bit_cast<uint32_t>(v);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const uint32_t quiet_nan = ((u >> 16) & 0x8000u) | 0x7fc0u;
    return std::bit_cast<bfloat16>(static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded));
  } else {
    return static_cast<Out>(v);
  }
}

// n elements in their compute type / rounded back, on the calling thread, for loops that convert rows or blocks
// inside their own parallel split: the half types through widen_serial / narrow_serial's vector code (float16's
// element conversion keeps a loop scalar, bfloat16's runs slower than the vector code); the other types element
// by element.
template <class T>
inline void to_compute_n(const T* src, compute_t<T>* dst, int64_t n) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    widen_serial(src, dst, n);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = to_compute(src[i]);
  }
}
template <class Out, class V>
inline void from_compute_n(const V* src, Out* dst, int64_t n) {
  if constexpr (std::is_same_v<Out, half> || std::is_same_v<Out, bfloat16>) {
    static_assert(std::is_same_v<V, float>, "half-type results are computed in float32");
    narrow_serial(src, dst, n);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = from_compute<Out>(src[i]);
  }
}

}  // namespace ember::cpu
