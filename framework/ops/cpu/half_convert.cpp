#include "framework/ops/cpu/half_convert.h"
#include "framework/ops/cpu/half_round.h"

#include <cstring>

#include "framework/core/parallel.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define EMBER_HALF_CONVERT_X86 1
#include <immintrin.h>
#endif

namespace ember::cpu {

namespace {

// Scalar loops: the tails of the vector loops, and every element on CPUs without AVX2.
template <class From, class To>
void hc_scalar(const From* src, To* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<To>(src[i]);
}
// A round trip through T (round_through), element by element: narrow's and widen's scalar conversions.
template <class T>
void hc_round_scalar(const float* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(static_cast<T>(src[i]));
}

#ifdef EMBER_HALF_CONVERT_X86
// The intrinsics live in functions compiled for their instruction set (GCC's target attribute), called
// only after __builtin_cpu_supports said yes; the rest of the library keeps the build's baseline flags.
#define EMBER_AVX512 __attribute__((target("avx512f")))
#define EMBER_AVX2 __attribute__((target("avx2,f16c")))

EMBER_AVX512 void hc_widen_f16_avx512(const half* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  hc_scalar(src + i, dst + i, n - i);
}

EMBER_AVX512 void hc_narrow_f16_avx512(const float* src, half* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  hc_scalar(src + i, dst + i, n - i);
}

EMBER_AVX512 void hc_widen_bf16_avx512(const bfloat16* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
    _mm512_storeu_si512(dst + i, _mm512_slli_epi32(h, 16));
  }
  hc_scalar(src + i, dst + i, n - i);
}

// Eigen's float_to_bfloat16_rtne on 16 lanes: add 0x7fff plus the kept lsb, keep the high half; a NaN
// becomes the quiet NaN 0x7fc0 with its sign.
// (The bfloat16 bits in each lane's low half.)
EMBER_AVX512 inline __m512i hc_round_bf16_avx512(__m512i u) {
  const __m512i hi = _mm512_srli_epi32(u, 16);
  const __m512i r = _mm512_srli_epi32(
      _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(hi, _mm512_set1_epi32(1)))), 16);
  const __mmask16 nan =
      _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_mov_epi32(r, nan,
                               _mm512_or_si512(_mm512_and_si512(hi, _mm512_set1_epi32(0x8000)), _mm512_set1_epi32(0x7fc0)));
}

EMBER_AVX512 void hc_narrow_bf16_avx512(const float* src, bfloat16* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i r = hc_round_bf16_avx512(_mm512_loadu_si512(src + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm512_cvtepi32_epi16(r));
  }
  hc_scalar(src + i, dst + i, n - i);
}

EMBER_AVX2 void hc_widen_f16_avx2(const half* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  hc_scalar(src + i, dst + i, n - i);
}

EMBER_AVX2 void hc_narrow_f16_avx2(const float* src, half* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  hc_scalar(src + i, dst + i, n - i);
}

EMBER_AVX2 void hc_widen_bf16_avx2(const bfloat16* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_slli_epi32(h, 16));
  }
  hc_scalar(src + i, dst + i, n - i);
}

EMBER_AVX2 inline __m256i hc_round_bf16_avx2(__m256i u) {
  const __m256i hi = _mm256_srli_epi32(u, 16);
  const __m256i r = _mm256_srli_epi32(
      _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(hi, _mm256_set1_epi32(1)))), 16);
  // |u| > inf (as integers) is a NaN; the signed compare is exact since the sign bit is cleared.
  const __m256i nan =
      _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  const __m256i qnan = _mm256_or_si256(_mm256_and_si256(hi, _mm256_set1_epi32(0x8000)), _mm256_set1_epi32(0x7fc0));
  return _mm256_blendv_epi8(r, qnan, nan);
}

EMBER_AVX2 void hc_narrow_bf16_avx2(const float* src, bfloat16* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i lo = hc_round_bf16_avx2(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
    const __m256i hi = hc_round_bf16_avx2(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i + 8)));
    // packus works per 128-bit lane (lo0 hi0 lo1 hi1); the permute restores element order.
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8));
  }
  hc_scalar(src + i, dst + i, n - i);
}

// Round trips (round_through): the narrowing's instructions, then the widening's, on each vector.
EMBER_AVX512 void hc_round_f16_avx512(const float* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_loadu_ps(src + i),
                                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
  hc_round_scalar<half>(src + i, dst + i, n - i);
}

EMBER_AVX512 void hc_round_bf16_through_avx512(const float* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_si512(dst + i, _mm512_slli_epi32(hc_round_bf16_avx512(_mm512_loadu_si512(src + i)), 16));
  hc_round_scalar<bfloat16>(src + i, dst + i, n - i);
}

EMBER_AVX2 void hc_round_f16_avx2(const float* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(src + i),
                                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
  hc_round_scalar<half>(src + i, dst + i, n - i);
}

EMBER_AVX2 void hc_round_bf16_through_avx2(const float* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i r = hc_round_bf16_avx2(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_slli_epi32(r, 16));
  }
  hc_round_scalar<bfloat16>(src + i, dst + i, n - i);
}

enum class HalfIsa { kScalar, kAvx2, kAvx512 };

HalfIsa hc_isa() {
  static const HalfIsa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return HalfIsa::kAvx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) return HalfIsa::kAvx2;
    return HalfIsa::kScalar;
  }();
  return isa;
}
#endif

// Runs the fastest conversion the CPU has on [0, n), on the calling thread.
template <class From, class To, class F512, class F2>
void hc_convert(const From* src, To* dst, int64_t n, [[maybe_unused]] F512 avx512, [[maybe_unused]] F2 avx2) {
#ifdef EMBER_HALF_CONVERT_X86
  switch (hc_isa()) {
    case HalfIsa::kAvx512: return avx512(src, dst, n);
    case HalfIsa::kAvx2: return avx2(src, dst, n);
    case HalfIsa::kScalar: break;
  }
#endif
  hc_scalar(src, dst, n);
}

// The same, split over the pool.
template <class From, class To, class F512, class F2>
void hc_run(const From* src, To* dst, int64_t n, F512 avx512, F2 avx2) {
  parallel_for(n, kParallelGrain,
               [&](int64_t b, int64_t e) { hc_convert(src + b, dst + b, e - b, avx512, avx2); });
}

// A round trip through T on the calling thread: the vector loops where the CPU has them, else the scalar one.
template <class T>
void hc_round(const float* src, float* dst, int64_t n, [[maybe_unused]] void (*avx512)(const float*, float*, int64_t),
              [[maybe_unused]] void (*avx2)(const float*, float*, int64_t)) {
#ifdef EMBER_HALF_CONVERT_X86
  switch (hc_isa()) {
    case HalfIsa::kAvx512: return avx512(src, dst, n);
    case HalfIsa::kAvx2: return avx2(src, dst, n);
    case HalfIsa::kScalar: break;
  }
#endif
  hc_round_scalar<T>(src, dst, n);
}

}  // namespace

void round_through_serial(const float* src, float* dst, int64_t n, DType dtype) {
#ifdef EMBER_HALF_CONVERT_X86
  if (dtype == DType::Float16) return hc_round<half>(src, dst, n, hc_round_f16_avx512, hc_round_f16_avx2);
  hc_round<bfloat16>(src, dst, n, hc_round_bf16_through_avx512, hc_round_bf16_through_avx2);
#else
  if (dtype == DType::Float16) return hc_round<half>(src, dst, n, nullptr, nullptr);
  hc_round<bfloat16>(src, dst, n, nullptr, nullptr);
#endif
}

void round_through(const float* src, float* dst, int64_t n, DType dtype) {
  parallel_for(n, kParallelGrain,
               [&](int64_t b, int64_t e) { round_through_serial(src + b, dst + b, e - b, dtype); });
}

#ifdef EMBER_HALF_CONVERT_X86
void widen(const half* src, float* dst, int64_t n) { hc_run(src, dst, n, hc_widen_f16_avx512, hc_widen_f16_avx2); }
void widen(const bfloat16* src, float* dst, int64_t n) {
  hc_run(src, dst, n, hc_widen_bf16_avx512, hc_widen_bf16_avx2);
}
void narrow(const float* src, half* dst, int64_t n) { hc_run(src, dst, n, hc_narrow_f16_avx512, hc_narrow_f16_avx2); }
void narrow(const float* src, bfloat16* dst, int64_t n) {
  hc_run(src, dst, n, hc_narrow_bf16_avx512, hc_narrow_bf16_avx2);
}
void widen_serial(const half* src, float* dst, int64_t n) {
  hc_convert(src, dst, n, hc_widen_f16_avx512, hc_widen_f16_avx2);
}
void narrow_serial(const float* src, half* dst, int64_t n) {
  hc_convert(src, dst, n, hc_narrow_f16_avx512, hc_narrow_f16_avx2);
}
void widen_serial(const bfloat16* src, float* dst, int64_t n) {
  hc_convert(src, dst, n, hc_widen_bf16_avx512, hc_widen_bf16_avx2);
}
void narrow_serial(const float* src, bfloat16* dst, int64_t n) {
  hc_convert(src, dst, n, hc_narrow_bf16_avx512, hc_narrow_bf16_avx2);
}
const char* half_convert_isa() {
  switch (hc_isa()) {
    case HalfIsa::kAvx512: return "avx512";
    case HalfIsa::kAvx2: return "avx2";
    case HalfIsa::kScalar: break;
  }
  return "scalar";
}
#else
void widen(const half* src, float* dst, int64_t n) { hc_run(src, dst, n, nullptr, nullptr); }
void widen(const bfloat16* src, float* dst, int64_t n) { hc_run(src, dst, n, nullptr, nullptr); }
void narrow(const float* src, half* dst, int64_t n) { hc_run(src, dst, n, nullptr, nullptr); }
void narrow(const float* src, bfloat16* dst, int64_t n) { hc_run(src, dst, n, nullptr, nullptr); }
void widen_serial(const half* src, float* dst, int64_t n) { hc_scalar(src, dst, n); }
void narrow_serial(const float* src, half* dst, int64_t n) { hc_scalar(src, dst, n); }
void widen_serial(const bfloat16* src, float* dst, int64_t n) { hc_scalar(src, dst, n); }
void narrow_serial(const float* src, bfloat16* dst, int64_t n) { hc_scalar(src, dst, n); }
const char* half_convert_isa() { return "scalar"; }
#endif

}  // namespace ember::cpu

// Unity builds compile this file together with others: keep its macros to itself.
#undef EMBER_AVX512
#undef EMBER_AVX2
#undef EMBER_HALF_CONVERT_X86
