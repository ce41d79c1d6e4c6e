#pragma once
// Internal: float32 values rounded to a half type and back in one pass, with the bits of narrow then widen
// (half_convert.h), vectorised: a fused chain that only rounds (a cast to float16 or bfloat16 and back), as the
// graph compiler's store_half_in_float32 makes them, and each half-type step inside a fused chain.
#include <cstdint>

#include "framework/core/dtype.h"

namespace ember::cpu {

// dst[i] = widen(narrow(src[i])) in `dtype` (Float16 or BFloat16); dst may be src.
void round_through(const float* src, float* dst, int64_t n, DType dtype);
// The same on the calling thread (inside a kernel's own split).
void round_through_serial(const float* src, float* dst, int64_t n, DType dtype);

}  // namespace ember::cpu
