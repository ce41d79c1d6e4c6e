#pragma once
// ember::DType's values as a plain enum that kernel files (.cu) can use without Ember's C++20 headers.
#include <cstdint>

namespace ember::cuda {

// Same order and values as ember::DType (kernel_util.h static_asserts it).
enum class DT : uint8_t { F32, F64, F16, BF16, I32, I64, U8, Bool };

}  // namespace ember::cuda
